"""What the recall trace costs a recall: hybrid recall's latency on one store of N episodes, with
tracing off (the baseline) and on, measured in the same run, in alternating rounds so machine
noise falls on both alike.

    python bench/trace_bench.py                      # 100,000 episodes (vectors cached by recall_bench)
    python bench/trace_bench.py --episodes 10000     # quicker

The store is built once per size and cached in bench/.cache/trace/. Each round runs every query
once untraced and once traced (each recall's trace is handed to the writer thread and written
beside the next recalls, as in use). The traced store's traces are trimmed to the default 1,000
per tenant as it goes, so later rounds pay the trimming too. Prints one table; the ratio is the
traced p95 over the untraced p95 of the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import PrecomputedEmbedder, embeddings, memories, queries  # noqa: E402
from recall_bench import pct, table  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402

HERE = Path(__file__).resolve().parent
QUERIES = 200


def built(n: int, embedder) -> Path:
    path = HERE / ".cache" / "trace" / f"episodes-{n}.db"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    for leftover in partial.parent.glob(partial.name + "*"):
        leftover.unlink()
    texts = memories(n)
    print(f"building a store of {n:,} episodes in {path} (once)", file=sys.stderr, flush=True)
    with MemoryStore.open(partial, embedder=embedder, trace=False) as store:
        for start in range(0, n, 10_000):
            store.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id="bench")
    partial.rename(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    real = LocalModelEmbedder()
    texts, query_texts = memories(args.episodes), queries(QUERIES)
    cache = cache_dir() / "bench"
    vectors = embeddings(texts, real, cache)  # 100,000: the vectors recall_bench caches
    embedder = PrecomputedEmbedder(real, texts + query_texts, np.vstack([vectors, embeddings(query_texts, real, cache)]))
    path = built(args.episodes, embedder)
    times: dict[bool, list[float]] = {False: [], True: []}
    with MemoryStore.open(path, embedder=embedder, trace=False) as plain, MemoryStore.open(path, embedder=embedder, trace=True) as traced:
        for q in query_texts[:20]:  # warm both: the vectors in memory, the model, the writer thread
            plain.recall(q, user_id="bench", limit=10)
            traced.recall(q, user_id="bench", limit=10)
        for _ in range(args.rounds):
            for tracing, store in ((False, plain), (True, traced)):
                for q in query_texts:
                    start = time.perf_counter()
                    store.recall(q, user_id="bench", limit=10)
                    times[tracing].append(time.perf_counter() - start)
        kept = len(traced.recall_traces(user_id="bench", limit=None))
    base50, base95 = pct(times[False], 50), pct(times[False], 95)
    rows = []
    for tracing in (False, True):
        p50, p95 = pct(times[tracing], 50), pct(times[tracing], 95)
        name = "tracing on" if tracing else "tracing off (baseline)"
        rows.append([name, f"{p50 * 1000:.2f} ms", f"{p95 * 1000:.2f} ms", f"{p50 / base50:.3f}x", f"{p95 / base95:.3f}x"])
    load = os.getloadavg()[0]
    table(
        f"Hybrid recall at {args.episodes:,} episodes, {len(times[False]):,} recalls each, load {load:.1f} ({kept:,} traces kept)",
        ["store", "p50", "p95", "p50 ratio", "p95 ratio"],
        rows,
    )


if __name__ == "__main__":
    main()
