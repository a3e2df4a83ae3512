"""What the recall trace costs a recall: hybrid recall's latency on one store of N episodes, with
tracing off (the baseline) and on, measured in the same run, in alternating rounds so machine
noise falls on both alike.

    python bench/trace_bench.py                      # one tenant of 100,000 episodes (vectors cached by recall_bench)
    python bench/trace_bench.py --episodes 10000     # quicker
    python bench/trace_bench.py --tenants 2000       # the same episodes over 2,000 small tenants, each recall in another

The store is built once per size and cached in bench/.cache/trace/. Each round runs the queries
in a fresh process on a copy of the store with tracing off, and in another on a second copy with
it on (which goes first alternates), each after a warming pass; the traced copy keeps its traces
from round to round, so the writer trims them to the default 1,000 per tenant as in use. Prints
one table; the ratios are the traced p50 and p95 over the untraced ones of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
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


def tenant_of(i: int, tenants: int) -> str:
    return "bench" if tenants == 1 else f"bench-{i % tenants}"


def built(n: int, tenants: int, embedder) -> Path:
    path = HERE / ".cache" / "trace" / (f"episodes-{n}.db" if tenants == 1 else f"episodes-{n}-tenants-{tenants}.db")
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    for leftover in partial.parent.glob(partial.name + "*"):
        leftover.unlink()
    texts = memories(n)
    print(f"building a store of {n:,} episodes over {tenants:,} tenants in {path} (once)", file=sys.stderr, flush=True)
    with MemoryStore.open(partial, embedder=embedder, trace=False) as store:
        for t in range(tenants):
            mine = texts[t::tenants]
            for start in range(0, len(mine), 10_000):
                store.remember_many([{"input": text} for text in mine[start : start + 10_000]], user_id=tenant_of(t, tenants))
    partial.rename(path)
    return path


def measure(path: Path, tracing: bool, embedder, asked: list[tuple[str, str]], passes: int) -> tuple[list[float], int]:
    """In a process of its own: each query's recall ``passes`` times, after one warming pass."""
    with MemoryStore.open(path, embedder=embedder, trace=tracing) as store:
        for q, user in asked:  # warm: every tenant's vectors in memory, the model, the writer thread
            store.recall(q, user_id=user, limit=10)
        times = []
        for _ in range(passes):
            for q, user in asked:
                start = time.perf_counter()
                store.recall(q, user_id=user, limit=10)
                times.append(time.perf_counter() - start)
        kept = sum(len(store.recall_traces(user_id=user, limit=None)) for user in {u for _, u in asked}) if tracing else 0
    return times, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--passes", type=int, default=2, help="passes over the queries in each round's process")
    parser.add_argument("--tenants", type=int, default=1, help="spread the episodes over this many tenants")
    parser.add_argument("--child", choices=["off", "on"], help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    real = LocalModelEmbedder()
    texts, query_texts = memories(args.episodes), queries(QUERIES)
    cache = cache_dir() / "bench"
    vectors = embeddings(texts, real, cache)  # 100,000: the vectors recall_bench caches
    embedder = PrecomputedEmbedder(real, texts + query_texts, np.vstack([vectors, embeddings(query_texts, real, cache)]))
    asked = [(q, tenant_of(i, args.tenants)) for i, q in enumerate(query_texts)]
    if args.child:
        found, kept = measure(args.path, args.child == "on", embedder, asked, args.passes)
        print(json.dumps({"times": found, "kept": kept}))
        return
    path = built(args.episodes, args.tenants, embedder)
    # Each on its own copy, measured in a process of its own: the traced store's writes (and its
    # writer thread) must not touch the baseline's caches or share its interpreter.
    # The copies go with the folder, even when a round fails.
    with tempfile.TemporaryDirectory(prefix="trace-bench-") as folder:
        workdir = Path(folder)
        copies = {False: workdir / "off.db", True: workdir / "on.db"}
        for copy in copies.values():
            shutil.copyfile(path, copy)
        times: dict[bool, list[float]] = {False: [], True: []}
        kept = 0
        for round_ in range(args.rounds):
            for tracing in (False, True) if round_ % 2 == 0 else (True, False):  # neither always goes first
                command = [sys.executable, __file__, "--episodes", str(args.episodes), "--tenants", str(args.tenants)]
                command += ["--passes", str(args.passes), "--child", "on" if tracing else "off", "--path", str(copies[tracing])]
                done = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
                times[tracing] += done["times"]
                kept = max(kept, done["kept"])
    base50, base95 = pct(times[False], 50), pct(times[False], 95)
    rows = []
    for tracing in (False, True):
        p50, p95 = pct(times[tracing], 50), pct(times[tracing], 95)
        name = "tracing on" if tracing else "tracing off (baseline)"
        rows.append([name, f"{p50 * 1000:.2f} ms", f"{p95 * 1000:.2f} ms", f"{p50 / base50:.3f}x", f"{p95 / base95:.3f}x"])
    load = os.getloadavg()[0]
    table(
        f"Hybrid recall at {args.episodes:,} episodes over {args.tenants:,} tenants, {len(times[False]):,} recalls each, load {load:.1f} "
        f"({kept:,} traces kept)",
        ["store", "p50", "p95", "p50 ratio", "p95 ratio"],
        rows,
    )


if __name__ == "__main__":
    main()
