"""Keyword search in a small tenant over an index of its own episodes, not the store's.

FTS5 keeps one doclist per word for the whole store, so a word's matches in one tenant are found
by walking its matches in every tenant: at 10,000 tenants of 20 episodes, one tenant's keyword
search cost 79x the same tenant alone in a store, and grew with every other tenant. A tenant of
fewer than MIN_EPISODES_FOR_CUT episodes is searched instead in an in-memory FTS5 table of its
own episodes, read through the tenant index (a cost in proportion to the tenant), with the
store's tokenizer.

Nothing about the answer changes. Below that size every match of a query is a candidate (the
window is MAX_KEYWORD_MATCHES) and no word is cut as common, so the store's search ranks every
match of the tenant by BM25 over the tenant's own statistics (:mod:`.tenant_bm25`); FTS5's
``bm25()`` over a table holding only the tenant's episodes is that ranking. Ties go to the newer
episode, as there.

An index is kept until anyone commits (as :class:`..shared.DataVersionCache` keeps a word's
counts: the change counter read, then the episodes in a read transaction of their own), so search as you type builds it
once and a commit (an erasure included) is never answered from before it. Only the most recent
SMALL_INDEXES_KEPT tenants' are kept, in memory only: no copy reaches the disk, and the next
search after a commit drops them all.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Connection, Select, func, select

from ...schema import episodes_t
from ...tenancy import Tenant
from ..shared import MIN_EPISODES_FOR_CUT
from .migrations import _FTS_TOKENIZER

__all__ = ["SMALL_TENANT_EPISODES", "SmallTenantIndexes"]

SMALL_TENANT_EPISODES = MIN_EPISODES_FOR_CUT
"""A tenant of fewer episodes than this is searched over an index of its own."""
# Tenants searched in turn (the inspector's tenant list walked, a fleet's agents answering) each
# keep theirs until the next commit; eight at about 1 MB at most each.
SMALL_INDEXES_KEPT = 8
MISSING: Any = object()


@dataclass
class TenantIndex:
    """One tenant's episodes in an in-memory FTS5 table, and what the filters ask of each."""

    connection: sqlite3.Connection
    sessions: dict[int, str | None]
    times: dict[int, datetime]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _matches(self, sql: str, expression: str) -> list[tuple[Any, ...]]:
        with self.lock:
            try:
                return self.connection.execute(sql, (expression,)).fetchall()
            except sqlite3.OperationalError:
                return []  # an expression FTS5 cannot parse matches nothing, as in the store's index
            except sqlite3.ProgrammingError:
                return []  # closed by the tenant's erasure since this search took it

    def _kept(self, pk: int, session_id: str | None, since: datetime | None, until: datetime | None) -> bool:
        if session_id is not None and self.sessions[pk] != session_id:
            return False
        occurred = self.times[pk]
        return (since is None or occurred >= since) and (until is None or occurred < until)

    def ranked(
        self, expression: str, limit: int, session_id: str | None, since: datetime | None, until: datetime | None
    ) -> list[tuple[int, float, list[str]]]:
        """Every match, best first by BM25 over the tenant's own statistics (ties: newer first)."""
        rows = self._matches("SELECT rowid, bm25(episodes) FROM episodes WHERE episodes MATCH ?", expression)
        kept = [(pk, rank) for pk, rank in rows if self._kept(pk, session_id, since, until)]
        kept.sort(key=lambda hit: (hit[1], -hit[0]))  # bm25(): lower is better
        return [(pk, -rank, []) for pk, rank in kept[:limit]]

    def newest(self, expression: str, limit: int, session_id: str | None, since: datetime | None, until: datetime | None) -> list[int]:
        rows = self._matches("SELECT rowid FROM episodes WHERE episodes MATCH ? ORDER BY rowid DESC", expression)
        return [pk for (pk,) in rows if self._kept(pk, session_id, since, until)][:limit]


@lru_cache(maxsize=256)
def _tenant_rows(tenant: Tenant) -> Select[Any]:
    e = episodes_t
    return tenant.select(e, e.c.pk, e.c.input, e.c.output, e.c.session_id, e.c.occurred_at).limit(SMALL_TENANT_EPISODES)


@lru_cache(maxsize=256)
def _tenant_size(tenant: Tenant) -> Select[Any]:
    e = episodes_t
    return select(func.count()).select_from(tenant.select(e, e.c.pk).limit(SMALL_TENANT_EPISODES).subquery())


def build(conn: Connection, tenant: Tenant, below: int = SMALL_TENANT_EPISODES) -> TenantIndex | None:
    """The tenant's index, or None when it holds ``below`` episodes or more."""
    if below <= 0 or conn.execute(_tenant_size(tenant)).scalar_one() >= below:
        return None
    rows = conn.execute(_tenant_rows(tenant)).all()
    memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    memory.execute(f"CREATE VIRTUAL TABLE episodes USING fts5(input, output, tokenize='{_FTS_TOKENIZER}')")
    memory.executemany("INSERT INTO episodes(rowid, input, output) VALUES (?, ?, ?)", [(r[0], r[1], r[2]) for r in rows])
    return TenantIndex(memory, {r[0]: r[3] for r in rows}, {r[0]: r[4] for r in rows})


class SmallTenantIndexes:
    """The index of a small tenant's own episodes (None for a tenant too large for one), kept
    under the change counter it was built at; the least recently asked for goes first."""

    def __init__(self, read: Callable[[], AbstractContextManager[Connection]], data_version: Callable[[], int]):
        self._read, self._data_version = read, data_version
        self._kept: tuple[int | None, OrderedDict[str, TenantIndex | None]] = (None, OrderedDict())
        self._lock = threading.Lock()
        self.below = SMALL_TENANT_EPISODES
        """Tenants of fewer episodes get an index of their own (0: none does; tests compare the two ways)."""

    def _get(self, version: int, key: str) -> Any:
        with self._lock:
            kept_version, indexes = self._kept
            if version != kept_version or key not in indexes:
                return MISSING
            indexes.move_to_end(key)
            return indexes[key]

    def _keep(self, version: int, key: str, index: TenantIndex | None) -> None:
        with self._lock:
            kept_version, indexes = self._kept
            if kept_version is not None and version < kept_version:
                return  # built from older data than what is kept: used once, not kept
            if version != kept_version:
                indexes = OrderedDict()  # everything built before a commit goes at once
                self._kept = (version, indexes)
            indexes[key] = index
            while len(indexes) > SMALL_INDEXES_KEPT:
                indexes.popitem(last=False)

    def kept_tenants(self) -> list[str]:
        """The tenants whose index is kept now (their keys), least recently searched first."""
        with self._lock:
            return [key for key, index in self._kept[1].items() if index is not None]

    def drop(self, tenant: Tenant) -> None:
        """Forget the tenant's index now (an erasure): not at the next search after it."""
        with self._lock:
            index = self._kept[1].pop(tenant.key, None)
        if index is not None:
            with index.lock:  # a search under way finishes first
                index.connection.close()

    def __call__(self, tenant: Tenant) -> TenantIndex | None:
        version = self._data_version()  # before the read, so nothing is kept under a newer number
        found = self._get(version, tenant.key)
        if found is not MISSING:
            return cast("TenantIndex | None", found)
        with self._read() as conn:
            index = build(conn, tenant, self.below)
        self._keep(version, tenant.key, index)
        return index
