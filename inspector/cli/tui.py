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
    if app.return_code:
        return app.return_code  # 1 after an unexpected error, which the app has said in one line
    if app.failed:
        # The store was refused (damaged, another application's): the command says so and exits
        # 2, as every other command does for a refused store.
        import sys

        print(f"memlens: {app.failed}", file=sys.stderr)
        return 2
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    return run_inspector(args.db)


SERVED_LOCATION = "MEMLENS_SERVED_LOCATION"


def run_served_page() -> int:
    """One page's inspector, started by `memlens serve`: the store's location comes in the
    environment, not the command line, which every user of the machine can read (a PostgreSQL
    URL holds its password)."""
    import os

    from .parser import location

    return run_inspector(location(os.environ[SERVED_LOCATION]))


def _check_servable(path: Path | str) -> None:
    """Refuse before serving what every page would only fail to open (a folder, another
    application's file, a server that refuses the login). A foreign view is checked by its reader
    in each page: opening one here would make a copy of it for nothing."""
    from store import MemoryStore

    from ..locations import foreign_scheme

    _require_existing(path, "memlens demo --no-open")
    if foreign_scheme(path) is None:
        MemoryStore.open(path, read_only=True, create=False, embedder=None, check_model=False).close()


def cmd_serve(args: argparse.Namespace) -> int:
    """The inspector in a browser: textual-serve starts one inspector process per page opened,
    each in its own pseudo-terminal, and streams it over a websocket that only the served page
    may open (:mod:`inspector.serving`)."""
    import os
    import shlex
    import sys

    from ..locations import shown
    from ..serving import ServeGuard, is_loopback, make_server
    from .refusal import CommandLineError

    if not is_loopback(args.host) and not args.expose:
        raise CommandLineError(
            f"--host {args.host} would let every machine that can reach it read and erase this store's memory through the "
            "inspector; add --expose to mean that, or leave --host out to serve this machine only"
        )
    _check_servable(args.db)
    file = _file(args.db)
    target = str(args.db) if file is None else str(file.resolve())
    named = shown(args.db) if file is None else target  # a server URL is shown without its password
    os.environ[SERVED_LOCATION] = target
    command = f"{shlex.quote(sys.executable)} -m inspector.cli.served_page"
    where = "this machine only" if is_loopback(args.host) else "every machine that can reach it"
    print(f"memlens: serving the inspector on {named} at http://{args.host}:{args.port} ({where}); Ctrl+C stops", flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    guard = ServeGuard(args.host, args.port, max_sessions=args.max_sessions)
    make_server(command, host=args.host, port=args.port, title=f"memlens {shown(args.db)}", guard=guard).serve()
    return 0
