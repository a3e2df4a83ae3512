"""Keyword search on PostgreSQL ranks by BM25 as FTS5 does, within the tenant's own statistics,
and nothing a user types is query syntax."""

import pytest
from sqlalchemy import text

from store import MemoryStore
from store.backend.sqlite import keyword as sqlite_keyword
from store.tenancy import Tenant

pytest.importorskip("psycopg")
from store import testing
from store.backend.postgres import ddl, partitions  # noqa: E402
from store.backend.postgres import engine as pg_engine
from store.backend.postgres.keyword import PostgresKeywordIndex, items  # noqa: E402

ALICE, BOB = Tenant("alice"), Tenant("bob")
INDEX = PostgresKeywordIndex()
# Words whose Porter (FTS5) and Snowball (PostgreSQL) stems agree, so scores can be compared.
CORPUS = [
    ("apple banana", "cherry"),
    ("apple apple apple", "banana date"),
    ("cherry date elder fig grape", "apple"),
    ("grape grape", "fig"),
    ("banana", "banana banana banana lemon lemon lemon lemon"),
    ("elder", "lemon"),
]


@pytest.fixture
def pg(pg_url):
    e = pg_engine.create(pg_url)
    with e.begin() as conn:
        ddl.migrate(conn, dim=8)
    for t in (ALICE, BOB):
        partitions.ensure(e, t)
    yield e
    e.dispose()


def add(conn, tenant: Tenant, rows, start: int = 0) -> None:
    for i, (question, answer) in enumerate(rows, start=start):
        conn.execute(
            text(
                "INSERT INTO episodes (id, user_id, occurred_at, input, output, tool_calls, metadata, content_hash) "
                "VALUES (:id, :u, :t, :i, :o, '[]', '{}', 'h')"
            ),
            {"id": f"e{i}", "u": tenant.key, "t": i, "i": question, "o": answer},
        )


def by_id(conn, hits) -> dict[str, float]:
    ids = dict(conn.execute(text("SELECT pk, id FROM episodes")).all())
    return {ids[pk]: round(score, 9) for pk, score, _ in hits}


@pytest.mark.parametrize("query", [["apple"], ["banana", "lemon"], ["grape", "fig", "elder"], ["date"]])
def test_scores_equal_fts5_bm25_on_the_same_episodes(pg, db_path, query):
    s = MemoryStore.open(db_path)
    s.remember_many([{"input": q, "output": a} for q, a in CORPUS], user_id="alice")
    with testing.backend(s).read() as conn:
        expression = sqlite_keyword.fts_expression(query, min_prefix=None)
        pk_to_id = dict(conn.execute(text("SELECT pk, input || '|' || output FROM episodes")).all())
        expected = {
            pk_to_id[pk]: round(score, 9)
            for pk, score, _ in testing.keyword_index(s).episodes(conn, ALICE, expression, 10, None, None, None)
        }
    s.close()
    with pg.begin() as conn:
        add(conn, ALICE, CORPUS)
        expression = INDEX.expression(conn, ALICE, query, min_prefix=None, cut_common=False)
        hits = INDEX.episodes(conn, ALICE, expression, 10, None, None, None)
        texts = dict(conn.execute(text("SELECT pk, input || '|' || output FROM episodes")).all())
    got = {texts[pk]: round(score, 9) for pk, score, _ in hits}
    assert got == pytest.approx(expected, abs=1e-6) and len(got) >= 2
    assert [score for _, score, _ in hits] == sorted((score for _, score, _ in hits), reverse=True)


def test_another_tenants_documents_change_neither_matches_nor_scores(pg):
    with pg.begin() as conn:
        add(conn, ALICE, CORPUS)
        expression = INDEX.expression(conn, ALICE, ["apple"], min_prefix=None, cut_common=False)
        before = INDEX.episodes(conn, ALICE, expression, 10, None, None, None)
        add(conn, BOB, [("apple apple", "apple")] * 50, start=100)
        after = INDEX.episodes(conn, ALICE, expression, 10, None, None, None)
        owners = set(
            conn.execute(text("SELECT DISTINCT user_id FROM episodes WHERE pk = ANY(:p)"), {"p": [pk for pk, _, _ in after]}).scalars()
        )
    assert after == before and owners == {"alice"}


