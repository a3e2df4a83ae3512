"""Forget benchmark: erasing one tenant, step by step, as the store grows.

    python bench/forget_bench.py            # stores of 10k, 100k and 1M episodes (building 1M takes minutes)
    python bench/forget_bench.py --quick    # 10k and 100k
    python bench/forget_bench.py --keyword  # only keyword search over blocks and notes

The erased tenant holds 10k episodes (1k in the 10k store). Vectors are random 384-d
float32 (the erase cost does not depend on what they mean).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import MemoryStore  # noqa: E402
from store import audit, forget  # noqa: E402
from store.tenancy import Tenant  # noqa: E402
from store.validation import utcnow  # noqa: E402


class RandomEmbedder:
    name, dim, is_warm = "random-384", 384, True

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)

    def warm(self) -> None:
        pass

    def embed(self, texts):
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def build(path: Path, total: int, victim: int) -> MemoryStore:
    store = MemoryStore.open(path, embedder=RandomEmbedder())
    others = total - victim
    for user, count in (("victim", victim), *((f"user{i}", others // 9) for i in range(9))):
        for start in range(0, count, 10_000):
            n = min(10_000, count - start)
            store.remember_many(
                [{"input": f"{user} asked about item {start + i} and the weather", "output": f"reply {start + i} with some detail",
                  "session_id": f"s{i % 50}"} for i in range(n)],
                user_id=user,
            )
    store.scrub()
    return store


def erase_in_steps(store: MemoryStore) -> dict[str, float]:
    tenant, scope = Tenant("victim"), forget.Scope(Tenant("victim"), None, None)
    times = {}
    start = time.perf_counter()
    with store._db.write() as conn:
        counts = forget.delete(conn, scope)
        audit.record(conn, tenant, action="forget", actor="bench", scope={}, counts=counts, at=utcnow())
    times["delete rows (one transaction)"] = time.perf_counter() - start
    start = time.perf_counter()
    with store._db.write() as conn:
        forget.rewrite_keyword_indexes(conn)
    times["rewrite FTS5 indexes"] = time.perf_counter() - start
    start = time.perf_counter()
    with store._db.raw() as raw:
        assert forget.truncate_wal(raw)
    times["truncate WAL"] = time.perf_counter() - start
    times["total"] = sum(times.values())
    return times


# --- keyword search over blocks and notes -----------------------------------------------------------


def keyword_tables() -> None:
    """Keyword recall over scratchpad notes and blocks, which have no FTS index (BM25 in memory),
    against a plain Python pass that only splits the same texts into words, timed in the same run."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import random

    from corpus import memories

    from store.schema import scratch_t
    from store.search import _TOKEN, bm25_small
    from store.tiers.common import ensure_session

    rng = random.Random(5)
    notes = memories(3000)
    vocabulary = " ".join(memories(2000)).split()
    blocks = {f"block-{i}": " ".join(rng.choice(vocabulary) for _ in range(300)) for i in range(200)}
    ten_words = "hotel Lisbon train invoice laptop refund dentist birthday Maria report"
    ten_kb = " ".join(rng.choice(vocabulary) for _ in range(2000))[:10_000]
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.open(Path(tmp) / "keyword.db", embedder=None, scratchpad_limit=len(notes))
        now = utcnow()
        with store._db.write() as conn:  # 3,000 notes in one transaction, not 3,000
            session = ensure_session(conn, Tenant("u"), "s", now)
            conn.execute(scratch_t.insert(), [Tenant("u").stamp({"session_pk": session, "created_at": now, "content": n}) for n in notes])
        for name, content in blocks.items():
            store.update_block(name, content, user_id="u")
        cases = [
            ("3,000 notes, 10-word query", "scratchpad", ten_words, notes, 50),
            ("200 blocks, 10 KB query", "working", ten_kb, [f"{n}\n{c}" for n, c in blocks.items()], 100),
        ]
        for label, kind, query, texts, target in cases:
            documents = dict(enumerate(texts))
            plain = timed_ms(lambda: [_TOKEN.findall(t.lower()) for t in texts])
            ranking = timed_ms(lambda: bm25_small(query, documents, prefix_last=False))
            recall = timed_ms(lambda: store.recall(query, user_id="u", kind=kind, mode="keyword", limit=10))
            results[label] = (recall, target)
            base = plain[0]
            rows += [
                [label, "plain pass: split every text into words (baseline)", plain, base],
                [label, "bm25_small: rank every text", ranking, base],
                [label, "recall(), keyword only: read rows, rank", recall, base],
            ]
        store.close()
    print("\n# keyword search over blocks and scratchpad notes\n")
    print("| corpus | what | p50 | p95 | ratio (p50 against the plain pass) |")
    print("|---|---|---|---|---|")
    for label, what, (p50, p95), base in rows:
        print(f"| {label} | {what} | {p50:.1f} ms | {p95:.1f} ms | {p50 / base:.2f}x |")
    print()
    for label, ((p50, p95), target) in results.items():
        print(f"target: {label} in < {target} ms (recall p50): {p50:.1f} ms, {'met' if p50 < target else 'MISSED'}")


def timed_ms(fn, repeat: int = 21) -> tuple[float, float]:
    """p50 and p95 of ``repeat`` calls, in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keyword", action="store_true", help="only the keyword search tables")
    args = parser.parse_args()
    if args.keyword:
        keyword_tables()
        return
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for total in sizes:
            victim = min(10_000, total // 10)
            store = build(Path(tmp) / f"forget-{total}.db", total, victim)
            check = store.forget(user_id="victim", dry_run=True).counts["episodes"]
            assert check == victim
            results[total] = (victim, erase_in_steps(store))
            store.close()
    steps = list(next(iter(results.values()))[1])
    print("# memlens forget benchmark\n")
    print("| step | " + " | ".join(f"{t:,} episodes (erase {v:,})" for t, (v, _) in results.items()) + " |")
    print("|---|" + "---|" * len(results))
    for step in steps:
        print(f"| {step} | " + " | ".join(f"{r[step]:.3f} s" for _, r in results.values()) + " |")
    target = results.get(100_000)
    if target:
        print(f"\ntarget: erase 10k episodes in a 100k store in < 2 s: {target[1]['total']:.2f} s, {'met' if target[1]['total'] < 2 else 'MISSED'}")
    keyword_tables()


if __name__ == "__main__":
    main()
