"""Vector search on PostgreSQL: exact within the tenant, and an approximate mode that finds
what exact finds, never crossing tenants or kinds."""

import numpy as np
import pytest
from sqlalchemy import text

from store.tenancy import Tenant

pytest.importorskip("psycopg")
from store.backend.postgres import ddl, engine as pg_engine, partitions, vectors  # noqa: E402

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
        text("INSERT INTO vectors (kind, item_pk, user_id, content_hash, vector) "
             "SELECT :k, start + i, :u, 'h', v::vector FROM unnest(CAST(:vs AS text[])) WITH ORDINALITY AS x(v, i), (SELECT :s AS start) s"),
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
        plan = "\n".join(conn.execute(text(
            "EXPLAIN SELECT item_pk FROM vectors WHERE user_id = 'alice' AND kind = 'episode' ORDER BY vector <=> CAST(:q AS vector) LIMIT 10"),
            {"q": str([float(x) for x in queries[0]])}).scalars())
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
