"""The commands that show the inspector. The only CLI module that imports the UI, and only
inside the function that runs it, so every other command starts without Textual."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path


def run_inspector(path: Path | str) -> int:
    from store.errors import StoreNotFoundError

    from ..app import make_app
    from ..locations import foreign_scheme, is_server_url

    # Another library's memory is checked by its reader, which names what is wrong with it.
    if not is_server_url(path) and not foreign_scheme(path) and not Path(path).exists():
        raise StoreNotFoundError(f"{path} does not exist; nothing was created (`memlens demo` builds a demo store)")
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

    from store.errors import StoreNotFoundError

    from ..locations import foreign_scheme, is_server_url

    if not is_server_url(args.db) and not foreign_scheme(args.db) and not Path(args.db).exists():
        raise StoreNotFoundError(f"{args.db} does not exist; nothing was created (`memlens demo --no-open` builds a demo store)")
    target = str(args.db) if is_server_url(args.db) or foreign_scheme(args.db) else str(Path(args.db).resolve())
    command = f"{shlex.quote(sys.executable)} -m inspector.cli open {shlex.quote(target)}"
    where = "this machine only" if args.host in ("127.0.0.1", "localhost", "::1") else "every machine that can reach it"
    print(f"memlens: serving the inspector on {target} at http://{args.host}:{args.port} ({where}); Ctrl+C stops", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    Server(command, host=args.host, port=args.port, title=f"memlens {target}").serve()
    return 0