@pytest.mark.parametrize("hostile", ["a'b", "x|y", "!(", "foo:*", "' | '", "\\", "&&", "<->", "a''", ":*"])
def test_no_word_is_query_syntax(pg, hostile):
    with pg.begin() as conn:
        add(conn, ALICE, CORPUS)
        for min_prefix in (None, 1):
            expression = INDEX.expression(conn, ALICE, ["apple", hostile], min_prefix=min_prefix, cut_common=False)
            assert expression is not None
            assert INDEX.episodes(conn, ALICE, expression, 10, None, None, None)  # apple still finds its episodes
            INDEX.facts(conn, ALICE, expression, 10, None)


def test_the_last_word_is_a_prefix_while_typing(pg):
    with pg.begin() as conn:
        add(conn, ALICE, CORPUS)
        typing = INDEX.expression(conn, ALICE, ["lemo"], min_prefix=4, cut_common=False)
        done = INDEX.expression(conn, ALICE, ["lemo"], min_prefix=None, cut_common=False)
        assert items(typing) == [("lemo", True)]
        assert len(INDEX.episodes(conn, ALICE, typing, 10, None, None, None)) == 2
        assert INDEX.episodes(conn, ALICE, done, 10, None, None, None) == []
        assert INDEX.expression(conn, ALICE, ["lem"], min_prefix=4, cut_common=False) == "'lem'"


def test_highlights_name_the_words_as_written(pg):
    with pg.begin() as conn:
        add(conn, ALICE, [("She was running to the Café", "and ran")])
        expression = INDEX.expression(conn, ALICE, ["run", "cafe"], min_prefix=None, cut_common=False)
        [(pk, _, _)] = INDEX.episodes(conn, ALICE, expression, 10, None, None, None)
        assert set(INDEX.episode_highlights(conn, ALICE, expression, [pk])[pk]) == {"running", "cafe"}


def test_session_filter_and_facts(pg):
    with pg.begin() as conn:
        add(conn, ALICE, CORPUS)
        conn.execute(text("UPDATE episodes SET session_id = 's1' WHERE id = 'e0'"))
        conn.execute(
            text(
                "INSERT INTO facts (id, user_id, subject, predicate, object, confidence, valid_from, recorded_at, source_episode_ids) "
                "VALUES ('f1', 'alice', 'Alice', 'likes', 'apples', 1, 1, 1, '[]'), ('f2', 'bob', 'Bob', 'likes', 'apples', 1, 1, 1, '[]')"
            )
        )
        expression = INDEX.expression(conn, ALICE, ["apple"], min_prefix=None, cut_common=False)
        assert len(INDEX.episodes(conn, ALICE, expression, 10, "s1", None, None)) == 1
        [(pk, score, marked)] = INDEX.facts(conn, ALICE, expression, 10, None)
        assert score > 0 and marked == ["apples"]
        assert INDEX.facts(conn, ALICE, expression, 10, {pk + 1000}) == []


def test_a_word_in_most_episodes_is_left_out_when_rarer_ones_remain(pg):
    with pg.begin() as conn:
        add(conn, ALICE, [("memory note", "ok")] * 1100)
        add(conn, ALICE, [("zebra memory", "ok")], start=5000)
        expression = INDEX.expression(conn, ALICE, ["memory", "zebra"], min_prefix=None, cut_common=True)
        assert items(expression) == [("zebra", False)]
        alone = INDEX.expression(conn, ALICE, ["memory"], min_prefix=None, cut_common=True)
        assert items(alone) == [("memori", False)]  # never cut to nothing
