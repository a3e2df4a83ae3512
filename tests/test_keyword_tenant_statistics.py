"""Keyword ranking uses the tenant's own statistics on every engine: another tenant's writes never
change the order or the scores of a tenant's keyword results. (FTS5 keeps BM25's statistics for
the whole index: on SQLite, 50k episodes of another tenant reordered 58 of 164 quality queries.)"""

import random

import pytest

from store import MemoryStore, testing
from store.backend.sqlite import small_tenants, tenant_bm25


@pytest.fixture(autouse=True, params=["own index", "store index"])
def small_tenants_way(request, monkeypatch):
    """On SQLite a tenant under SMALL_TENANT_EPISODES episodes is searched in an index of its own
    (tests/test_keyword_small_tenants.py); these tests hold the store index's way for it too."""
    if request.param == "store index":
        if "backend" in request.fixturenames and request.getfixturevalue("backend") != "sqlite":
            pytest.skip("PostgreSQL has one way")
        monkeypatch.setattr(small_tenants, "SMALL_TENANT_EPISODES", 0)


QUERIES = ["invoice berlin", "berlin", "meeting invoice tuesday", "tuesday", "flight invoice", "berl"]


def episodes(rng: random.Random, n: int, words: list[str], weights: list[float]) -> list[dict]:
    return [{"input": " ".join(rng.choices(words, weights, k=rng.randint(3, 14))), "output": "ok"} for _ in range(n)]


# The query words, then filler: most episodes hold a few of the first and many of the rest.
WORDS = ["invoice", "berlin", "meeting", "tuesday", "flight", "lunch", "report", "budget", "train", "hotel"]
WORDS += [f"filler{i}" for i in range(200)]


def ranking(s: MemoryStore, user: str) -> list[list[tuple[str, float]]]:
    return [
        [(h.episode.input, round(h.scores.keyword, 9)) for h in s.recall(q, user_id=user, mode="keyword", limit=10, prefix=q == "berl")]
        for q in QUERIES
    ]


def test_another_tenants_episodes_change_neither_order_nor_scores(backend_url):
    rng = random.Random(3)
    alice = episodes(rng, 400, WORDS, [8] * 10 + [1] * 200)
    # bob writes mostly the words alice searches for, in long episodes: index-wide statistics
    # would lower their IDF and raise the average length.
    bob = episodes(rng, 5000, WORDS, [300, 300, 1, 200, 1, 1, 1, 1, 1, 1] + [1] * 200)
    with MemoryStore.open(backend_url, embedder=None) as s:
        s.remember_many(alice, user_id="alice")
        alone = ranking(s, "alice")
        for start in range(0, len(bob), 2500):
            s.remember_many(bob[start : start + 2500], user_id="bob")
        assert ranking(s, "alice") == alone


@pytest.mark.parametrize("who", ["alice", "bob"], ids=["a tenant holding few", "a tenant holding most"])
def test_a_tenant_ranked_in_a_shared_store_scores_as_it_does_alone(tmp_path, who):
    """The ranking over the tenant's own statistics is FTS5's BM25 exactly: the same tenant alone
    in a store (where FTS5's own bm25() is used) gets the same hits with the same scores. (A
    tenant holding most of the index has its statistics counted as the index's less the others'.)"""
    rng = random.Random(5)
    mine = {
        "alice": episodes(rng, 300, WORDS, [8] * 10 + [1] * 200) + [{"input": "invoice " * 40 + "berlin", "output": "a long one"}],
        "bob": episodes(rng, 2000, WORDS, [90, 1, 1, 90, 1, 1, 1, 1, 1, 1] + [1] * 200),
    }  # alice's long one: token counts past one varint byte
    with MemoryStore.open(tmp_path / "alone.db", embedder=None) as s:
        s.remember_many(mine[who], user_id=who)
        alone = ranking(s, who)
    with MemoryStore.open(tmp_path / "shared.db", embedder=None) as s:
        for user, rows in mine.items():
            s.remember_many(rows, user_id=user)
        assert testing.keyword_index(s).statistics.totals(testing.tenant(s, who)) is not None  # the tenant's own path
        shared = ranking(s, who)
    assert [[text for text, _ in hits] for hits in shared] == [[text for text, _ in hits] for hits in alone]
    for hits, expected in zip(shared, alone, strict=True):
        assert [score for _, score in hits] == pytest.approx([score for _, score in expected], rel=1e-9)


