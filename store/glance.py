"""The tenant names of a store, read with the standard library alone.

Opening a store imports SQLAlchemy (~0.4 s here, more than a bare Textual app takes to show
its first line) before it can run a query; a screen that lists tenants shows their names from
this while :meth:`MemoryStore.open` is still under way, and its counts when the open is done.

It reads and never writes (``mode=ro``), and answers None for anything that is not plainly a
memlens store, so the caller waits for the open, whose checks and errors are the real ones.
A listing of the tenants table is not a tenant-scoped query, hence raw SQL outside
:mod:`store.tenancy`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from .locations import foreign_scheme, is_server_url

# Both also live in modules that import SQLAlchemy (store.backend.sqlite.migrations,
# store.tenancy), which is what this module is for avoiding; tests/test_glance.py checks the
# copies agree.
APPLICATION_ID = 0x4D4C4E53
ANONYMOUS_KEY = ""
# How the anonymous bucket is named to a person, in the CLI, the inspector and the store's messages.
ANONYMOUS_LABEL = "(anonymous)"

_NAMES = (
    "SELECT user_id FROM tenants"
    # Not a tenant whose erasure is under way (store.tenancy.erasing_key): it reads as gone.
    " WHERE NOT EXISTS (SELECT 1 FROM memlens_meta WHERE key = 'erasing:' || user_id)"
    # MemoryStore.tenants() order: most recently active first, ties by name, anonymous last.
    " ORDER BY last_activity DESC, user_id = '' , user_id"
)


def tenant_names(path: str | Path, *, busy_timeout: float = 1.0) -> list[str | None] | None:
    """The store's tenants in :meth:`MemoryStore.tenants` order (None is the anonymous bucket),
    or None when ``path`` is missing, not a memlens store, unreadable or locked past ``busy_timeout``.
    A server store's address (or another library's) answers None at once, touching no file: the
    server's driver comes with SQLAlchemy's import, so its names wait for the open."""
    if is_server_url(path) or foreign_scheme(path):
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(Path(path).expanduser().resolve()))}?mode=ro", uri=True, timeout=busy_timeout)
    except (sqlite3.Error, OSError):
        return None
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            return None
        return [None if key == ANONYMOUS_KEY else key for (key,) in conn.execute(_NAMES)]
    except sqlite3.Error:
        return None
    finally:
        conn.close()
