"""How the CLI and the UI name where a store is (the file-or-server rule itself is the store's,
:mod:`store.locations`). Shared by both, so neither imports the other's modules for it (no
Textual here)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from store.locations import foreign_scheme, is_server_url, shown_url

__all__ = ["foreign_scheme", "in_full", "is_server_url", "shown", "shown_url"]


def in_full(location: str | Path) -> str:
    """How a message names an address in full: a file's path as given, a server URL without its
    password."""
    return shown_url(str(location)) if is_server_url(location) else str(location)


def shown(location: str | Path) -> str:
    """How a title names the store: a file's name, or a server URL's database and host, never
    its password."""
    scheme = foreign_scheme(location)
    if scheme is not None:
        rest = str(location).removeprefix(scheme + ":")
        return f"{shown(rest) if is_server_url(rest) else Path(rest).name} ({scheme})"
    if not is_server_url(location):
        return Path(location).name
    parts = urlsplit(str(location))
    host = parts.hostname or "local socket"
    return f"{parts.path.lstrip('/') or '?'} on {host}"
