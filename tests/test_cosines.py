"""Every recall path gives a row the same score to the last bit: the exact scan, the approximate
index's re-rank (over a subset of rows) and its exact scan of the rows it does not cover yet.
BLAS's matrix-vector product does not: it rounds a row differently in a whole matrix and in a
slice of it (67 of 2,600 rows here), so one memory could score differently by path and an
exact tie could fall either way."""

from __future__ import annotations

import numpy as np

from store.recall.approximate import ApproximateIndex
from store.recall.cosines import cosines
from store.recall.vectors import top_k


def unit_rows(rows: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_a_row_scores_the_same_bits_in_the_whole_matrix_and_in_any_subset():
    matrix = unit_rows(5000, 384, seed=1)
    rng = np.random.default_rng(2)
    for q in matrix[:20]:
        whole = cosines(matrix, q)
        picked = rng.integers(0, len(matrix), 60)
        assert np.array_equal(cosines(matrix[picked], q), whole[picked])
        assert np.array_equal(cosines(matrix[700:], q), whole[700:])


def test_the_exact_scan_and_the_approximate_path_report_the_same_scores():
    matrix = unit_rows(3000, 64, seed=3)
    index = ApproximateIndex(64)
    index.extend(matrix[:2000], 512, lambda: True)  # the last 1,000 rows are scanned exactly
    for q in matrix[::150] + np.float32(0.01):
        whole = cosines(matrix, q)
        best, scores = top_k(matrix, q, 10)
        assert np.array_equal(scores, whole[best])
        found, found_scores = index.top_k(matrix, q, 10)
        assert np.array_equal(found_scores, whole[found])
