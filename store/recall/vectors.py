"""Exact vector search over one tenant's float32 matrix, held in memory.

Loaded on first search in chunks into a preallocated matrix (no 3x transient peak), then
kept in step with the table, whichever process wrote it: before each search a signature of
the tenant's rows (count, max and sum of keys, sum of row versions), read from an index, decides
between nothing to do, appending the new rows, and reloading after deletes or replacements.

The signature alone cannot see an erasure followed by new rows that reuse the erased row keys
(SQLite hands out max(key) + 1 again): the matrix would keep the erased vectors under the new
rows' keys. So every search also compares the store's erasure counter (bumped in the erasing
transaction, by any process) and drops everything cached when it moved.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from typing import Callable

import numpy as np
from sqlalchemy import Connection, func

from ..backend import sql
from ..schema import vectors_t
from ..tenancy import Tenant

_CHUNK = 8192


@dataclass
class TenantMatrix:
    dim: int
    signature: tuple[int, int, int, int] = (0, 0, 0, 0)
    version_sum: int = 0
    data_version: int | None = None
    pks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: np.ndarray | None = None
    size: int = 0

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        if self.matrix is None:
            return self.pks[:0], np.zeros((0, self.dim), dtype=np.float32)
        return self.pks[: self.size], self.matrix[: self.size]

    def own_signature(self) -> tuple[int, int, int, int]:
        pks, _ = self.view()
        return (len(pks), int(pks.max()) if len(pks) else 0, int(pks.sum()), self.version_sum)

    def append(self, pks: np.ndarray, rows: np.ndarray) -> None:
        need = self.size + len(pks)
        if self.matrix is None or need > len(self.matrix):
            capacity = max(need, int(self.size * 1.25) + _CHUNK)
            matrix = np.empty((capacity, self.dim), dtype=np.float32)
            ids = np.empty(capacity, dtype=np.int64)
            if self.matrix is not None:
                matrix[: self.size] = self.matrix[: self.size]
                ids[: self.size] = self.pks[: self.size]
            self.matrix, self.pks = matrix, ids
        self.matrix[self.size : need] = rows
        self.pks[self.size : need] = pks
        self.size = need


def signature(conn: Connection, tenant: Tenant, kind: str) -> tuple[int, int, int, int]:
    """Changes whenever a row is added, deleted or replaced (a replaced row gets a new row version)."""
    stmt = tenant.select(
        vectors_t,
        func.count(),
        func.coalesce(func.max(vectors_t.c.item_pk), 0),
        func.coalesce(func.sum(vectors_t.c.item_pk), 0),
        func.coalesce(func.sum(sql(conn).row_version(vectors_t)), 0),
    ).where(vectors_t.c.kind == kind)
    return tuple(int(v) for v in conn.execute(stmt).one())


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
        block = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        into.append(pks, block)
        into.version_sum += sum(r[2] for r in rows)
        last = int(pks[-1])


class VectorCache:
    """Per-(tenant, kind) matrices for one store; thread-safe.

    ``data_version`` (the backend's change counter) changes whenever anyone commits;
    only then is a matrix's signature read again. The erasure counter is read on every search,
    in the search's own snapshot: a version read after the snapshot began could otherwise
    stamp a matrix loaded from before an erasure as current. A search on an unchanged store
    costs one change-counter read and one primary-key lookup.

    ``checked`` holds the data versions at which the store last found a tenant's blocks or
    notes fully embedded; it is dropped with the matrices.
    """

    def __init__(self, data_version: Callable[[], int | None] | None, erasures: Callable[[Connection], int]) -> None:
        self._lock = threading.Lock()
        self._matrices: dict[tuple[str, str], TenantMatrix] = {}
        self._data_version = data_version or (lambda: None)
        self._erasure_count = erasures
        self._erasures: int | None = None
        self.checked: dict[tuple[str, str], int] = {}

    def close(self) -> None:
        self.clear()

    def clear(self) -> None:
        with self._lock:
            self._matrices.clear()
            self.checked.clear()

    def notice_erasures(self, conn: Connection) -> None:
        """Drop everything cached if any process erased anything since the last look."""
        erasures = self._erasure_count(conn)
        with self._lock:
            if erasures != self._erasures:
                self._matrices.clear()
                self.checked.clear()
                self._erasures = erasures

    def get(self, conn: Connection, tenant: Tenant, kind: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(item pks, matrix) for the tenant, brought up to date with the table."""
        self.notice_erasures(conn)
        with self._lock:
            key = (tenant.key, kind)
            version = self._data_version()
            current = self._matrices.get(key)
            if current is not None and current.dim == dim and version is not None and version == current.data_version:
                return current.view()
            fresh = signature(conn, tenant, kind)
            if current is not None and current.dim == dim and fresh != current.signature:
                # Most changes are appends: load the rows above the old maximum, and keep the
                # result only if it accounts for every row (a delete anywhere forces a reload).
                load_rows(conn, tenant, kind, dim, current.signature[1], current)
                if current.own_signature() != fresh:
                    current = None
            if current is None or current.dim != dim:
                current = self._matrices[key] = TenantMatrix(dim=dim)
                load_rows(conn, tenant, kind, dim, 0, current)
            current.signature = fresh
            current.data_version = version
            return current.view()



def top_k(matrix: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosine scores of the ``k`` best rows, best first (vectors are normalised)."""
    if len(matrix) == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scores = matrix @ query
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    if mask is not None:
        best = best[np.isfinite(scores[best])]
    return best, scores[best]
