"""One tenant's float32 rows as a search holds them, and how they are read from the store.

Rows are kept in key order, and a loaded row never changes: new rows are appended, and any
delete or replacement makes the cache load a new :class:`TenantMatrix` (see vectors.py). A large
tenant's first rows may be left in its saved index's rows file and read when a search wants them
(see split_rows.py); its keys and row versions are always in memory, read from the store.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Connection, func

from ..backend import sql
from ..schema import vectors_t
from ..tenancy import Tenant
from .approximate import ApproximateIndex
from .saved_index import Coverage
from .split_rows import Rows, RowsFile, SplitRows

# Rows read per statement while loading a matrix. Each chunk's rows and their joined bytes are
# transient, but the allocator keeps the high-water mark: at 8,192 rows (25 MB a chunk) a
# process grew by 1.34x the raw vectors loading a 100k tenant, at 1,024 by 1.22x, in no more
# time (0.6-1.0 s against 1.3-2.0 s, same store, read-only, alternating runs).
_CHUNK = 1024
# Keys (two integers a row) read per statement when the rows themselves stay in a saved file.
_KEY_CHUNK = 8192
# Saved rows compared with the store's at random positions before the saved rows are used.
_SAMPLES = 16


@dataclass
class TenantMatrix:
    dim: int
    signature: tuple[int, int, int, int] = (0, 0, 0, 0)
    version_sum: int = 0
    data_version: int | None = None
    pks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Each row's version, beside its key: a saved index is checked against both.
    versions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # The rows in memory: all of them, or those past ``saved`` when the first rows stay in its file.
    matrix: np.ndarray | None = None
    size: int = 0
    # The first rows, left in the saved index's rows file (see split_rows.py), or None.
    saved: RowsFile | None = None
    # Published once it covers every row loaded when its build began; rows past its coverage
    # are scanned exactly.
    approximate: ApproximateIndex | None = None
    building: bool = False
    # The newest erasure the store had recorded when this matrix was loaded, the rows the saved
    # index covers (0: none saved yet), and whether a saved index was looked for.
    erasure_mark: int = 0
    saved_rows: int = 0
    looked_for_saved: bool = False

    @property
    def _in_file(self) -> int:
        return 0 if self.saved is None else len(self.saved)

    def view(self) -> tuple[np.ndarray, Rows]:
        in_memory = self.size - self._in_file
        tail = np.zeros((0, self.dim), dtype=np.float32) if self.matrix is None else self.matrix[:in_memory]
        if self.saved is not None:
            return self.pks[: self.size], SplitRows(self.saved, tail)
        return self.pks[: self.size], tail

    def own_signature(self) -> tuple[int, int, int, int]:
        pks, _ = self.view()
        return (len(pks), int(pks.max()) if len(pks) else 0, int(pks.sum()), self.version_sum)

    def reserve(self, rows: int) -> None:
        """Allocate exactly ``rows`` before a full load: growing by a quarter as chunks arrive left
        up to 1.25x the bytes, which counts against the memory the approximate index may take."""
        if self.matrix is None and self.size == 0 and rows > 0:
            self.matrix = np.empty((rows, self.dim), dtype=np.float32)
            self.pks = np.empty(rows, dtype=np.int64)
            self.versions = np.empty(rows, dtype=np.int64)

    def start_from_saved(self, rows: RowsFile, pks: np.ndarray, versions: np.ndarray) -> None:
        """Start from saved rows (an empty matrix only): their keys and versions in memory, the
        rows themselves left in their file."""
        self.saved, self.pks, self.versions = rows, pks, versions
        self.size = len(pks)
        self.version_sum = int(versions.sum())

    def coverage(self, rows: int) -> Coverage | None:
        """The :class:`Coverage` of the first ``rows`` rows, None if there are fewer."""
        if rows > self.size:
            return None
        return Coverage.of(self.pks[:rows], self.versions[:rows])

    def append(self, pks: np.ndarray, versions: np.ndarray, rows: np.ndarray) -> None:
        need = self.size + len(pks)
        if need > len(self.pks):
            capacity = max(need, int(self.size * 1.25) + _CHUNK)
            self.pks = _grown(self.pks, self.size, capacity)
            self.versions = _grown(self.versions, self.size, capacity)
        in_memory, in_file = self.size - self._in_file, self._in_file
        if self.matrix is None or need - in_file > len(self.matrix):
            capacity = max(need - in_file, int(in_memory * 1.25) + _CHUNK)
            matrix = np.empty((capacity, self.dim), dtype=np.float32)
            if self.matrix is not None:
                matrix[:in_memory] = self.matrix[:in_memory]
            self.matrix = matrix
        self.matrix[in_memory : need - in_file] = rows
        self.pks[self.size : need] = pks
        self.versions[self.size : need] = versions
        self.version_sum += int(versions.sum())
        self.size = need


def _grown(values: np.ndarray, used: int, capacity: int) -> np.ndarray:
    grown = np.empty(capacity, dtype=values.dtype)
    grown[:used] = values[:used]
    return grown


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


def load_keys(conn: Connection, tenant: Tenant, kind: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The keys and row versions of the tenant's first ``rows`` rows (fewer if it has fewer)."""
    pks: list[np.ndarray] = []
    versions: list[np.ndarray] = []
    last = 0
    while (have := sum(len(p) for p in pks)) < rows:
        stmt = (
            tenant.select(vectors_t, vectors_t.c.item_pk, sql(conn).row_version(vectors_t))
            .where(vectors_t.c.kind == kind, vectors_t.c.item_pk > last)
            .order_by(vectors_t.c.item_pk)
            .limit(min(_KEY_CHUNK, rows - have))
        )
        result = conn.execute(stmt)
        try:
            # The driver's plain tuples: a new process opening a saved index reads a large tenant's
            # keys before its first search, and Row objects took half as long again (100k: 0.19 -> 0.10 s).
            chunk = result.cursor.fetchall()
        finally:
            result.close()
        if not chunk:
            break
        both = np.fromiter(itertools.chain.from_iterable(chunk), dtype=np.int64, count=2 * len(chunk)).reshape(-1, 2)
        pks.append(both[:, 0].copy())
        versions.append(both[:, 1].copy())
        last = int(pks[-1][-1])
    if not pks:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(pks), np.concatenate(versions)


def rows_match(conn: Connection, tenant: Tenant, kind: str, pks: np.ndarray, rows: RowsFile, samples: int = _SAMPLES) -> bool:
    """Whether saved ``rows`` hold the store's bytes at the first, the last and ``samples`` random
    positions. The rows file's digest proves it is the file its description names, not that its
    rows are the store's: a damaged or planted pair would pass that. A search only ever returns
    rows by their position's key, read from the store, so wrong rows could skew scores but never
    bring back another tenant's or an erased row; this check is what makes skewed scores unlikely
    (a file wrong in a tenth of its rows fails it with probability 1 - 0.9**18, about 0.85; one
    wrong throughout, always)."""
    # The standard library's generator: numpy.random is not imported yet at a new process's first
    # search, and importing it cost that search 30 ms.
    picked = sorted({0, len(pks) - 1, *(random.randrange(len(pks)) for _ in range(samples))})
    stmt = tenant.select(vectors_t, vectors_t.c.item_pk, vectors_t.c.vector).where(
        vectors_t.c.kind == kind, vectors_t.c.item_pk.in_([int(pk) for pk in pks[picked]])
    )
    stored: dict[int, bytes] = {int(pk): bytes(vector) for pk, vector in conn.execute(stmt)}
    return all(stored.get(int(pks[at])) == rows.raw(int(at), int(at) + 1) for at in picked)
