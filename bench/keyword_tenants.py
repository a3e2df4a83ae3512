"""Keyword search over a tenant's own BM25 statistics, against FTS5's index-wide ranking, in a
store shared by two tenants.

    python bench/keyword_tenants.py               # 100k episodes for alice, 200 for bob, SQLite
    python bench/keyword_tenants.py --episodes 20000

The store holds alice's episodes and bob's few, so alice's keyword searches are ranked over her
own statistics (``store/backend/sqlite/tenant_bm25.py``). The baseline, in the same run and the
same process, is the same searches ranked by FTS5's ``bm25()`` over the whole index, as while
one tenant holds every episode: the keyword index is handed no statistics for those rounds.
Rounds alternate between the two, so a change of load hits both. Timed: each query typed
keystroke by keystroke (every prefix searched, as the inspector does), with the statistics kept;
and the first search after another tenant's commit, which counts them again.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import MemoryStore, testing  # noqa: E402

WORDS = ["invoice", "berlin", "trip", "book", "table", "friday", "birthday", "present", "ideas", "passport"]
QUERIES = ["invoice for the berlin trip", "book a table for friday", "birthday present ideas", "cannot find my passport", "w17 w2301"]


def build(path: Path, episodes: int) -> None:
    rng = random.Random(3)
    vocabulary = [f"w{i}" for i in range(3000)] + WORDS
    weights = [1.0] * 3000 + [40.0] * 10
    rows = [{"input": " ".join(rng.choices(vocabulary, weights, k=rng.randint(5, 25))), "output": "ok"} for _ in range(episodes)]
    with MemoryStore.open(path, embedder=None) as store:
        for start in range(0, len(rows), 10_000):
            store.remember_many(rows[start : start + 10_000], user_id="alice")
        store.remember_many([{"input": f"bob's note {i} about an invoice", "output": "ok"} for i in range(200)], user_id="bob")


def keystrokes(store: MemoryStore) -> list[float]:
    times = []
    for query in QUERIES:
        for end in range(1, len(query) + 1):
            start = time.perf_counter()
            store.recall(query[:end], user_id="alice", mode="keyword", limit=10, prefix=True)
            times.append((time.perf_counter() - start) * 1000)
    return times


def after_commits(store: MemoryStore, rounds: int) -> list[float]:
    times = []
    for i in range(rounds):
        store.remember(f"bob writes {i}", user_id="bob")
        start = time.perf_counter()
        store.recall(QUERIES[i % len(QUERIES)], user_id="alice", mode="keyword", limit=10)
        times.append((time.perf_counter() - start) * 1000)
    return times


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tenants.db"
        build(path, args.episodes)
        with MemoryStore.open(path, embedder=None) as store:
            index = testing.keyword_index(store)
            own = index.statistics  # type: ignore[attr-defined]
            results: dict[str, dict[str, list[float]]] = {"index-wide": {"keys": [], "after": []}, "own": {"keys": [], "after": []}}
            for round_ in range(args.rounds):
                for name in ("index-wide", "own") if round_ % 2 == 0 else ("own", "index-wide"):
                    index.statistics = own if name == "own" else _IndexWide(own)  # type: ignore[attr-defined]
                    keystrokes(store)  # warm: the statistics and the pages these searches read
                    results[name]["keys"] += keystrokes(store)
                    results[name]["after"] += after_commits(store, 5)
            index.statistics = own  # type: ignore[attr-defined]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# keyword search in a shared store: {args.episodes:,} episodes for alice, 200+ for bob, {args.rounds} rounds")
    print(f"\nmachine load average after the run: {load}\n")
    print("| what | calls | p50 | p95 | ratio to index-wide (p50 / p95) |")
    print("|---|---|---|---|---|")
    for label, key in (("every keystroke, statistics kept", "keys"), ("first search after a commit", "after")):
        base = results["index-wide"][key]
        for name in ("index-wide", "own"):
            times = results[name][key]
            ratio = f"{statistics.median(times) / statistics.median(base):.2f}x / {p(times, 0.95) / p(base, 0.95):.2f}x"
            print(f"| {label}, {name} | {len(times)} | {statistics.median(times):.2f} ms | {p(times, 0.95):.2f} ms | {ratio} |")


class _IndexWide:
    """Statistics that say "FTS5's are the tenant's own": the keyword index then ranks by bm25().
    The store-wide match counts (which words are rare) are the real ones, as both ways ask them."""

    def __init__(self, own: object) -> None:
        self._own = own

    def totals(self, tenant: object) -> None:
        return None

    def capped_matches(self, items: list[str], cap: int) -> list[int]:
        return self._own.capped_matches(items, cap)  # type: ignore[attr-defined, no-any-return]


if __name__ == "__main__":
    main()
