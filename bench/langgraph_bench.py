"""LangGraph's long-term memory on memlens (``store.compat.langgraph.MemlensStore``) against
LangGraph's own SqliteStore and InMemoryStore, on the same operations in the same run.

Two shapes: one large user (``--items`` items in ``("memories", "u0")``) and many small ones
(``--users`` users of ``--per-user`` items each, every operation naming one user's namespace).
Per operation the median of its calls, in ms, and memlens's ratio to SqliteStore. The query
search is memlens's own (hybrid, its local model); LangGraph's stores here have no index (theirs
needs an embedding service), so that row has no baseline. The first query of a user embeds its
items; the row shows the queries after it. A last row times the calls of LangGraph's own
large-batch test (6,000 ``aput``, ``aget``, ``asearch``, ``alist_namespaces`` and ``adelete``
gathered at once) on ``AsyncSqliteStore`` and on ``MemlensStore``, the median of three rounds.

    python bench/langgraph_bench.py [--items 1000] [--users 200] [--per-user 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.store.sqlite import AsyncSqliteStore, SqliteStore  # noqa: E402

from store.compat.langgraph import MemlensStore  # noqa: E402

TOPICS = ["pizza", "Lisbon", "budget", "piano", "garden", "flight", "report", "coffee", "meeting", "hotel", "dentist"]


def text(i: int) -> dict[str, Any]:
    return {"text": f"memory {i}: about {TOPICS[i % len(TOPICS)]} and {TOPICS[(i * 7) % len(TOPICS)]}", "n": i % 10}


def median_ms(calls: list[Callable[[], Any]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(store: Any, namespaces: list[tuple[str, ...]], per: int, query: bool) -> dict[str, float]:
    out = {"put": median_ms([lambda ns=ns, i=i: store.put(ns, f"k{i}", text(i)) for ns in namespaces for i in range(per)])}
    out["get"] = median_ms([lambda ns=ns, i=i: store.get(ns, f"k{i}") for ns in namespaces[:200] for i in range(0, per, max(per // 5, 1))])
    out["search (filter)"] = median_ms([lambda ns=ns: store.search(ns, filter={"n": 3}, limit=10) for ns in namespaces[:50]])
    out["list_namespaces"] = median_ms([lambda: store.list_namespaces(prefix=("memories",), limit=100) for _ in range(5)])
    if query:
        for ns in namespaces[:20]:
            store.search(ns, query="warm up", limit=1)  # the user's first query embeds its items
        out["search (query)"] = median_ms(
            [lambda ns=ns, t=t: store.search(ns, query=f"{t} plans", limit=10) for ns in namespaces[:20] for t in TOPICS[:3]]
        )
    return out


async def gathered_seconds(store: Any) -> float:
    """LangGraph's test_large_batches_async: every call made at once."""
    calls = []
    for m in range(10):
        for i in range(100):
            ns = ("test", "foo", "bar", "baz", str(m % 2))
            calls += [store.aput(ns, f"key{i}", {"foo": f"bar{i}"}), store.aget(ns, f"key{i}")]
            calls += [store.alist_namespaces(max_depth=m + 1), store.asearch(("test",))]
            calls += [store.aput(ns, f"key{i}", {"foo": f"bar{i}"}), store.adelete(ns, f"key{i}")]
    start = time.perf_counter()
    await asyncio.gather(*calls)
    return time.perf_counter() - start


async def gathered(folder: str) -> tuple[float, float]:
    langgraph, ours = [], []
    for round_ in range(3):
        async with AsyncSqliteStore.from_conn_string(f"{folder}/gathered-{round_}.sqlite") as reference:
            await reference.setup()
            langgraph.append(await gathered_seconds(reference))
        with MemlensStore(Path(folder) / f"gathered-{round_}.db") as memlens_store:
            ours.append(await gathered_seconds(memlens_store))
    return statistics.median(langgraph) * 1000, statistics.median(ours) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--per-user", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    shapes = {
        f"one user, {args.items} items": ([("memories", "u0")], args.items),
        f"{args.users} users, {args.per_user} items each": ([("memories", f"u{n}") for n in range(args.users)], args.per_user),
    }
    print("| shape | operation | InMemoryStore ms | SqliteStore ms | MemlensStore ms | MemlensStore / SqliteStore |")
    print("|---|---|---|---|---|---|")
    for shape, (namespaces, per) in shapes.items():
        with tempfile.TemporaryDirectory() as folder:
            memory = measure(InMemoryStore(), namespaces, per, query=False)
            with SqliteStore.from_conn_string(f"{folder}/langgraph.sqlite") as sqlite_store:
                sqlite_store.setup()
                sqlite = measure(sqlite_store, namespaces, per, query=False)
            with MemlensStore(Path(folder) / "memlens.db", index={"fields": ["text"]}) as memlens_store:
                ours = measure(memlens_store, namespaces, per, query=True)
        for operation, ms in ours.items():
            base = sqlite.get(operation)
            ratio = f"{ms / base:.1f}x" if base else "—"
            other = f"{memory[operation]:.3f}" if operation in memory else "—"
            print(
                f"| {shape} | {operation} | {other} | {base:.3f} | {ms:.3f} | {ratio} |"
                if base
                else f"| {shape} | {operation} | — | — | {ms:.3f} | — |"
            )
    with tempfile.TemporaryDirectory() as folder:
        base, ms = asyncio.run(gathered(folder))
    print(f"| 6,000 async calls at once | all of them (AsyncSqliteStore) | — | {base:.3f} | {ms:.3f} | {ms / base:.1f}x |")


if __name__ == "__main__":
    main()
