"""Vector search on PostgreSQL: exact by default, approximate (HNSW) by choice for large tenants.

Exact search orders the tenant's vectors of one kind by cosine distance. The tenant test is in
the WHERE clause, so the planner prunes every other tenant's partition before ranking: no
other tenant's row is ever a candidate, the same guarantee as the SQLite backend's per-tenant
matrix. Scores are cosine similarity (1 - distance), as on SQLite.

Approximate search is an HNSW index on one tenant's partition, built on request for a tenant
large enough to need it. With one shared index, a tenant filter applied after the index scan
returned 4.2 of 10 rows on average (sometimes none) in this project's measurements; one index
per tenant partition has no such filter, and ``hnsw.iterative_scan`` still guards the kind
filter (the partition holds every kind). Rows come from the table, never from the index alone,
so a deleted (erased) row is never returned even before VACUUM removes it from the graph.
:func:`measured_recall` reports how many of the exact top-k the index finds.
"""

from __future__ import annotations

from typing import Sequence

from pgvector.sqlalchemy import Vector
from sqlalchemy import Connection, Engine, bindparam, literal_column, text

from ...schema import vectors_t
from ...tenancy import Tenant
from . import partitions

# Settings chosen with bench/pg_ann_bench.py: 100k real MiniLM vectors, "big" 80k episodes and
# 10k facts in one partition beside "small" (10k), 200 queries, machine at load 7-12. With
# m=16, ef_construction=64: recall@10 0.985 / 0.983 (two builds) at ef_search 40 (pgvector's
# default), 0.998 / 0.989 at 100, 0.998 / 0.994 at 200; m=32, ef_construction=128 reached
# 1.000 but took 188 s to build against 54 s. Asking the index for 40 rows and keeping the best
# 10 found nothing more at any ef_search and cost 2-4 ms, because pgvector's index holds full
# vectors: each row already carries its exact distance. So the index is asked for k rows.
EF_SEARCH = 100
MAX_SCAN_TUPLES = 20_000  # how far the iterative scan may go to fill the kind filter (pgvector's default)
M, EF_CONSTRUCTION = 16, 64
# pgvector builds the graph in maintenance_work_mem and, once it outgrows that, goes on far more
# slowly: the 90k-vector build took 160 s with PostgreSQL's default 64 MB and 49 s with this, in
# the same run.
BUILD_MEMORY = "512MB"


def _distance(query: Sequence[float]):
    return literal_column("vectors.vector").op("<=>")(bindparam("query", list(map(float, query)), type_=Vector()))


def _best_first(rows) -> list[tuple[int, float]]:
    return sorted(((pk, float(score)) for pk, score in rows), key=lambda row: (-row[1], row[0]))


def nearest(conn: Connection, tenant: Tenant, kind: str, query: Sequence[float], k: int, *, approximate: bool = False,
            ef_search: int = EF_SEARCH, candidates: int = 0) -> list[tuple[int, float]]:
    """The tenant's ``k`` items of ``kind`` closest to ``query``: (item key, cosine similarity),
    best first. ``approximate`` uses the tenant's HNSW index if it has one (see :func:`build_index`),
    asking it for ``max(k, candidates)`` rows with ``ef_search`` and keeping the best ``k``
    (a tenant without the index is sorted exactly, whatever is asked)."""
    distance = _distance(query)
    # Exact: "+ 0" makes the sort key an expression no index matches, so an HNSW index built for
    # the approximate mode never answers an exact query (enable_indexscan = off did not stop
    # PostgreSQL 18 from using it when that was the only index-ordered path).
    key = distance if approximate else distance + 0
    wanted = max(k, candidates) if approximate else k
    stmt = (
        tenant.select(vectors_t, vectors_t.c.item_pk, (1 - distance).label("similarity"))
        .where(vectors_t.c.kind == kind)
        .order_by(key)
        .limit(wanted)
    )
    if not approximate:
        return _best_first(conn.execute(stmt))
    # ef_search below the rows asked for would cap what one pass of the index can return.
    # One round trip for the three settings (three SET LOCALs were most of a 4 ms search at 5k).
    conn.execute(
        text("SELECT set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
             "set_config('hnsw.max_scan_tuples', :scan, true)"),
        {"ef": str(max(int(ef_search), wanted)), "scan": str(MAX_SCAN_TUPLES)},
    )
    # relaxed_order returns rows roughly in order; each carries its exact distance (the index
    # keeps full vectors), so ordering the candidates is the exact re-rank.
    return _best_first(conn.execute(stmt))[:k]


def index_name(tenant: Tenant) -> str:
    return f"ix_{partitions.names(tenant)['vectors']}_hnsw"


def build_index(engine: Engine, tenant: Tenant, *, m: int = M, ef_construction: int = EF_CONSTRUCTION) -> None:
    """Build (once) the HNSW index on the tenant's vectors. CONCURRENTLY: the tenant's agents
    keep writing meanwhile, and no other tenant is touched."""
    table = partitions.names(tenant)["vectors"]
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")
        conn.exec_driver_sql(
            f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{index_name(tenant)}" ON "{table}" '
            f"USING hnsw (vector vector_cosine_ops) WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
        )
        conn.exec_driver_sql("RESET maintenance_work_mem")
        # Fresh statistics, or the planner (guessing one row) keeps to the key index and sorts.
        conn.exec_driver_sql(f'ANALYZE "{table}"')


def drop_index(engine: Engine, tenant: Tenant) -> None:
    """Drop the tenant's HNSW index (its searches are then exact whatever they ask)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(f'DROP INDEX CONCURRENTLY IF EXISTS "{index_name(tenant)}"')


def measured_recall(conn: Connection, tenant: Tenant, kind: str, queries: list[Sequence[float]], k: int = 10) -> float:
    """Of the exact top-``k`` for each query, the share the approximate search also returned."""
    found = total = 0
    for query in queries:
        exact = {pk for pk, _ in nearest(conn, tenant, kind, query, k)}
        approx = {pk for pk, _ in nearest(conn, tenant, kind, query, k, approximate=True)}
        found, total = found + len(exact & approx), total + len(exact)
    return found / total if total else 1.0