def test_even_ties_of_a_word_in_most_episodes_keep_their_order(backend_url):
    """With every query word in most episodes (IDF at its floor), many hits tie: the tenant's own
    ranking must compute them to the last bit as FTS5 does, or the ties flip."""
    rng = random.Random(3)
    few = WORDS[:10]
    with MemoryStore.open(backend_url, embedder=None) as s:
        s.remember_many(episodes(rng, 400, few, [1] * 10), user_id="alice")
        alone = ranking(s, "alice")
        s.remember_many(episodes(rng, 3000, few, [30, 30, 1, 20, 1, 1, 1, 1, 1, 1]), user_id="bob")
        assert ranking(s, "alice") == alone


def test_varints_decode_what_fts5_writes():
    assert tenant_bm25.varints(bytes([3, 7])) == [3, 7]
    assert tenant_bm25.varints(bytes([0x81, 0x00, 5])) == [128, 5]
    assert tenant_bm25.varints(bytes([0x82, 0x80, 0x01])) == [(2 << 14) | 1]


def test_both_ways_of_counting_a_tenants_matches_agree_with_the_rows(db_path, monkeypatch):
    """A word's count of a tenant's episodes is taken by walking the word's matches, or, for a
    small tenant beside a very common word, by asking about each of the tenant's own episodes:
    each way, for a tenant holding most of the index and for a small one, equals the rows."""
    from sqlalchemy import text

    rng = random.Random(5)
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many(episodes(rng, 1500, WORDS, [8] * 10 + [1] * 200), user_id="alice")
        s.remember_many(episodes(rng, 12, WORDS, [8] * 10 + [1] * 200), user_id="bob")
        with testing.backend(s).read() as conn:
            truth = {
                (user, word): conn.execute(
                    text("SELECT count(*) FROM episodes WHERE user_id = :u AND (' ' || input || ' ') LIKE :w"),
                    {"u": user, "w": f"% {word} %"},
                ).scalar_one()
                for user in ("alice", "bob")
                for word in ("invoice", "filler7")
            }
            for cost in (0, 10**9):  # every count walked, then every count asked key by key
                monkeypatch.setattr(tenant_bm25, "KEY_COST_IN_MATCHES", cost)
                for (user, word), expected in truth.items():
                    everyone = conn.execute(
                        text("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH :w"), {"w": f'"{word}"'}
                    ).scalar_one()
                    held = 1500 if user == "alice" else 12
                    assert tenant_bm25.tenant_matches(conn, testing.tenant(s, user), f'"{word}"', everyone, held) == expected, (
                        cost,
                        user,
                        word,
                    )
    assert truth[("bob", "invoice")] > 0 and truth[("alice", "filler7")] > 0  # neither count is a trivial zero


def test_a_score_never_takes_the_log_of_a_non_positive_count():
    """Counts read beside a writer can disagree (more matches than episodes): the IDF is then the
    floor FTS5 uses, never a math domain error out of recall."""
    from hypothesis import given
    from hypothesis import strategies as st

    from store.backend.shared import IDF_FLOOR, bm25, idf

    assert idf(5, 9) == IDF_FLOOR and idf(0, 3) == IDF_FLOOR and idf(4, -1) > 0

    @given(st.integers(-5, 10_000), st.integers(-5, 10_000), st.integers(0, 50), st.integers(1, 500))
    def never_raises(count: int, matches: int, frequency: int, length: int) -> None:
        assert idf(count, matches) > 0
        assert bm25(count, 12.0, [matches], [frequency], length) >= 0

    never_raises()
