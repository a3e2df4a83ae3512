"""An approximate index over a large tenant's matrix, whose candidates are re-ranked exactly.

Why it can never return an erased or replaced vector: the index belongs to one
:class:`~store.recall.vectors.TenantMatrix` object, its keys are row positions in that matrix,
and a matrix's rows never change once loaded (new rows are appended; any delete, replacement
or erasure anywhere makes the cache load a new matrix, which starts without an index). Every
candidate is then scored again from the matrix's float32 row, so the order and the scores are
exact among the candidates, and the rows the index does not cover yet (appended since it was
built) are scanned exactly, so a new row is found from the first search that loads it.

The graph holds int8 copies of the vectors (a quarter of the float32 bytes) and nothing else
the matrix already has: on 100k real MiniLM vectors (this machine, load 4-5) usearch's i8 HNSW
took 0.55x the raw float32 bytes and gave recall@10 1.000 after re-ranking 50 candidates at
expansion 128 (0.998 at 64), 0.29 ms p50, against a 7-8 ms exact scan. faiss's HNSW with an
8-bit scalar quantizer missed every true neighbour on some queries (recall@10 0.988 at any
expansion); hnswlib keeps float32 copies (1.09x more, over 2x in all with the matrix).

Builds run on one daemon thread per cache with one core (the other serves searches) and are
never waited for: until a tenant's index is built, its searches are exact.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import importlib.util
import os
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .cosines import cosines
from .split_rows import Rows

# Below this many rows a tenant is searched exactly: bench/ann_bench.py measured the exact
# scan at 10k rows at about half a millisecond, which an index cannot save much of, while a
# build costs seconds of a core and half as much memory again.
DEFAULT_MIN_ROWS = 20_000
MIN_ROWS_ENV = "MEMLENS_APPROXIMATE_MIN_ROWS"

CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
# Rows added per step of the first build (outside any lock: the index is not searched yet) and
# per step of a catch-up (under the index's lock, which a search then waits for: 64 rows take
# about 20 ms on one loaded core).
BUILD_STEP = 1024
CATCH_UP_STEP = 64
# Rows left outside the index before a catch-up is queued; scanning them exactly costs ~30 us.
CATCH_UP_AFTER = 512


# How long stopping a builder waits for its step to end: one step (BUILD_STEP rows) takes well
# under a second on a loaded core.
STOP_TIMEOUT_S = 10.0


def min_rows() -> int:
    """The size from which a tenant gets an approximate index (``MEMLENS_APPROXIMATE_MIN_ROWS``
    overrides; 0 turns the index off)."""
    value = os.environ.get(MIN_ROWS_ENV)
    try:
        return DEFAULT_MIN_ROWS if value is None else int(value)
    except ValueError:
        return DEFAULT_MIN_ROWS


@functools.cache
def available() -> bool:
    # Looked up, not imported: importing usearch takes ~140 ms, which the builder thread pays.
    return importlib.util.find_spec("usearch") is not None


def candidates_for(k: int) -> int:
    """How many candidates to re-rank for the best ``k``: at 100k, 50 candidates for 10 gave
    recall@10 1.000; twice ``k`` keeps the same margin for the deeper lists hybrid asks for."""
    return max(50, 2 * k)


def _usearch_index_class() -> Any:
    """usearch's ``Index``, imported so that onnxruntime can still be imported after it.

    usearch's Linux wheel links libstdc++ statically; when it is the first C++ library in the
    process, a later ``import onnxruntime`` (the query encoder, which loads the shared
    libstdc++) dies with SIGSEGV inside libstdc++ (reproduced with usearch 2.26.6 and
    onnxruntime 1.31.1: ``import usearch.compiled; import onnxruntime``). Loading the shared
    libstdc++ globally first lets both bind to it."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
        except OSError:  # a system without the shared library has nothing to conflict with
            pass
    from usearch.index import Index

    return Index


