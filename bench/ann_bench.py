"""The approximate vector index against the exact scan and chromadb's HNSW, on real MiniLM vectors.

    python bench/ann_bench.py                       # 10k, 20k, 50k, 100k; chromadb and end to end at 100k
    python bench/ann_bench.py --sizes 10000,20000 --no-chroma --no-e2e

1. Vector search, top-10, one query: memlens's exact scan (the baseline), its approximate index
   (built on one thread as the store builds it, candidates re-ranked from the float32 matrix),
   and at the largest size chromadb's HNSW; recall@10 against the exact scan, memory as a
   multiple of the raw float32 vectors.
2. Memory of a fresh process loading the largest tenant: the matrix, then the matrix and index.
3. ``recall()`` end to end at the largest size, the query encoded by the model inside the call:
   vector and hybrid, with the index off and on, alternating query by query.

The corpus vectors are the real model's, computed once and cached (bench/corpus.py).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import embeddings, memories, queries  # noqa: E402
from recall_ab import Lookup, pct  # noqa: E402
from recall_bench import table  # noqa: E402

from store import MemoryStore, testing  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402
from store.recall import approximate  # noqa: E402
from store.recall.approximate import ApproximateIndex  # noqa: E402
from store.recall.vectors import top_k  # noqa: E402

QUERIES = 200
TENANT = "bench"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def timed(fn, items) -> tuple[list[float], list]:
    times, out = [], []
    for item in items:
        start = time.perf_counter()
        out.append(fn(item))
        times.append(time.perf_counter() - start)
    return times, out


def recall_at_10(found: list[np.ndarray], exact: list[set]) -> float:
    return statistics.mean(len(set(f.tolist()) & e) / 10 for f, e in zip(found, exact, strict=True))


def search_rows(n: int, vectors: np.ndarray, query_vectors: np.ndarray, chroma: bool) -> list[list[str]]:
    matrix = np.ascontiguousarray(vectors[:n])
    for q in query_vectors[:20]:
        top_k(matrix, q, 10)
    t_exact, exact = timed(lambda q: top_k(matrix, q, 10)[0], query_vectors)
    exact_sets = [set(e.tolist()) for e in exact]
    start = time.perf_counter()
    index = ApproximateIndex(matrix.shape[1])
    index.extend(matrix, approximate.BUILD_STEP, lambda: True)
    build = time.perf_counter() - start
    for q in query_vectors[:20]:
        index.top_k(matrix, q, 10)
    t_approx, found = timed(lambda q: index.top_k(matrix, q, 10)[0], query_vectors)
    memory = (matrix.nbytes + index.memory_bytes) / matrix.nbytes
    base = pct(t_exact, 50)
    rows = [
        [f"{n:,}", "exact scan (baseline)", "-", ms(base), ms(pct(t_exact, 95)), "1.000", "1.00x", "1.00x"],
        [
            f"{n:,}",
            "approximate, re-ranked exactly",
            f"{build:.1f} s",
            ms(pct(t_approx, 50)),
            ms(pct(t_approx, 95)),
            f"{recall_at_10(found, exact_sets):.3f}",
            f"{memory:.2f}x",
            f"{pct(t_approx, 50) / base:.2f}x",
        ],
    ]
    index = None  # frees the graph before the chromadb row is measured
    gc.collect()
    if chroma:
        rows.append(chroma_row(n, matrix, query_vectors, exact_sets, base, pct(t_approx, 50)))
    return rows


def chroma_row(n, matrix, query_vectors, exact_sets, exact_p50, approx_p50) -> list[str]:
    try:
        import chromadb
    except ImportError:
        return [f"{n:,}", "chromadb (not installed: pip install -e '.[bench]')"] + ["-"] * 6
    client = chromadb.EphemeralClient()
    collection = client.create_collection(f"ann{n}", metadata={"hnsw:space": "cosine"})
    start = time.perf_counter()
    for i in range(0, n, 5000):
        collection.add(ids=[str(j) for j in range(i, min(n, i + 5000))], embeddings=matrix[i : i + 5000].tolist())
    ingest = time.perf_counter() - start
    for q in query_vectors[:20]:
        collection.query(query_embeddings=[q.tolist()], n_results=10)
    times, answers = timed(lambda q: collection.query(query_embeddings=[q.tolist()], n_results=10)["ids"][0], query_vectors)
    found = [np.array([int(i) for i in a]) for a in answers]
    client.delete_collection(f"ann{n}")
    p50 = pct(times, 50)
    return [
        f"{n:,}",
        f"chromadb HNSW (approximate / chromadb p50: {approx_p50 / p50:.2f}x)",
        f"{ingest:.1f} s (ingest)",
        ms(p50),
        ms(pct(times, 95)),
        f"{recall_at_10(found, exact_sets):.3f}",
        "-",
        f"{p50 / exact_p50:.2f}x",
    ]


MEMORY_PROBE = r"""
import os, sys
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/bench")
from recall_ab import Lookup
from store import MemoryStore, testing
from store.recall import approximate
import usearch.index  # its code is not per-vector memory: loaded before the first reading

