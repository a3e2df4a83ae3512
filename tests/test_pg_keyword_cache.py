"""PostgreSQL's keyword statistics (BM25's counts, the common-word cut) are kept between searches
by the store's change counter: used again while nothing was committed, never after a commit by
any connection, an erasure included."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from store import MemoryStore, testing

pytest.importorskip("psycopg")


def scores(store: MemoryStore, query: str) -> list[tuple[str, float]]:
    return [(h.text, round(h.scores.keyword, 9)) for h in store.recall(query, user_id="alice", limit=20, mode="keyword")]


@pytest.fixture
def counted(monkeypatch):
    """The statements each search sends that count documents (what the cache spares)."""
    seen: list[str] = []

    def watch(store: MemoryStore) -> None:
        @event.listens_for(testing.backend(store).engine, "before_cursor_execute")
        def record(conn, cursor, statement, *args):
            if "count(" in statement.lower():
                seen.append(statement)

    return seen, watch


def test_statistics_are_reused_until_any_connection_commits(pg_url, counted):
    seen, watch = counted
    with MemoryStore.open(pg_url, embedder=None) as s, MemoryStore.open(pg_url, embedder=None) as other:
        s.remember_many([{"input": f"the invoice {i} for the blue printer was paid"} for i in range(30)], user_id="alice")
        s.remember_many([{"input": f"a printer jam on day {i}"} for i in range(10)], user_id="alice")
        watch(s)
        first = scores(s, "blue printer invoice")
        assert seen  # the first search counted
        seen.clear()
        assert scores(s, "blue printer invoice") == first
        assert seen == []  # nothing committed since: the counts were kept
        # Another connection adds documents holding "blue": its document count, and so every
        # score of the query, changes; the kept counts must not be used.
        other.remember_many([{"input": f"blue sky number {i}"} for i in range(25)], user_id="alice")
        after = scores(s, "blue printer invoice")
        with MemoryStore.open(pg_url, embedder=None) as fresh:
            assert after == scores(fresh, "blue printer invoice")
        assert after != first and seen


def test_no_statistic_from_before_an_erasure_is_used_after_it(pg_url):
    with MemoryStore.open(pg_url, embedder=None) as s:
        s.remember_many([{"input": f"quarterly report {i} mentions the merger"} for i in range(20)], user_id="alice")
        s.remember_many([{"input": f"the merger rumour {i}", "session_id": "gossip"} for i in range(30)], user_id="alice")
        before = scores(s, "merger report")
        with MemoryStore.open(pg_url, embedder=None) as other:
            assert other.forget(user_id="alice", session_id="gossip").counts["episodes"] == 30
        after = scores(s, "merger report")
        with MemoryStore.open(pg_url, embedder=None) as fresh:
            assert after == scores(fresh, "merger report")
        assert after != before and all(not text.startswith("the merger rumour") for text, _ in after)