class ApproximateIndex:
    """An HNSW graph over the leading ``covered`` rows of one matrix, keyed by row position."""

    def __init__(self, dim: int, mapped_graph: Any = None) -> None:
        """A new, empty index; or one over a saved graph memory-mapped read-only (:meth:`opened`),
        which :meth:`extend` first copies into memory."""
        graph = mapped_graph
        if graph is None:
            graph = _usearch_index_class()(
                ndim=dim, metric="ip", dtype="i8", connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH
            )
        self._graph = graph
        self._mapped = mapped_graph is not None
        self._lock = threading.Lock()
        self.covered = int(graph.size)
        self.dim = dim

    @classmethod
    def opened(cls, path: str, dim: int) -> ApproximateIndex:
        """The graph saved at ``path``, memory-mapped, not read into memory. Raises ValueError for
        a file that is not a usearch index of this shape (the caller has checked its digest: a
        mapped file that changes under the process could crash it)."""
        graph = _usearch_index_class().restore(path, view=True)
        if graph is None or graph.ndim != dim or str(graph.dtype) != "ScalarKind.I8" or str(graph.metric) != "MetricKind.IP":
            raise ValueError(f"{path} is not an int8 inner-product index of {dim} dimensions")
        # The search expansion is not saved with the graph.
        graph.expansion_search = EXPANSION_SEARCH
        return cls(dim, graph)

    @property
    def memory_bytes(self) -> int:
        return int(self._graph.memory_usage)

    @property
    def mapped(self) -> bool:
        """Whether the graph is still the saved file, mapped read-only."""
        return self._mapped

    def save(self, path: str) -> None:
        """Write the graph to ``path`` (not while rows are being added)."""
        with self._lock:
            self._graph.save(path)

    def extend(self, matrix: Rows, step: int, keep_going: Callable[[], bool]) -> None:
        """Add the rows of ``matrix`` (whose rows never change) past ``covered``, ``step`` at a time,
        while ``keep_going()``."""
        upto = len(matrix)
        if self._mapped and self.covered < upto:
            # A mapped graph cannot grow: copy it into memory (outside the lock: searches go on
            # over the mapped one meanwhile), then swap.
            copy = self._graph.copy()
            copy.expansion_search = EXPANSION_SEARCH
            with self._lock:
                self._graph, self._mapped = copy, False
        while self.covered < upto and keep_going():
            end = min(upto, self.covered + step)
            with self._lock:
                self._graph.add(np.arange(self.covered, end, dtype=np.uint64), matrix[self.covered : end], threads=1)
                self.covered = end

    def top_k(self, matrix: Rows, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and cosines of the best ``k`` rows of ``matrix`` (this index's matrix,
        or a view of its first rows), best first."""
        size = len(matrix)
        if size == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        want = candidates_for(k)
        with self._lock:
            covered = min(self.covered, size)
            found = self._graph.search(query, want, threads=1).keys.astype(np.int64) if covered else np.zeros(0, np.int64)
        # The graph may hold rows appended after this view was taken: they are not ours.
        found = found[found < covered]
        if covered < size:
            tail = cosines(matrix[covered:size], query)
            depth = min(want, len(tail))
            found = np.concatenate([found, covered + np.argpartition(-tail, depth - 1)[:depth]])
        found = np.unique(found)
        scores = cosines(matrix[found], query)
        order = np.argsort(-scores, kind="stable")[:k]
        return found[order], scores[order]


class Builder:
    """Builds and extends indexes on one daemon thread while there is work.

    ``still_wanted(job)`` is asked before every step: a matrix dropped from the cache (an
    erasure, a reload, a closed store) stops its build there. :meth:`stop` (at ``close()``, and for
    every builder when the interpreter exits) stops the builds and waits for the thread: a process
    that exited while usearch was adding rows died with SIGABRT ("terminate called without an
    active exception"), its native worker thread torn down mid-step."""

    def __init__(self, still_wanted: Callable[[Any], bool]) -> None:
        self._still_wanted = still_wanted
        self._jobs: queue.Queue[Any] = queue.Queue()
        self._idle = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.stopped = False
        _LIVE.add(self)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop building (queued jobs are dropped, a running one ends after its step) and wait for
        the thread; later submits are ignored."""
        with self._idle:
            self.stopped = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def submit(self, job: Any, run: Callable[[], None]) -> None:
        with self._idle:
            if self.stopped:
                return
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="memlens-vector-index", daemon=True)
                self._thread.start()
        self._jobs.put((job, run))

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every queued build has finished or stopped (tests and benchmarks)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _loop(self) -> None:
        # The thread ends when nothing is queued (a closed store leaves no thread behind); a
        # submit counts its job before the check below can see zero, so none is left unserved.
        while True:
            with self._idle:
                if self._pending == 0:
                    self._thread = None
                    return
            job, run = self._jobs.get()
            try:
                if not self.stopped and self._still_wanted(job):
                    run()
            except Exception as exc:  # searches stay exact; the failure is kept for whoever looks
                self.failure = exc
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


_LIVE: weakref.WeakSet[Builder] = weakref.WeakSet()


@atexit.register
def _stop_builders() -> None:
    # atexit runs while daemon threads still do: each build ends after its step, before the
    # interpreter tears down what the native code is using.
    for builder in list(_LIVE):
        builder.stop()