def rss(field="VmRSS"):  # VmHWM: the peak (ru_maxrss would count the parent's, from before exec)
    return int(open("/proc/self/status").read().split(field + ":")[1].split()[0]) * 1024

os.environ[approximate.MIN_ROWS_ENV] = "0"
s = MemoryStore.open(sys.argv[2], embedder=Lookup([], []))
s.recall("", user_id="bench")
before = rss()
s.warm_vectors(user_id="bench")
matrix = rss()
os.environ[approximate.MIN_ROWS_ENV] = str(approximate.DEFAULT_MIN_ROWS)
s.warm_vectors(user_id="bench")
assert testing.vector_cache(s).settle(timeout=3600) and testing.vector_cache(s).index_failure is None
both = rss()
peak = rss("VmHWM")
print(before, matrix, both, peak)
"""


def memory_rows(db: Path, n: int) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(ROOT), str(db)], capture_output=True, text=True, check=True)
    before, matrix, both, peak = (int(x) for x in out.stdout.split())
    raw = n * 384 * 4
    return [
        ["raw float32 vectors", f"{raw / 2**20:.0f}", "1.00x"],
        ["growth: matrix loaded (exact search)", f"{(matrix - before) / 2**20:.0f}", f"{(matrix - before) / raw:.2f}x"],
        ["growth: matrix + approximate index", f"{(both - before) / 2**20:.0f}", f"{(both - before) / raw:.2f}x (target < 2x)"],
        ["peak growth (during the load and the build)", f"{(peak - before) / 2**20:.0f}", f"{(peak - before) / raw:.2f}x"],
    ]


def e2e_rows(db: Path, n: int, query_texts: list[str]) -> list[list[str]]:
    real = LocalModelEmbedder()
    real.warm()
    store = MemoryStore.open(db, embedder=real)
    store.warm_vectors(user_id=TENANT)
    assert testing.vector_cache(store).settle(timeout=3600) and testing.vector_cache(store).index_failure is None
    results: dict[tuple[str, str], list[float]] = {}
    for mode in ("vector", "hybrid"):
        for q in query_texts[:10]:
            store.recall(q, user_id=TENANT, limit=10, mode=mode)
        for q in query_texts:
            for index in ("off", "on"):  # alternating, so a change of load hits both alike
                os.environ[approximate.MIN_ROWS_ENV] = "0" if index == "off" else str(approximate.DEFAULT_MIN_ROWS)
                start = time.perf_counter()
                store.recall(q, user_id=TENANT, limit=10, mode=mode)
                results.setdefault((mode, index), []).append(time.perf_counter() - start)
    store.close()
    os.environ.pop(approximate.MIN_ROWS_ENV, None)
    rows = []
    for mode, target in (("vector", None), ("hybrid", 15)):
        off, on = results[(mode, "off")], results[(mode, "on")]
        for label, t in (("exact scan", off), ("approximate index", on)):
            p95 = pct(t, 95) * 1000
            met = "-" if target is None else ("yes" if p95 <= target else f"NO ({p95 / target:.2f}x)")
            rows.append(
                [
                    f"{n:,}",
                    f"recall(), {mode}, {label}",
                    ms(pct(t, 50)),
                    ms(pct(t, 95)),
                    f"{pct(t, 50) / pct(off, 50):.2f}x",
                    "-" if target is None else f"p95 <= {target} ms",
                    met,
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,20000,50000,100000")
    parser.add_argument("--no-chroma", action="store_true")
    parser.add_argument("--no-e2e", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    largest = max(sizes)
    texts = memories(100_000)
    vectors = embeddings(texts, Lookup([], []), cache_dir() / "bench")
    query_texts = queries(QUERIES)
    query_vectors = embeddings(query_texts, Lookup([], []), cache_dir() / "bench")
    print("# approximate vector index benchmark\n")
    print(f"machine: {os.cpu_count()} cores, load before {os.getloadavg()[0]:.1f}; real MiniLM vectors (384-d), {QUERIES} queries")
    rows = []
    for n in sizes:
        rows += search_rows(n, vectors, query_vectors, chroma=not args.no_chroma and n == largest)
    table(
        "Vector search, top-10, one query (ratio: p50 against the exact scan of the same size)",
        ["vectors", "method", "build", "p50", "p95", "recall@10", "memory / raw", "ratio"],
        rows,
    )
    if not args.no_e2e:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "ann.db"
            with MemoryStore.open(db, embedder=Lookup(texts[:largest], vectors[:largest])) as s:
                for start in range(0, largest, 10_000):
                    s.remember_many([{"input": t} for t in texts[start : min(largest, start + 10_000)]], user_id=TENANT)
            table(f"Memory, a fresh process loading {largest:,} vectors", ["what", "MiB", "of raw"], memory_rows(db, largest))
            table(
                "recall() end to end, model warm, query encoded inside the call (ratio: p50 against the index off)",
                ["episodes", "what", "p50", "p95", "ratio", "target", "met"],
                e2e_rows(db, largest, query_texts),
            )
    print(f"\nload after the run {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
