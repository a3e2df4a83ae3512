"""The one door tests use into a store's parts.

The public API (``store.__all__``) is what users get. Some tests must go below it: run SQL on
the store's own connection to check what is on disk, count what the keyword index is asked,
wait for the vector index to finish building, or resolve a ``user_id`` the way the store does.
They do it through these functions, never through a store's private attributes, so a change of
how the store is composed changes this module and no test (``tests/test_sanctioned_door.py``
holds that). Nothing here is part of the public API or its stability promise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend.interface import Backend, KeywordIndex
    from .memory import MemoryStore
    from .recall.indexing import Indexer
    from .recall.tenant_matrix import TenantMatrix
    from .recall.vectors import VectorCache
    from .tenancy import Tenant


def backend(store: MemoryStore) -> Backend:
    """The store's database backend: ``read()``, ``write()``, ``raw()``, its engine, its maintenance steps."""
    return store._db


def keyword_index(store: MemoryStore) -> KeywordIndex:
    """The backend's full-text index, as recall calls it."""
    return store._db.keyword


def search_every_tenant_in_the_store_index(store: MemoryStore) -> None:
    """On SQLite, search small tenants' keywords in the store's own FTS5 index too, as large
    tenants' are, instead of in an index of their own (:mod:`.backend.sqlite.small_tenants`):
    the way the two must agree on."""
    store._db.keyword.small_tenants.below = 0  # type: ignore[attr-defined]


def indexer(store: MemoryStore) -> Indexer:
    """What embeds texts and keeps the vectors of the store's tenants."""
    return store._indexer


def vector_cache(store: MemoryStore) -> VectorCache:
    """The per-tenant vector matrices (and approximate indexes) the store searches."""
    return store._indexer.cache


def tenant(store: MemoryStore, user_id: Any) -> Tenant:
    """``user_id`` resolved to a tenant as the store's own methods resolve it."""
    return store._tenant(user_id)


def forget_query_vectors(store: MemoryStore) -> None:
    """Drop the store's cache of encoded queries, so the next search encodes its query again."""
    store._indexer.forget_queries()


def cached_matrices(cache: VectorCache) -> dict[tuple[str, str], TenantMatrix]:
    """The cache's matrices by (tenant key, kind): the live mapping, to seed or inspect."""
    return cache._matrices
