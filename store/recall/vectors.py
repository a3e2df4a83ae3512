"""Vector search over one tenant's float32 rows, held in memory or left in its saved index's file.

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
When such a tenant has a saved index that checks out, a new process maps the graph, reads the rows
saved beside it only as searches want them, and reads from the store only the rows' keys and the
rows added since (saved_index.py, split_rows.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NamedTuple

import numpy as np
from sqlalchemy import Connection

from ..tenancy import Tenant
from . import approximate
from .approximate import ApproximateIndex, Builder
from .saved_index import Coverage, SavedIndexes
from .split_rows import Rows, write_rows
from .split_rows import scores as scored
from .tenant_matrix import TenantMatrix, load_keys, load_rows, rows_match, signature

_log = logging.getLogger(__name__)


class Vectors(NamedTuple):
    """One tenant's rows as of one search: keys (ascending), their float32 matrix, and the
    matrix's approximate index when it has one."""

    pks: np.ndarray
    matrix: Rows
    approximate: ApproximateIndex | None = None

    def top_k(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and cosines of the best ``k`` rows, best first: exact scores either way.
        A filtered search (``mask``) scans exactly: the graph cannot skip the rows it excludes."""
        if self.approximate is None or mask is not None:
            return top_k(self.matrix, query, k, mask)
        return self.approximate.top_k(self.matrix, query, k)


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

    def get(self, conn: Connection, tenant: Tenant, kind: str, dim: int) -> tuple[np.ndarray, Rows]:
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
                current = self._from_saved(conn, tenant, kind, dim, fresh) or self._loaded(conn, tenant, kind, dim, fresh)
                self._matrices[key] = current
            current.signature = fresh
            current.data_version = version
            return self._searchable(key, current, conn)

    def _loaded(self, conn: Connection, tenant: Tenant, kind: str, dim: int, fresh: tuple[int, int, int, int]) -> TenantMatrix:
        """Every row read into memory."""
        current = TenantMatrix(dim=dim, erasure_mark=self._erasure_mark)
        current.reserve(fresh[0])
        load_rows(conn, tenant, kind, dim, 0, current)
        return current

    def _from_saved(self, conn: Connection, tenant: Tenant, kind: str, dim: int, fresh: tuple[int, int, int, int]) -> TenantMatrix | None:
        """A large tenant's matrix started from its saved index (the graph mapped, the rows read from
        their file when a search wants them) when it checks out: only the saved rows' keys and the
        rows added since are read from the store (under the lock)."""
        if self._saved is None or not (0 < approximate.min_rows() <= fresh[0] and approximate.available()):
            return None
        keys: list[np.ndarray] = []

        def coverage_of(rows: int) -> Coverage | None:
            keys[:] = load_keys(conn, tenant, kind, rows)
            return Coverage.of(*keys) if len(keys[0]) == rows else None

        opened = self._saved.open(tenant.key, kind, dim, coverage_of, with_rows=True)
        if opened is None or opened.rows is None:
            return None
        if self._erased_since(conn, tenant.key, opened.erasure_mark) or not rows_match(conn, tenant, kind, keys[0], opened.rows):
            opened.rows.handle.close()
            if self._saved.writable:
                self._saved.erase(tenant.key)  # erased from since the save (and not deleted yet), or not the store's rows
            return None
        current = TenantMatrix(dim=dim, erasure_mark=self._erasure_mark, looked_for_saved=True)
        current.start_from_saved(opened.rows, *keys)
        current.approximate, current.saved_rows = opened.approximate, opened.approximate.covered
        load_rows(conn, tenant, kind, dim, int(keys[0][-1]), current)
        # The saved rows are the first rows; anything else changed since (a delete below them)
        # shows here, and the rows are read in full instead.
        return current if current.own_signature() == fresh else None

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
        index, mark = opened.approximate, opened.erasure_mark
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
            _, rows_now = current.view()  # rows never change once loaded: this view stays true
            saved.save(key[0], key[1], index, coverage, current.erasure_mark, lambda out: write_rows(rows_now, rows, out))
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


def top_k(matrix: Rows, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine scores of the ``k`` best rows, best first (vectors are normalised)."""
    if len(matrix) == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = scored(matrix, query)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    if mask is not None:
        best = best[np.isfinite(scores[best])]
    return best, scores[best]
