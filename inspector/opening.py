"""Opening a store for the inspector: read-write when this process may write the file, otherwise
read-only, with the reason in words a user can act on. No Textual here.

SQLite itself does not tell: a file this user cannot write opens "read-write" without a word and
fails only at the first write (a forget at its very end), and a read-only filesystem fails with
"unable to open database file". So the inspector looks at the file, its side files, its folder
and its filesystem first, and opens read-only when any of them is not writable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .locations import is_server_url


def read_only_reason(path: Path | str) -> str | None:
    """Why this process cannot write the store at ``path``, or None when it can (or it is not there).

    ``os.access`` is the right question, not the file mode: it answers for this user (root writes
    a 0444 file) and says no on a read-only filesystem whatever the mode.
    """
    if is_server_url(path) or not path.is_file():
        return None  # a server store: the server's role decides, and a refused write says so
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "it is on a read-only filesystem"
    except OSError:
        pass
    if not os.access(path, os.W_OK):
        return "the file is not writable by this user"
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            if not os.access(side, os.W_OK):
                return f"{side.name} is not writable by this user"
        elif not os.access(path.parent, os.W_OK):
            return "its folder is not writable by this user"
    return None


def cannot_read_explained(path: Path, reason: str) -> str:
    """SQLite's "unable to open database file", for a store that is read-only for ``reason``."""
    return (
        f"{path} is read-only ({reason}) and SQLite cannot read it there: a store in WAL mode needs "
        f"its {path.name}-shm file, which cannot be created in that folder. Copy the store to a "
        "writable folder to look at it."
    )


def open_for_inspection(path: Path, embedder: Any) -> tuple[Any, str | None]:
    """(store, why it is read-only or None). Raises the store's typed errors, reworded when the
    file's read-only state is the real cause."""
    from store import MemoryStore
    from store.errors import ReadOnlyStoreError, StoreOpenError

    reason = read_only_reason(path)
    if reason is None:
        try:
            return MemoryStore.open(path, embedder=embedder, create=False), None
        except ReadOnlyStoreError as error:  # read-only in a way the look above could not see
            reason = f"SQLite refused to write it: {error}"
    try:
        return MemoryStore.open(path, embedder=embedder, read_only=True), reason
    except StoreOpenError as error:
        if "unable to open database file" in str(error):
            raise StoreOpenError(cannot_read_explained(path, reason)) from error
        raise
