"""The one way every recall path scores rows against a query vector.

``np.einsum("ij,j->i")`` runs numpy's own single-threaded loop, not BLAS. ``matrix @ query`` is
OpenBLAS's sgemv, which at 100k rows spreads over both cores and then waits for a core when
another process holds one. Measured here (2 cores, load 4-5, 100k x 384 MiniLM vectors, 100
queries, both in one run): matmul 30-44 ms p50 / 58-72 ms p95 wall and 18.5 ms of CPU per scan,
einsum 9-13 ms / 24-28 ms wall and 7.4-8.0 ms of CPU; at 10k, matmul's p95 was 17-25 ms (its
threads waking behind the load) against einsum's 1.3-5 ms. With ``OPENBLAS_NUM_THREADS=1``
matmul still took 14 ms of CPU at 100k, so the gain is the loop, not only the threads; and the
environment variable would have to be set before numpy is imported, which a library cannot do.
At load 11, 400 queries interleaved: at 2k / 10k / 20k rows matmul took 44 / 37 / 35 ms p50 wall
(its threads queued behind the load), einsum 0.23 / 0.72 / 1.6 ms. What einsum gives up is the
best case on an idle machine: the fastest matmul of 10k rows took 0.26 ms, einsum's 0.56 ms.

einsum gives each row the same bits whether it is scored in the whole matrix or in any subset of
rows (checked on 50 queries x 100k rows), so the exact scan, the approximate index's re-rank and
the cosines filled in for keyword-only candidates always agree on a row's score.
"""

from __future__ import annotations

import numpy as np


def cosines(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The dot product of each row with ``query`` (vectors are normalised: their cosine)."""
    scores: np.ndarray = np.einsum("ij,j->i", rows, query)
    return scores
