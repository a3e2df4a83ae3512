"""A large tenant's float32 rows with the saved ones left on disk, read a row at a time when asked.

A process that maps a tenant's saved approximate index also opens the float32 rows saved beside
it: the index re-ranks its ~50 candidates from them and fills in a few cosines, so a search reads
a few dozen rows. Reading the whole matrix into memory instead took 0.6-1.0 s at 100k rows and
grew the process by 1.2x the raw vectors before its first search (bench/opening_bench.py).

The rows are read with ``pread``, not memory-mapped: on this machine's kernel (6.18, ext4, whose
page cache holds large folios) touching one mapped row mapped about half a megabyte around it
into the process, with or without ``MADV_RANDOM``, so 200 random rows grew the resident set by
102-107 MB, and 50 searches by the whole file. Rows read stay in the kernel's page cache, shared
and reclaimable, not in the process. Rows added since the save are in memory.
"""

from __future__ import annotations

import os
import weakref
from typing import BinaryIO

import numpy as np

from .cosines import cosines

# Rows read per pread when many are wanted in order (a full scan or a copy): 6 MB at 384 dims.
_SPAN = 4096


class RowsFile:
    """Rows ``0..rows`` of a raw float32 file of ``dim`` columns, read on demand through ``handle``,
    which stays open (a newer save may unlink the file; it still reads)."""

    def __init__(self, handle: BinaryIO, rows: int, dim: int) -> None:
        self.handle, self.rows, self.dim = handle, rows, dim
        self._row_bytes = dim * 4
        # Closed with the last search or save holding these rows, not with the matrix that
        # started from them: a search under way may outlive the matrix.
        weakref.finalize(self, handle.close)

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, positions: np.ndarray) -> np.ndarray:
        """The rows at ``positions``, in that order."""
        wanted = np.asarray(positions, dtype=np.int64).tolist()
        out = np.empty((len(wanted), self.dim), dtype=np.float32)
        for i, at in enumerate(wanted):
            if not 0 <= at < self.rows:
                raise IndexError(f"row {at} of {self.rows}")
            out[i] = np.frombuffer(self._read(at * self._row_bytes, self._row_bytes), dtype=np.float32)
        return out

    def span(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start..stop``."""
        return np.frombuffer(self.raw(start, stop), dtype=np.float32).reshape(stop - start, self.dim)

    def raw(self, start: int, stop: int) -> bytes:
        """The bytes of rows ``start..stop``, as saved."""
        if not 0 <= start <= stop <= self.rows:
            raise IndexError(f"rows {start}..{stop} of {self.rows}")
        return self._read(start * self._row_bytes, (stop - start) * self._row_bytes)

    def _read(self, offset: int, size: int) -> bytes:
        block = os.pread(self.handle.fileno(), size, offset)
        if len(block) != size:
            raise OSError("the saved rows' file is shorter than it was when checked")
        return block

    def scores(self, query: np.ndarray) -> np.ndarray:
        """:func:`cosines` of every row, a span at a time."""
        parts = [cosines(self.span(start, min(self.rows, start + _SPAN)), query) for start in range(0, self.rows, _SPAN)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


class SplitRows:
    """Rows ``0..len(head)`` from a saved file, then ``tail`` in memory: indexed like a matrix (a
    slice or an array of positions gives a float32 ndarray)."""

    def __init__(self, head: RowsFile, tail: np.ndarray) -> None:
        self.head = head
        self.tail = tail

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    def __getitem__(self, key: slice | np.ndarray) -> np.ndarray:
        split = len(self.head)
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                raise ValueError("split rows are sliced in order")
            stop = max(start, stop)
            if stop <= split:
                return self.head.span(start, stop)
            if start >= split:
                return self.tail[start - split : stop - split]
            return np.concatenate([self.head.span(start, split), self.tail[: stop - split]])
        positions = np.asarray(key, dtype=np.int64)
        rows = np.empty((len(positions), self.head.dim), dtype=np.float32)
        saved = positions < split
        rows[saved] = self.head[positions[saved]]
        rows[~saved] = self.tail[positions[~saved] - split]
        return rows


# A tenant's float32 rows: one matrix in memory, or saved and in memory.
Rows = np.ndarray | SplitRows


def scores(rows: Rows, query: np.ndarray) -> np.ndarray:
    """:func:`cosines` of every row, split rows' in their parts (each row scores the same bits
    wherever it lies: einsum's loop is per row)."""
    if isinstance(rows, SplitRows):
        return np.concatenate([rows.head.scores(query), cosines(rows.tail, query)])
    return cosines(rows, query)


def write_rows(rows: Rows, upto: int, out: BinaryIO) -> None:
    """Write rows ``0..upto`` as raw float32 to ``out``: the saved part copied from its file, the
    rest from memory, a span at a time (never the whole matrix as one transient buffer)."""
    start = 0
    if isinstance(rows, SplitRows):
        saved = min(upto, len(rows.head))
        for begin in range(0, saved, _SPAN):
            out.write(rows.head.raw(begin, min(saved, begin + _SPAN)))
        start = saved
    while start < upto:
        stop = min(upto, start + _SPAN)
        out.write(np.ascontiguousarray(rows[start:stop], dtype=np.float32).tobytes())
        start = stop
