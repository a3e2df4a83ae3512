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
