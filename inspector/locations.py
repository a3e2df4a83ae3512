"""Where a store is: a file, or a database on a server. Shared by the CLI and the UI, so neither
imports the other's modules for it (no Textual here)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit


def is_server_url(location: str | Path) -> bool:
    """A store on a database server (``postgresql://...``), not a file (a path or ``sqlite:///``)."""
    text = str(location)
    return "://" in text and not text.lower().startswith("sqlite")


def shown(location: str | Path) -> str:
    """How a title names the store: a file's name, or a server URL's database and host, never
    its password."""
    if not is_server_url(location):
        return Path(location).name
    parts = urlsplit(str(location))
    host = parts.hostname or "local socket"
    return f"{parts.path.lstrip('/') or '?'} on {host}"
