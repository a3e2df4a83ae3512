"""Forget benchmark: erasing one tenant, step by step, as the store grows.

    python bench/forget_bench.py            # stores of 10k, 100k and 1M episodes (building 1M takes minutes)
    python bench/forget_bench.py --quick    # 10k and 100k

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
