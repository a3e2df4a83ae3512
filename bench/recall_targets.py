"""Issue 13's recall latency targets at 100k episodes in one tenant, with the real model.

    python bench/recall_targets.py               # 100k episodes
    python bench/recall_targets.py --size 10000

- hybrid ``recall()`` p95 <= 15 ms, the query encoded by the model inside the call (not looked up);
- keyword-only ``recall(prefix=True)`` p95 <= 10 ms over every keystroke of search-as-you-type:
  each query typed one character at a time, every prefix searched.

The query encoding alone is timed in the same run as the baseline the hybrid figure is read against.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import embeddings, memories, queries  # noqa: E402
from recall_ab import Lookup, pct  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402


def timed(calls) -> list[float]:
    out = []
    for call in calls:
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--typed", type=int, default=40, help="queries typed keystroke by keystroke")
    args = parser.parse_args()
    texts = memories(100_000)[: args.size]
    vectors = embeddings(memories(100_000), Lookup([], []), cache_dir() / "bench")[: args.size]
    query_texts = queries(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "targets.db"
        with MemoryStore.open(db, embedder=Lookup(texts, vectors)) as store:
            for start in range(0, len(texts), 10_000):
                store.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id="bench")
        real = LocalModelEmbedder()
        real.warm()
        store = MemoryStore.open(db, embedder=real)
        store.warm_vectors(user_id="bench")
        for q in query_texts[:10]:
            store.recall(q, user_id="bench", limit=10)
        encode = timed([lambda q=q: real.embed([q]) for q in query_texts])
        hybrid = timed([lambda q=q: store.recall(q, user_id="bench", limit=10) for q in query_texts])
        typed = [q[:i] for q in query_texts[: args.typed] for i in range(1, len(q) + 1)]
        keys = timed([lambda t=t: store.recall(t, user_id="bench", limit=10, mode="keyword", prefix=True) for t in typed])
        store.close()
    print(f"# recall targets, {args.size:,} episodes in one tenant\n")
    print(f"machine: {os.cpu_count()} cores, load after the run {os.getloadavg()[0]:.1f}; model {real.name} via {real.active_backend}\n")
    print("| what | calls | p50 | p95 | target | met |")
    print("|---|---|---|---|---|---|")
    rows = [
        ("query encode alone (onnx)", encode, None),
        ("recall(), hybrid, encode included", hybrid, 15),
        ("recall(), keyword, prefix, every keystroke", keys, 10),
    ]
    for what, t, target in rows:
        p95 = pct(t, 95) * 1000
        met = "-" if target is None else ("yes" if p95 <= target else f"NO ({p95 / target:.2f}x)")
        print(f"| {what} | {len(t)} | {pct(t, 50) * 1000:.2f} ms | {p95:.2f} ms | {'-' if target is None else f'p95 <= {target} ms'} | {met} |")


if __name__ == "__main__":
    main()
