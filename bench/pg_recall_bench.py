"""PostgreSQL recall building blocks against the SQLite backend's baseline, in one run: exact
vector search (pgvector, the tenant's partition) and approximate search (HNSW on the tenant's
partition, with its recall@10 against exact) against a numpy float32 scan of the same vectors
(what the SQLite backend ranks with), and BM25 keyword search for a rare and a common word.

    python bench/pg_recall_bench.py              # tenants of 10k and 100k episodes
    python bench/pg_recall_bench.py --sizes 2000 # quicker

Vectors are random 384-d (search cost does not depend on what they mean; recall@10 of HNSW
on random vectors is a harder case than on real embeddings). One tenant is searched; a second
tenant of the same size shares the tables.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store.backend.postgres import ddl, partitions, vectors  # noqa: E402
from store.backend.postgres import engine as pg_engine
from store.backend.postgres.keyword import PostgresKeywordIndex  # noqa: E402
from store.tenancy import Tenant  # noqa: E402

DIM = 384
QUERIES = 50
WORDS = [
    "memory",
    "agent",
    "tool",
    "answer",
    "question",
    "plan",
    "user",
    "coffee",
    "travel",
    "budget",
    "meeting",
    "report",
    "code",
    "review",
]


def load(engine, tenant: Tenant, n: int, offset: int, rng) -> np.ndarray:
    matrix = rng.standard_normal((n, DIM)).astype(np.float32)
    with engine.begin() as conn:
        raw = conn.connection.driver_connection
        with raw.cursor().copy(
            "COPY episodes (pk, id, user_id, occurred_at, input, output, tool_calls, metadata, content_hash) FROM STDIN"
        ) as cp:
            for i in range(n):
                rare = f" zebra{i}" if i % 997 == 0 else ""
                cp.write_row((offset + i, f"e{i}", tenant.key, i, " ".join(rng.choice(WORDS, 30)) + rare, "ok", "[]", "{}", "h"))
        with raw.cursor().copy("COPY vectors (kind, item_pk, user_id, content_hash, vector) FROM STDIN") as cp:
            for i in range(n):
                cp.write_row(("episode", offset + i, tenant.key, "h", "[" + ",".join(map(repr, matrix[i].tolist())) + "]"))
    return matrix


def timed(fn, runs: int) -> tuple[float, float, list]:
    times, results = [], []
    for i in range(runs):
        started = time.perf_counter()
        results.append(fn(i))
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1], results


def run(uri: str, sizes: list[int]) -> None:
    engine = pg_engine.create(uri)
    rng = np.random.default_rng(3)
    index = PostgresKeywordIndex()
    rows = []
    keyword_rows = []
    for round_, n in enumerate(sizes):
        me, other = Tenant(f"a{n}"), Tenant(f"b{n}")
        with engine.begin() as conn:
            if round_ == 0:
                ddl.migrate(conn, dim=DIM)
        for t in (me, other):
            partitions.ensure(engine, t)
        started = time.perf_counter()
        matrix = load(engine, me, n, round_ * 10_000_000, rng)
        load(engine, other, n, round_ * 10_000_000 + 5_000_000, rng)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
        print(f"{n}: loaded 2 x {n} in {time.perf_counter() - started:.1f} s", flush=True)
        queries = rng.standard_normal((QUERIES, DIM)).astype(np.float32)
        normed = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

        def numpy_scan(i):
            q = queries[i] / np.linalg.norm(queries[i])
            sims = normed @ q
            top = np.argpartition(-sims, 10)[:10]
            return set((top[np.argsort(-sims[top])] + round_ * 10_000_000).tolist())

        base = timed(numpy_scan, QUERIES)
        rows.append((n, "numpy float32 scan (SQLite backend's ranking)", base[0], base[1], 1.0, 1.0))
        with engine.begin() as conn:
            exact = timed(lambda i: {pk for pk, _ in vectors.nearest(conn, me, "episode", queries[i], 10)}, QUERIES)
        recall = np.mean([len(a & b) / 10 for a, b in zip(exact[2], base[2], strict=True)])
        rows.append((n, "pgvector exact, tenant partition", exact[0], exact[1], recall, exact[0] / base[0]))
        started = time.perf_counter()
        vectors.build_index(engine, me)
        build = time.perf_counter() - started
        with engine.begin() as conn:
            approx = timed(lambda i: {pk for pk, _ in vectors.nearest(conn, me, "episode", queries[i], 10, approximate=True)}, QUERIES)
        recall = np.mean([len(a & b) / 10 for a, b in zip(approx[2], exact[2], strict=True)])
        rows.append((n, f"HNSW on the partition (build {build:.0f} s)", approx[0], approx[1], recall, approx[0] / base[0]))
        for label, words in (
            ("rare word (1 in 997)", ["zebra0"]),
            ("common word (~90%)", ["coffee"]),
            ("two words", ["coffee", "zebra997"]),
        ):
            with engine.begin() as conn:

                def keyword(_):
                    expression = index.expression(conn, me, words, min_prefix=None, cut_common=True)
                    return index.episodes(conn, me, expression, 10, None, None, None)

                result = timed(keyword, 30)
            keyword_rows.append((n, label, result[0], result[1]))
    print("\nVector search, top-10, one query (recall@10 against exact; ratio: p50 against the numpy scan)")
    print("| episodes in the tenant | method | p50 ms | p95 ms | recall@10 | ratio |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for n, label, p50, p95, recall, ratio in rows:
        print(f"| {n:,} | {label} | {p50:.2f} | {p95:.2f} | {recall:.3f} | {ratio:.2f}x |")
    print("\nKeyword search, BM25 top-10 (expression, tenant statistics, newest 1000 matches ranked)")
    print("| episodes in the tenant | query | p50 ms | p95 ms |")
    print("| ---: | --- | ---: | ---: |")
    for n, label, p50, p95 in keyword_rows:
        print(f"| {n:,} | {label} | {p50:.2f} | {p95:.2f} |")
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="memlens-pgbench-"))
    server = pgserver.get_server(root / "data", cleanup_mode="delete")
    try:
        run(server.get_uri(), args.sizes)
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
