"""Opening a store for the inspector: the tenant names read at once (Glance), then the store,
read-write when this process may write the file, otherwise read-only, with the reason in words a
user can act on. No Textual here.

Whether the file can be written (its filesystem, its mode, its folder, its -wal and -shm) is the
store's to say, in one place (the SQLite backend): opened for writing, it refuses a file it cannot
write with a ReadOnlyStoreError that carries the reason, instead of letting SQLite open it
"read-write" and fail at the first write (a forget at its very end). The inspector then opens it
read-only and shows that reason.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from .locations import foreign_scheme, is_server_url


def open_for_inspection(path: Path | str, embedder: Any) -> tuple[Any, str | None]:
    """(store, why it is read-only or None). Raises the store's typed errors."""
    import store
    from store import MemoryStore
    from store.errors import ReadOnlyStoreError

    if foreign_scheme(path) is not None:
        # Its vectors' model is not recorded: keyword search over the text, and the title says so.
        # The view says why it is read-only (its keys that write say this).
        view: Any = store.open(path, embedder=None)
        return view, view.read_only_reason
    # A person searching is not the agent recalling: the inspector never traces (MEMLENS_TRACE
    # is for the agent's process), so its searches as you type leave no trace.
    try:
        return MemoryStore.open(path, embedder=embedder, create=False, trace=False), None
    except ReadOnlyStoreError as error:
        reason = error.reason or f"opening it for writing failed: {error}"
    return MemoryStore.open(path, embedder=embedder, read_only=True), reason


class Glance:
    """The tenant names (store.glance), read in a thread of its own from the moment the App is made."""

    def __init__(self, path: Path | str):
        self.names: list[Any] | None = None
        self.done = threading.Event()
        if is_server_url(path) or foreign_scheme(path):  # no memlens file to glance at: the open lists the tenants
            self.done.set()
            return
        threading.Thread(target=self._read, args=(path,), name="memlens-glance", daemon=True).start()

    def _read(self, path: Path) -> None:
        from store.glance import tenant_names

        try:
            self.names = tenant_names(path)
        finally:
            self.done.set()
