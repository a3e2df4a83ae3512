"""The `memlens` command run as a real child process, forked from a parent that has already
imported it.

A fresh ``python -m inspector.cli`` costs about 1.1 s of CPU on the test machine, 0.7 s of it
importing SQLAlchemy, pydantic, numpy and the store, and the CLI tests start it some 150 times.
Here a server process imports those modules once, then forks a child per command. The child is
a process of its own, as ``python -m inspector.cli`` would be: its own working directory,
environment, standard streams (stdin from /dev/null, stdout and stderr to files the caller reads)
and exit status, the command run as ``__main__``, then the interpreter's ordinary shutdown
(threads joined, ``atexit`` handlers run, streams flushed). A server is kept per PYTHONPATH, and
started with the caller's, so the child's ``sys.path`` is what a fresh process would have (with
the model's stand-ins first, for a test not marked ``model``).

What a fork cannot show is a cold start's imports: the tests that hold those (the store-only
commands import no UI, the first frame imports no dialog) start a fresh interpreter themselves.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the commands import when they run (the parser, the store, the printing): the rest, and
# anything a command needs only now and then, the child imports itself.
WARM = (
    "inspector.cli.main",
    "store",
    "store.errors",
    "store.demo",
    "store.tiers.registry",
    "store.compat.loomflow_sqlite",
    "inspector.cli.stats",
    "rich.console",
    "rich.table",
    "rich.progress",
    "sqlalchemy.dialects.sqlite",
)


class _Server:
    def __init__(self, pythonpath: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.cli_process"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env
        )
        self.lock = threading.Lock()
        ready = self.process.stdout.readline()
        assert ready.strip() == "ready", f"the CLI fork server did not start: {ready!r}"

    def run(self, args: list[str], cwd: Path | None, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        with self.lock, tempfile.TemporaryDirectory(prefix="memlens-cli-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            request = {"args": args, "cwd": str(cwd or os.getcwd()), "env": env, "stdout": str(out), "stderr": str(err)}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            pid = int(self.process.stdout.readline())
            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                self.process.stdout.readline()
                raise subprocess.TimeoutExpired(["memlens", *args], timeout)
            code = int(self.process.stdout.readline())
            encoding = locale.getpreferredencoding(False)
            return subprocess.CompletedProcess(
                [sys.executable, "-m", "inspector.cli", *args],
                code,
                out.read_text(encoding=encoding),
                err.read_text(encoding=encoding),
            )

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


_servers: dict[str | None, _Server] = {}


def run_cli(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m inspector.cli ARGS`` in a child process, with ``env`` (default: this
    process's) and ``cwd``; stdout and stderr captured as text, as ``subprocess.run`` gives them."""
    env = dict(os.environ if env is None else env)
    pythonpath = env.get("PYTHONPATH")
    if pythonpath not in _servers:
        _servers[pythonpath] = _Server(pythonpath)
    return _servers[pythonpath].run([str(a) for a in args], cwd, env, timeout)


@atexit.register
def _close_servers() -> None:
    for server in _servers.values():
        server.close()
    _servers.clear()


# --- the server -----------------------------------------------------------------------------------


def _serve() -> dict:
    """Answer requests until stdin closes; returns (only in a forked child) the request to run."""
    import importlib

    for name in WARM:
        importlib.import_module(name)
    replies = sys.stdout
    print("ready", file=replies, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            return request
        print(pid, file=replies, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), file=replies, flush=True)
    sys.exit(0)


def _become(request: dict) -> None:
    """Turn this forked child into the command's process: its directory, environment, streams and
    argv, as ``python -m inspector.cli`` started there would have them."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # `python -m` puts the working directory first
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [str(ROOT / "inspector" / "cli" / "__main__.py"), *request["args"]]
    # Run as `__main__` only, as `-m` does: a copy under its own name beside it would make runpy
    # warn on stderr (the modules it imports stay warm).
    sys.modules.pop("inspector.cli.__main__", None)


if __name__ == "__main__":
    import runpy

    _become(_serve())
    runpy.run_module("inspector.cli", run_name="__main__", alter_sys=True)
