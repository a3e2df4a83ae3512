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

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import BigInteger, ColumnElement, Connection, Engine, any_, bindparam, exc, func, literal_column, text
from sqlalchemy.dialects.postgresql import ARRAY

from ...errors import ReadOnlyStoreError, UnknownTenantError
from ...schema import vectors_t
from ...tenancy import Tenant, require_tenant
from ..interface import QueryVector
from . import partitions
from .errors import translated

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
UNDEFINED_TABLE = "42P01"  # the partition was dropped by an erasure while the build waited for it


def _distance(query: QueryVector) -> ColumnElement[Any]:
    return literal_column("vectors.vector").op("<=>")(bindparam("query", list(map(float, query)), type_=Vector()))


def _item_in(pks: Sequence[int]) -> ColumnElement[bool]:
    """The item key is one of ``pks``, sent as one array parameter."""
    return vectors_t.c.item_pk == any_(bindparam("pks", [int(pk) for pk in pks], type_=ARRAY(BigInteger)))


def _best_first(rows: Iterable[Any]) -> list[tuple[int, float]]:
    return sorted(((pk, float(score)) for pk, score in rows), key=lambda row: (-row[1], row[0]))


def nearest(
    conn: Connection,
    tenant: Tenant,
    kind: str,
    query: QueryVector,
    k: int,
    *,
    approximate: bool = False,
    ef_search: int = EF_SEARCH,
    candidates: int = 0,
    allowed: Sequence[int] | None = None,
) -> list[tuple[int, float]]:
    """The tenant's ``k`` items of ``kind`` closest to ``query``: (item key, cosine similarity),
    best first. ``approximate`` uses the tenant's HNSW index if it has one (see :func:`build_index`),
    asking it for ``max(k, candidates)`` rows with ``ef_search`` and keeping the best ``k``
    (a tenant without the index is sorted exactly, whatever is asked). ``allowed``: only these
    item keys (a session or time filter); the iterative scan goes on until it has ``k`` of them."""
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
    if allowed is not None:
        stmt = stmt.where(_item_in(allowed))
    if not approximate:
        return _best_first(conn.execute(stmt))
    # ef_search below the rows asked for would cap what one pass of the index can return.
    # One round trip for the three settings (three SET LOCALs were most of a 4 ms search at 5k).
    conn.execute(
        text(
            "SELECT set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.max_scan_tuples', :scan, true)"
        ),
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
    return _recall(conn, tenant, kind, [(query, None) for query in queries], k)


def _recall(conn: Connection, tenant: Tenant, kind: str, queries: list[tuple[Sequence[float], int | None]], k: int) -> float:
    """Of the exact top-``k`` for each (query, item left out of both answers), the share the
    approximate search also returned."""
    found = total = 0
    for query, left_out in queries:
        wanted = k if left_out is None else k + 1
        exact = {p for p, _ in nearest(conn, tenant, kind, query, wanted) if p != left_out}
        approx = {p for p, _ in nearest(conn, tenant, kind, query, wanted, approximate=True) if p != left_out}
        found, total = found + len(exact & approx), total + len(exact)
    return found / total if total else 1.0


def similarities(conn: Connection, tenant: Tenant, kind: str, query: QueryVector, pks: Sequence[int]) -> dict[int, float]:
    """The cosine similarity to ``query`` of each of the tenant's items ``pks`` that has a vector
    (hybrid fusion judges keyword-only candidates by their meaning too)."""
    if not pks:
        return {}
    stmt = tenant.select(vectors_t, vectors_t.c.item_pk, (1 - _distance(query)).label("similarity")).where(
        vectors_t.c.kind == kind, _item_in(pks)
    )
    return {pk: float(similarity) for pk, similarity in conn.execute(stmt)}


def has_index(conn: Connection, tenant: Tenant) -> bool:
    """Whether the tenant's vectors have an HNSW index (built by :func:`build_index`, by any
    process). Asked on every search: one catalog lookup, so a build or drop elsewhere counts at once."""
    exists: bool = conn.execute(text("SELECT to_regclass(:name) IS NOT NULL"), {"name": index_name(tenant)}).scalar_one()
    return exists


def sampled_recall(conn: Connection, tenant: Tenant, kind: str, sample: int, k: int = 10, seed: int = 0) -> tuple[float, int]:
    """Recall@``k`` of the approximate search against exact, with up to ``sample`` of the
    tenant's own vectors as queries (each query's own item left out of both answers, so finding
    itself does not count). Returns (recall, queries used)."""
    v = vectors_t
    conn.execute(text("SELECT setseed(:seed)"), {"seed": (seed % 1000) / 1000})
    rows = conn.execute(tenant.select(v, v.c.item_pk, v.c.vector).where(v.c.kind == kind).order_by(func.random()).limit(sample)).all()
    queries = [(np.frombuffer(vector, dtype=np.float32).tolist(), pk) for pk, vector in rows]
    return _recall(conn, tenant, kind, queries, k), len(rows)


class PgvectorIndex:
    """The :class:`store.backend.interface.ServerVectorIndex` of a PostgreSQL store: one HNSW
    index per tenant partition, built on request. A tenant with one is searched by the server
    (its vectors are never loaded into the searching process); the rest stay exact."""

    def __init__(self, engine: Engine, address: str, read_only: bool):
        self._engine, self._address, self._read_only = engine, address, read_only

    has_index = staticmethod(has_index)
    similarities = staticmethod(similarities)
    sampled_recall = staticmethod(sampled_recall)

    @staticmethod
    def nearest(
        conn: Connection, tenant: Tenant, kind: str, query: QueryVector, k: int, allowed: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        return nearest(conn, tenant, kind, query, k, approximate=True, allowed=allowed)

    def build(self, tenant: Tenant) -> None:
        """Builds on the tenant's partition, which must exist, for a tenant that must still exist:
        both are settled under the tenant's writer lock, so a whole-tenant forget committed by
        another process since the caller last looked is seen here, and its tables are not made
        again. The lock is let go before the build itself (a minute per 100k vectors), which the
        tenant's writers run beside; an erasure that drops the table meanwhile fails the build."""
        self._refuse_if_read_only()
        with translated(self._address):
            with partitions.tenant_locked(self._engine, tenant) as conn:
                require_tenant(conn, tenant)
                partitions.ensure_locked(conn, tenant)
            try:
                build_index(self._engine, tenant)
            except exc.ProgrammingError as error:
                if getattr(error.orig, "sqlstate", None) != UNDEFINED_TABLE:
                    raise
                raise UnknownTenantError(f"{tenant.key!r} was erased while its vector index was being built; nothing was made") from error

    def drop(self, tenant: Tenant) -> None:
        self._refuse_if_read_only()
        with translated(self._address):
            drop_index(self._engine, tenant)

    def _refuse_if_read_only(self) -> None:
        if self._read_only:
            raise ReadOnlyStoreError(f"{self._address} is open read-only; reopen it with read_only=False to change its indexes")


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import ServerVectorIndex

    _implements_servervectorindex: type[ServerVectorIndex] = PgvectorIndex
