"""Vector search on PostgreSQL: exact within the tenant, and an approximate mode that finds
what exact finds, never crossing tenants or kinds."""

import numpy as np
import pytest
from sqlalchemy import text

from store.tenancy import Tenant

pytest.importorskip("psycopg")
from store.backend.postgres import ddl, partitions, vectors  # noqa: E402
from store.backend.postgres import engine as pg_engine  # noqa: E402

# Every test here ranks by the server's own distances.
pytestmark = pytest.mark.usefixtures("pg_vector_ops")

ALICE, BOB, CAROL = Tenant("alice"), Tenant("bob"), Tenant("carol")
DIM = 32


@pytest.fixture
def pg(pg_url):
    e = pg_engine.create(pg_url)
    with e.begin() as conn:
        ddl.migrate(conn, dim=DIM)
    for t in (ALICE, BOB, CAROL):
        partitions.ensure(e, t)
    yield e
    e.dispose()


def load(conn, tenant: Tenant, matrix: np.ndarray, kind: str = "episode", start: int = 0) -> None:
    conn.execute(
        text(
            "INSERT INTO vectors (kind, item_pk, user_id, content_hash, vector) "
            "SELECT :k, start + i, :u, 'h', v::vector FROM unnest(CAST(:vs AS text[])) WITH ORDINALITY AS x(v, i), (SELECT :s AS start) s"
        ),
        {"k": kind, "u": tenant.key, "s": start, "vs": ["[" + ",".join(f"{x:.6f}" for x in row) + "]" for row in matrix]},
    )


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int, start: int = 0) -> list[tuple[int, float]]:
    m = matrix.astype(np.float32)
    sims = (m @ query) / (np.linalg.norm(m, axis=1) * np.linalg.norm(query))
    order = np.argsort(-sims, kind="stable")[:k]
    return [(start + int(i) + 1, float(sims[i])) for i in order]


def assert_same_ranking(got, want) -> None:
    """The same similarities, best first (float4 in the server, float32 here: a near-tie may swap
    two keys, a missed neighbour cannot hide)."""
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    assert len({pk for pk, _ in got} & {pk for pk, _ in want}) >= len(want) - 1


def test_exact_search_is_the_tenants_true_nearest_with_cosine_scores(pg):
    rng = np.random.default_rng(7)
    mine, theirs = rng.standard_normal((300, DIM)), rng.standard_normal((300, DIM))
    query = rng.standard_normal(DIM).astype(np.float32)
    theirs[0] = query * 3  # bob holds the perfect match; alice must never see it
    with pg.begin() as conn:
        load(conn, ALICE, mine)
        load(conn, BOB, theirs, start=10_000)
        load(conn, ALICE, theirs[:5], kind="fact", start=20_000)  # another kind: not a candidate
        got = vectors.nearest(conn, ALICE, "episode", query, 10)
    want = exact_top(mine, query, 10)
    assert_same_ranking(got, want)


def test_approximate_search_finds_what_exact_finds_within_the_tenant(pg):
    rng = np.random.default_rng(11)
    data = {t: rng.standard_normal((3000, DIM)) for t in (ALICE, BOB, CAROL)}
    with pg.begin() as conn:
        for n, (t, matrix) in enumerate(data.items()):
            load(conn, t, matrix, start=n * 100_000)
        load(conn, ALICE, rng.standard_normal((3000, DIM)), kind="fact", start=500_000)
    vectors.build_index(pg, ALICE)
    queries = list(rng.standard_normal((30, DIM)).astype(np.float32))
    with pg.begin() as conn:
        recall = vectors.measured_recall(conn, ALICE, "episode", queries)
        hits = vectors.nearest(conn, ALICE, "episode", queries[0], 10, approximate=True)
        plan = "\n".join(
            conn.execute(
                text(
                    "EXPLAIN SELECT item_pk FROM vectors WHERE user_id = 'alice' AND kind = 'episode' ORDER BY vector <=> CAST(:q AS vector) LIMIT 10"
                ),
                {"q": str([float(x) for x in queries[0]])},
            ).scalars()
        )
    assert vectors.index_name(ALICE) in plan  # the index is what answered
    assert len(hits) == 10 and all(pk < 100_000 for pk, _ in hits)  # alice's episodes only
    assert recall >= 0.95, recall


