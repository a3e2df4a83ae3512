"""``store.open(address)``: memory opened by its address, memlens's own or another library's.

A memlens store (a file path, ``sqlite:///...``, ``postgresql://...``) opens as
:class:`~store.memory.MemoryStore`; another library's memory (``loomflow-sqlite:FILE``,
``chroma:DIR``) opens where it lives as a live, read-only view (:mod:`store.compat.loomflow_view`).
Both are a :class:`~store.views.StoreView`. The choice is made here, beside the store, so that
the store itself never imports the views built on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .compat.loomflow_view import open_view
from .errors import InvalidInputError
from .locations import foreign_scheme
from .memory import MemoryStore
from .views import StoreView

VIEW_OPTIONS = {"read_only", "create", "check_model"}
"""What a view of another library's memory takes besides ``embedder``, and changes nothing: it
is read-only, never created, and its source records no model to check."""


def open(address: str | Path, *, embedder: Any = "default", **options: Any) -> StoreView:  # noqa: A001 (store.open, as sqlite3.connect)
    """Open the memory at ``address``.

    A memlens store takes every option of :meth:`MemoryStore.open <store.memory.MemoryStore.open>`.
    ``loomflow-sqlite:FILE`` (a loomflow ``SqliteMemory`` file) or ``chroma:DIR`` (a loomflow
    ``ChromaMemory`` directory) opens that memory where it lives, read-only and live: the read
    API of a store; writes raise :class:`~store.errors.ReadOnlyStoreError`, and a loomflow
    file's view erases in place (``forget``, ``scrub``). ``embedder`` embeds its queries (None:
    keyword search only); any option but ``read_only``, ``create`` and ``check_model`` is refused for a view with
    :class:`~store.errors.InvalidInputError`, as it would change nothing.
    """
    if foreign_scheme(address) is None:
        return MemoryStore.open(address, embedder=embedder, **options)
    ignored = sorted(set(options) - VIEW_OPTIONS)
    if ignored:
        raise InvalidInputError(
            f"{', '.join(ignored)}: options of a memlens store; {address} is another library's memory, opened read-only where it lives"
        )
    return open_view(address, embedder=embedder)


def _a_store_is_a_view(store: MemoryStore) -> StoreView:
    return store  # the type checker holds MemoryStore to StoreView here
