"""Opening a store for the inspector: read-write when this process may write the file, otherwise
read-only, with the reason in words a user can act on. No Textual here.

Whether the file can be written (its filesystem, its mode, its folder, its -wal and -shm) is the
store's to say, in one place (the SQLite backend): opened for writing, it refuses a file it cannot
write with a ReadOnlyStoreError that carries the reason, instead of letting SQLite open it
"read-write" and fail at the first write (a forget at its very end). The inspector then opens it
read-only and shows that reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def open_for_inspection(path: Path, embedder: Any) -> tuple[Any, str | None]:
    """(store, why it is read-only or None). Raises the store's typed errors."""
    from store import MemoryStore
    from store.errors import ReadOnlyStoreError

    try:
        return MemoryStore.open(path, embedder=embedder, create=False), None
    except ReadOnlyStoreError as error:
        reason = error.reason or f"opening it for writing failed: {error}"
    return MemoryStore.open(path, embedder=embedder, read_only=True), reason
