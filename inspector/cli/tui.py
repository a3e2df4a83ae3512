"""The commands that show the inspector. The only CLI module that imports the UI, and only
inside the function that runs it, so every other command starts without Textual."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path


def _file(path: Path | str) -> Path | None:
    """The store's file, or None for a server URL or another library's memory (checked by its
    reader, which names what is wrong with it)."""
    from ..locations import foreign_scheme, is_server_url

    return None if is_server_url(path) or foreign_scheme(path) else Path(path)


def _require_existing(path: Path | str, builds: str) -> None:
    """A store file that does not exist is an error, and nothing is created there."""
    from store.errors import StoreNotFoundError

    file = _file(path)
    if file is not None and not file.exists():
        raise StoreNotFoundError(f"{path} does not exist; nothing was created (`{builds}` builds a demo store)")


def run_inspector(path: Path | str) -> int:
    from ..app import make_app

    _require_existing(path, "memlens demo")
    # Raised from a handler, Stopped would land inside Textual's event loop; the TUI keeps the default.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    app = make_app(path)
    app.run()
    return app.return_code or 0  # 1 after an unexpected error, which the app has said in one line


def cmd_open(args: argparse.Namespace) -> int:
    return run_inspector(args.db)


def cmd_serve(args: argparse.Namespace) -> int:
    """The inspector in a browser: textual-serve starts one inspector process per page opened,
    each in its own pseudo-terminal, and streams it over a websocket."""
    import shlex
    import sys

    from textual_serve.server import Server

    _require_existing(args.db, "memlens demo --no-open")
    file = _file(args.db)
    target = str(args.db) if file is None else str(file.resolve())
    command = f"{shlex.quote(sys.executable)} -m inspector.cli open {shlex.quote(target)}"
    where = "this machine only" if args.host in ("127.0.0.1", "localhost", "::1") else "every machine that can reach it"
    print(f"memlens: serving the inspector on {target} at http://{args.host}:{args.port} ({where}); Ctrl+C stops", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    Server(command, host=args.host, port=args.port, title=f"memlens {target}").serve()
    return 0
