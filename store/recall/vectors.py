"""Exact vector search over one tenant's float32 matrix, held in memory.

Loaded on first search in chunks into a preallocated matrix (no 3x transient peak), then
kept in step with the table, whichever process wrote it: before each search a signature of
the tenant's rows (count, max and sum of keys, sum of row versions), read from an index, decides
between nothing to do, appending the new rows, and reloading after deletes or replacements.

The signature alone cannot see an erasure followed by new rows that reuse the erased row keys
(SQLite hands out max(key) + 1 again): the matrix would keep the erased vectors under the new
rows' keys. So every search also compares the store's erasure counter (bumped in the erasing
transaction, by any process); when it moved, the erasures recorded since (one audit entry each,
written in the same transaction) name the tenants whose matrices are dropped. Other tenants keep
theirs, and their approximate indexes (a minute of a core to rebuild at 100k). If the entries do
not account for every step of the counter, everything is dropped, as before.

Tenants of ``approximate.min_rows()`` rows or more also get an approximate index, built in the
background and owned by their matrix object, so whatever drops or reloads a matrix drops its
index with it (see ``approximate.py`` for why an erased vector can never come back from it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from sqlalchemy import Connection, func

from ..backend import sql
from ..schema import vectors_t
from ..tenancy import Tenant
from . import approximate
from .approximate import ApproximateIndex, Builder
from .cosines import cosines
from .saved_index import Coverage, SavedIndexes

_log = logging.getLogger(__name__)

# Rows read per statement while loading a matrix. Each chunk's rows and their joined bytes are
# transient, but the allocator keeps the high-water mark: at 8,192 rows (25 MB a chunk) a
# process grew by 1.34x the raw vectors loading a 100k tenant, at 1,024 by 1.22x, in no more
# time (0.6-1.0 s against 1.3-2.0 s, same store, read-only, alternating runs).
_CHUNK = 1024


@dataclass
class TenantMatrix:
    dim: int
    signature: tuple[int, int, int, int] = (0, 0, 0, 0)
    version_sum: int = 0
    data_version: int | None = None
    pks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Each row's version, beside its key: a saved index is checked against both.
    versions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: np.ndarray | None = None
    size: int = 0
    # Published once it covers every row loaded when its build began; rows past its coverage
    # are scanned exactly.
    approximate: ApproximateIndex | None = None
    building: bool = False
    # The newest erasure the store had recorded when this matrix was loaded, the rows the saved
    # index covers (0: none saved yet), and whether a saved index was looked for.
    erasure_mark: int = 0
    saved_rows: int = 0
    looked_for_saved: bool = False

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        if self.matrix is None:
            return self.pks[:0], np.zeros((0, self.dim), dtype=np.float32)
        return self.pks[: self.size], self.matrix[: self.size]

    def own_signature(self) -> tuple[int, int, int, int]:
        pks, _ = self.view()
        return (len(pks), int(pks.max()) if len(pks) else 0, int(pks.sum()), self.version_sum)

    def reserve(self, rows: int) -> None:
        """Allocate exactly ``rows`` before a full load: growing by a quarter as chunks arrive left
        up to 1.25x the bytes, which counts against the memory the approximate index may take."""
        if self.matrix is None and rows > 0:
            self.matrix = np.empty((rows, self.dim), dtype=np.float32)
            self.pks = np.empty(rows, dtype=np.int64)
            self.versions = np.empty(rows, dtype=np.int64)

    def coverage(self, rows: int) -> Coverage | None:
        """The :class:`Coverage` of the first ``rows`` rows, None if there are fewer."""
        if rows > self.size:
            return None
        return Coverage.of(self.pks[:rows], self.versions[:rows])

    def append(self, pks: np.ndarray, versions: np.ndarray, rows: np.ndarray) -> None:
        need = self.size + len(pks)
        if self.matrix is None or need > len(self.matrix):
            capacity = max(need, int(self.size * 1.25) + _CHUNK)
            matrix = np.empty((capacity, self.dim), dtype=np.float32)
            ids = np.empty(capacity, dtype=np.int64)
            row_versions = np.empty(capacity, dtype=np.int64)
            if self.matrix is not None:
                matrix[: self.size] = self.matrix[: self.size]
                ids[: self.size] = self.pks[: self.size]
                row_versions[: self.size] = self.versions[: self.size]
            self.matrix, self.pks, self.versions = matrix, ids, row_versions
        self.matrix[self.size : need] = rows
        self.pks[self.size : need] = pks
        self.versions[self.size : need] = versions
        self.version_sum += int(versions.sum())
        self.size = need


class Vectors(NamedTuple):
    """One tenant's rows as of one search: keys (ascending), their float32 matrix, and the
    matrix's approximate index when it has one."""

    pks: np.ndarray
    matrix: np.ndarray
    approximate: ApproximateIndex | None = None

    def top_k(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and cosines of the best ``k`` rows, best first: exact scores either way.
        A filtered search (``mask``) scans exactly: the graph cannot skip the rows it excludes."""
        if self.approximate is None or mask is not None:
            return top_k(self.matrix, query, k, mask)
        return self.approximate.top_k(self.matrix, query, k)


def signature(conn: Connection, tenant: Tenant, kind: str) -> tuple[int, int, int, int]:
    """Changes whenever a row is added, deleted or replaced (a replaced row gets a new row version)."""
    stmt = tenant.select(
        vectors_t,
        func.count(),
        func.coalesce(func.max(vectors_t.c.item_pk), 0),
        func.coalesce(func.sum(vectors_t.c.item_pk), 0),
        func.coalesce(func.sum(sql(conn).row_version(vectors_t)), 0),
    ).where(vectors_t.c.kind == kind)
    count, low, high, total = (int(v) for v in conn.execute(stmt).one())
    return count, low, high, total


def load_rows(conn: Connection, tenant: Tenant, kind: str, dim: int, after_pk: int, into: TenantMatrix) -> None:
    last = after_pk
    while True:
        stmt = (
            tenant.select(vectors_t, vectors_t.c.item_pk, vectors_t.c.vector, sql(conn).row_version(vectors_t))
            .where(vectors_t.c.kind == kind, vectors_t.c.item_pk > last)
            .order_by(vectors_t.c.item_pk)
            .limit(_CHUNK)
        )
        rows = conn.execute(stmt).all()
        if not rows:
            return
        pks = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        versions = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        block = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        into.append(pks, versions, block)
        last = int(pks[-1])


class VectorCache:
    """Per-(tenant, kind) matrices for one store; thread-safe.

    ``data_version`` (the backend's change counter) changes whenever anyone commits;
    only then is a matrix's signature read again. The erasure counter is read on every search,
    in the search's own snapshot: a version read after the snapshot began could otherwise
    stamp a matrix loaded from before an erasure as current. A search on an unchanged store
    costs one change-counter read and one primary-key lookup. ``erased(conn, after)`` lists
    (audit key, tenant key) of the erasures recorded after audit key ``after``; without it any
    erasure drops every tenant's matrices.

    ``checked`` holds the data versions at which the store last found a tenant's blocks or
    notes fully embedded; it is dropped with the matrices.

    With ``saved`` (a store file's index folder; it needs ``erased`` and ``read``, a read
    transaction for the builder's thread), a large tenant's approximate index is mapped from its
    saved copy when one checks out, and saved once built (see :mod:`store.recall.saved_index`).
    """

    def __init__(
        self,
        data_version: Callable[[], int | None] | None,
        erasures: Callable[[Connection], int],
        erased: Callable[[Connection, int], list[tuple[int, str]]] | None = None,
        saved: SavedIndexes | None = None,
        read: Callable[[], AbstractContextManager[Connection]] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._matrices: dict[tuple[str, str], TenantMatrix] = {}
        self._data_version = data_version or (lambda: None)
        self._erasure_count = erasures
        self._erased = erased
        # The counter and the newest erasure entry seen with it, from one snapshot.
        self._erasures: int | None = None
        self._erasure_mark = 0
        self.checked: dict[tuple[str, str], int] = {}
        self._builder: Builder | None = None
        self._saved = saved if erased is not None and read is not None else None
        self._read = read

    def close(self) -> None:
        self.clear()
        if self._builder is not None:
            self._builder.stop()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the approximate indexes being built or extended (tests and benchmarks)."""
        return True if self._builder is None else self._builder.settle(timeout)

    def clear(self) -> None:
        with self._lock:
            self._matrices.clear()
            self.checked.clear()

    def drop_tenant(self, key: str) -> None:
        """Forget one tenant's matrices (and their indexes) and its embedded-check marks."""
        with self._lock:
            self._drop(key)

    def erase_saved(self, key: str) -> None:
        """Delete the tenant's saved indexes (after an erasure of any of its rows)."""
        if self._saved is not None:
            self._saved.erase(key)

    def _drop(self, key: str) -> None:
        for cached in [k for k in self._matrices if k[0] == key]:
            del self._matrices[cached]
        for cached in [k for k in self.checked if k[0] == key]:
            del self.checked[cached]

    def notice_erasures(self, conn: Connection) -> None:
        """Drop what is cached for every tenant any process erased from since the last look (all
        tenants if the erasures cannot be told apart)."""
        erasures = self._erasure_count(conn)
        with self._lock:
            if erasures == self._erasures:
                return
            seen, mark = self._erasures, self._erasure_mark
        # Read in this search's snapshot, the same as the counter, so the two agree.
        newer = self._erased(conn, mark) if self._erased is not None and seen is not None and seen < erasures else None
        with self._lock:
            if self._erasures != seen or self._erasure_mark != mark:
                # Another search noticed first (maybe in a newer or older snapshot): start over
                # from what this snapshot holds, dropping everything, which is always safe.
                newer = None
            if newer is not None and seen is not None and len(newer) == erasures - seen:
                for _, key in newer:
                    self._drop(key)
                self._erasure_mark = newer[-1][0]
            else:
                self._matrices.clear()
                self.checked.clear()
                everything = self._erased(conn, 0) if self._erased is not None else []
                self._erasure_mark = everything[-1][0] if everything else 0
            self._erasures = erasures

    def get(self, conn: Connection, tenant: Tenant, kind: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(item pks, matrix) for the tenant, brought up to date with the table."""
        pks, matrix, _ = self.searchable(conn, tenant, kind, dim)
        return pks, matrix

    def searchable(self, conn: Connection, tenant: Tenant, kind: str, dim: int) -> Vectors:
        """The tenant's rows brought up to date with the table, with their approximate index if
        it is built (a large tenant's first search queues its build and scans exactly)."""
        self.notice_erasures(conn)
        with self._lock:
            key = (tenant.key, kind)
            version = self._data_version()
            current = self._matrices.get(key)
            if current is not None and current.dim == dim and version is not None and version == current.data_version:
                return self._searchable(key, current)
            fresh = signature(conn, tenant, kind)
            if current is not None and current.dim == dim and fresh != current.signature:
                # Most changes are appends: load the rows above the old maximum, and keep the
                # result only if it accounts for every row (a delete anywhere forces a reload).
                load_rows(conn, tenant, kind, dim, current.signature[1], current)
                if current.own_signature() != fresh:
                    current = None
            if current is None or current.dim != dim:
                current = self._matrices[key] = TenantMatrix(dim=dim, erasure_mark=self._erasure_mark)
                current.reserve(fresh[0])
                load_rows(conn, tenant, kind, dim, 0, current)
            current.signature = fresh
            current.data_version = version
            return self._searchable(key, current, conn)

    def _searchable(self, key: tuple[str, str], current: TenantMatrix, conn: Connection | None = None) -> Vectors:
        """Called under the lock: the view, and a build or catch-up queued if one is due."""
        pks, matrix = current.view()
        threshold = approximate.min_rows()
        if not (0 < threshold <= current.size and approximate.available()):
            return Vectors(pks, matrix, None)
        if current.approximate is None and not current.looked_for_saved and conn is not None:
            current.looked_for_saved = True
            self._open_saved(key, current, conn)
        index = current.approximate
        due = index is None or current.size - index.covered >= approximate.CATCH_UP_AFTER
        if due and not current.building:
            current.building = True
            if self._builder is None:
                self._builder = Builder(lambda job: self._matrices.get(job[0]) is job[1])
            self._builder.submit((key, current), lambda: self._index(key, current))
        return Vectors(pks, matrix, index)

    def _open_saved(self, key: tuple[str, str], current: TenantMatrix, conn: Connection) -> None:
        """Map the tenant's saved index if it checks out (under the lock, once per matrix: about
        0.1 s at 100k rows, against 12-13 s of a core to build it)."""
        if self._saved is None:
            return
        opened = self._saved.open(key[0], key[1], current.dim, current.coverage)
        if opened is None:
            return
        index, mark = opened
        if self._erased_since(conn, key[0], mark):
            # Erased from since it was saved, and the erasing process has not deleted it yet.
            if self._saved.writable:
                self._saved.erase(key[0])
            return
        current.approximate = index
        current.saved_rows = index.covered

    def _save(self, key: tuple[str, str], current: TenantMatrix, index: ApproximateIndex) -> None:
        """On the builder's thread: save the index when it covers a tenth more rows than the saved
        one (or none is saved), then make sure no erasure of the tenant came in between."""
        saved, read = self._saved, self._read
        if saved is None or not saved.writable or read is None:
            return
        rows = index.covered
        if rows - current.saved_rows < max(approximate.CATCH_UP_AFTER, current.saved_rows // 10):
            return
        coverage = current.coverage(rows)
        if coverage is None:
            return
        try:
            saved.save(key[0], key[1], index, coverage, current.erasure_mark)
        except OSError as error:  # a full disk or a folder that cannot be written: build per process, as before
            _log.warning("could not save the vector index of a tenant: %s", error)
            return
        current.saved_rows = rows
        with read() as conn:
            if self._erased_since(conn, key[0], current.erasure_mark):
                saved.erase(key[0])

    def _erased_since(self, conn: Connection, tenant_key: str, mark: int) -> bool:
        """Whether an erasure of the tenant was recorded after audit entry ``mark`` (a saved index
        is kept only with ``erased`` at hand, so this is never asked without it)."""
        return self._erased is not None and any(tenant == tenant_key for _, tenant in self._erased(conn, mark))

    def _index(self, key: tuple[str, str], current: TenantMatrix) -> None:
        """On the builder's thread: build (or extend) the matrix's index until it covers every
        row, publishing it after the first pass; stop as soon as the cache drops the matrix."""
        index = current.approximate or ApproximateIndex(current.dim)

        builder = self._builder

        def wanted() -> bool:
            return not (builder is not None and builder.stopped) and self._matrices.get(key) is current

        # A build that raises leaves ``building`` set: this matrix stays exact rather than
        # retrying on every search; the failure is kept in ``index_failure``.
        while True:
            with self._lock:
                if not wanted():
                    return
                _, matrix = current.view()
                if index.covered >= len(matrix):
                    current.approximate = index
                    current.building = False
                    break
            published = current.approximate is index
            index.extend(matrix, approximate.CATCH_UP_STEP if published else approximate.BUILD_STEP, wanted)
            with self._lock:
                if wanted() and index.covered >= len(matrix):
                    current.approximate = index
        if not index.mapped:
            self._save(key, current, index)

    @property
    def index_failure(self) -> BaseException | None:
        """The last error that stopped an approximate index's build (its tenant searches exactly)."""
        return None if self._builder is None else self._builder.failure


def top_k(matrix: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine scores of the ``k`` best rows, best first (vectors are normalised)."""
    if len(matrix) == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = cosines(matrix, query)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    if mask is not None:
        best = best[np.isfinite(scores[best])]
    return best, scores[best]
