"""A full disk gives a typed, one-line error that says what is wrong, and loses nothing: a write
or an erasure that cannot be written is rolled back whole, and runs once space is freed.

The disk is a real one: a 2 MiB tmpfs mounted in a private mount namespace (``unshare``), filled
to the last byte by a file beside the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .test_cli_files import _works  # the probe its read-only mounts use

ROOT = str(Path(__file__).resolve().parent.parent)

ON_A_FULL_DISK = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {root!r})
    from store import MemoryStore
    from store.embedding import FakeEmbedder
    from inspector.cli.main import main as cli

    folder = sys.argv[1]
    path = os.path.join(folder, "memory.db")
    report = {{}}

    def attempt(name, call):
        try:
            call()
            report[name] = "done"
        except Exception as error:
            report[name] = [type(error).__module__, type(error).__name__, str(error)]

    s = MemoryStore.open(path, embedder=FakeEmbedder())
    s.remember("kept", user_id="alice")
    s.remember("to be erased", user_id="bob")
    filler = os.path.join(folder, "filler")
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"x" * 65536)
                handle.flush()
        except OSError:
            pass
    attempt("remember", lambda: s.remember("y" * 200_000, user_id="alice"))
    attempt("forget", lambda: s.forget(user_id="bob", actor="dpo"))
    report["counts_while_full"] = {{u: len(s.episodes(user_id=u).items) for u in ("alice", "bob")}}
    s.close()
    report["cli_status"] = cli(["forget", "--db", path, "--user", "bob", "--yes"])
    os.remove(filler)
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        attempt("forget_with_space", lambda: s.forget(user_id="bob", actor="dpo"))
        report["tenants_after"] = sorted(t.user_id for t in s.tenants())
    print("REPORT " + json.dumps(report))
    """
)


def tmpfs_prefix(folder: Path) -> tuple[str, ...]:
    prefix = (
        "unshare",
        "--mount",
        "sh",
        "-c",
        'mount --make-rprivate / && mount -t tmpfs -o size=2M tmpfs "$1" && shift && exec "$@"',
        "sh",
        str(folder),
    )
    if not _works([*prefix, "true"]):
        pytest.skip("needs `unshare --mount` and the right to mount (CAP_SYS_ADMIN) for a real full filesystem")
    return prefix


def test_a_full_disk_is_a_typed_error_and_loses_or_erases_nothing_by_halves(tmp_path):
    folder = tmp_path / "small-disk"
    folder.mkdir()
    result = subprocess.run(
        [*tmpfs_prefix(folder), sys.executable, "-c", ON_A_FULL_DISK.format(root=ROOT), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    line = next((x for x in result.stdout.splitlines() if x.startswith("REPORT ")), None)
    assert line is not None, result.stdout + result.stderr
    report = json.loads(line.removeprefix("REPORT "))
    for call in ("remember", "forget"):
        module, name, message = report[call]
        assert (module, name) == ("store.errors", "StoreFullError"), report[call]
        assert "disk is full" in message and "nothing was changed" in message and "\n" not in message
    assert report["counts_while_full"] == {"alice": 1, "bob": 1}  # nothing written, nothing half-erased
    # The command says so in one line and exits 2 (refused), not "unexpected error" (1).
    assert report["cli_status"] == 2
    errors = [x for x in result.stderr.splitlines() if x.startswith("memlens:")]
    assert errors and "disk is full" in errors[-1] and "unexpected" not in result.stderr
    assert report["forget_with_space"] == "done"
    assert report["tenants_after"] == ["alice"]