def test_exact_search_stays_exact_when_an_index_exists(pg):
    rng = np.random.default_rng(5)
    mine = rng.standard_normal((2000, DIM))
    with pg.begin() as conn:
        load(conn, ALICE, mine)
    vectors.build_index(pg, ALICE)
    queries = rng.standard_normal((10, DIM)).astype(np.float32)
    with pg.begin() as conn:
        for q in queries:
            assert_same_ranking(vectors.nearest(conn, ALICE, "episode", q, 10), exact_top(mine, q, 10))


def _through_the_index(conn) -> None:
    # At a few hundred rows the planner sorts them all (exact, whatever was asked); turning the
    # sort off makes the HNSW index (an ordered path) answer, which is the path under test.
    conn.execute(text("SET LOCAL enable_sort = off"))


def _plan(conn, tenant: Tenant, query: np.ndarray, ef_search: int) -> str:
    conn.execute(
        text("SELECT set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)"),
        {"ef": str(ef_search)},
    )
    return "\n".join(
        conn.execute(
            text(
                "EXPLAIN SELECT item_pk FROM vectors WHERE user_id = :u AND kind = 'episode' ORDER BY vector <=> CAST(:q AS vector) LIMIT 40"
            ),
            {"u": tenant.key, "q": str([float(x) for x in query])},
        ).scalars()
    )


def test_approximate_equals_exact_on_a_small_tenant_and_never_returns_anothers_or_an_erased_row(pg):
    rng = np.random.default_rng(23)
    size = 600
    mine, theirs = rng.standard_normal((size, DIM)), rng.standard_normal((size, DIM))
    queries = list(rng.standard_normal((12, DIM)).astype(np.float32))
    theirs[0] = queries[0] * 2  # bob holds the perfect match for the first query
    with pg.begin() as conn:
        load(conn, ALICE, mine)
        load(conn, BOB, theirs, start=10_000)
        load(conn, ALICE, queries[1][None, :] * 2, kind="fact", start=20_000)  # alice's perfect match, of another kind
    vectors.build_index(pg, ALICE)
    vectors.build_index(pg, BOB)
    with pg.begin() as conn:
        # Unforced, a tenant this small is sorted exactly.
        assert_same_ranking(vectors.nearest(conn, ALICE, "episode", queries[2], 10, approximate=True), exact_top(mine, queries[2], 10))
    with pg.begin() as conn:
        _through_the_index(conn)
        assert vectors.index_name(ALICE) in _plan(conn, ALICE, queries[0], size)  # the index answers, not a sort
        for q in queries:
            # ef_search above the tenant's size: the graph search reaches every row, so nothing may differ.
            got = vectors.nearest(conn, ALICE, "episode", q, 10, approximate=True, ef_search=size)
            assert_same_ranking(got, exact_top(mine, q, 10))
            assert all(1 <= pk <= size for pk, _ in got)  # alice's episodes: not bob's, not her fact
    # Erase alice's best rows for the first query. The index still holds them until a VACUUM,
    # which this test never runs: the search must not return them.
    erased = [pk for pk, _ in exact_top(mine, queries[0], 5)]
    with pg.begin() as conn:
        conn.execute(text("DELETE FROM vectors WHERE user_id = 'alice' AND kind = 'episode' AND item_pk = ANY(:pks)"), {"pks": erased})
    with pg.begin() as conn:
        _through_the_index(conn)
        assert vectors.index_name(ALICE) in _plan(conn, ALICE, queries[0], size)
        got = vectors.nearest(conn, ALICE, "episode", queries[0], 10, approximate=True, ef_search=size)
        default = vectors.nearest(conn, ALICE, "episode", queries[0], 10, approximate=True)
    want = [(pk, s) for pk, s in exact_top(mine, queries[0], 15) if pk not in erased][:10]
    assert_same_ranking(got, want)
    assert not {pk for pk, _ in got + default} & set(erased)
    assert len(default) == 10 and all(1 <= pk <= size for pk, _ in default)
