from datetime import timedelta

import pytest

from store.errors import InvalidInputError, UnknownEpisodeError

from .conftest import T0


def test_remember_round_trips_every_field(store):
    e = store.remember(
        "what's the weather?",
        "sunny",
        user_id="u",
        session_id="s",
        occurred_at=T0,
        tool_calls=[{"name": "weather", "args": {"city": "Oslo"}}],
        metadata={"model": "m", "tokens": 12},
    )
    got = store.get_episode(e.id, user_id="u")
    assert got == e
    assert got.occurred_at == T0 and got.occurred_at.tzinfo is not None
    assert got.tool_calls[0]["args"]["city"] == "Oslo"


def test_get_episode_of_another_tenant_is_unknown(store):
    e = store.remember("hi", user_id="u")
    with pytest.raises(UnknownEpisodeError):
        store.get_episode(e.id, user_id="v")


def test_pages_newest_first_without_gaps_or_repeats(store):
    items = [{"input": f"e{i}", "occurred_at": T0 + timedelta(minutes=i % 7)} for i in range(53)]
    store.remember_many(items, user_id="u")
    seen, cursor = [], None
    while True:
        page = store.episodes(user_id="u", limit=10, cursor=cursor)
        seen += page.items
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == 53 and len({e.id for e in seen}) == 53
    times = [e.occurred_at for e in seen]
    assert times == sorted(times, reverse=True)


def test_filters_by_session_and_time_range(store):
    store.remember_many(
        [{"input": f"e{i}", "session_id": f"s{i % 2}", "occurred_at": T0 + timedelta(hours=i)} for i in range(10)],
        user_id="u",
    )
    page = store.episodes(user_id="u", session_id="s1", since=T0 + timedelta(hours=3), until=T0 + timedelta(hours=8))
    assert [e.input for e in page.items] == ["e7", "e5", "e3"]


def test_session_messages_are_pairs_oldest_first(store):
    store.remember("q1", "a1", user_id="u", session_id="s", occurred_at=T0)
    store.remember("q2", "a2", user_id="u", session_id="s", occurred_at=T0 + timedelta(seconds=1))
    messages = store.session_messages("s", user_id="u")
    assert [(m.role, m.content) for m in messages] == [("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]
    assert [m.content for m in store.session_messages("s", user_id="u", limit=3)] == ["a1", "q2", "a2"]


def test_remember_many_is_all_or_nothing(store):
    with pytest.raises(InvalidInputError):
        store.remember_many([{"input": "fine"}, {"input": "bad", "occurred_at": "yesterday"}], user_id="u")
    assert store.episodes(user_id="u").items == []


def test_a_forged_cursor_is_a_clear_error(store):
    with pytest.raises(InvalidInputError, match="cursor"):
        store.episodes(user_id="u", cursor="not-a-cursor")


@pytest.mark.sqlite_only(reason="reads SQLite's query plan")
def test_deep_pages_use_the_index(store):
    """Keyset pagination: the page query is an index search, not a scan with OFFSET."""
    store.remember_many([{"input": f"e{i}"} for i in range(30)], user_id="u")
    cursor = store.episodes(user_id="u", limit=5).next_cursor
    import sqlite3

    from store.schema import to_micros
    from store.tiers.episodes import decode_cursor

    at, pk = decode_cursor(cursor)
    conn = sqlite3.connect(store.path)
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM episodes WHERE user_id = ? AND (occurred_at, pk) < (?, ?) "
        "ORDER BY occurred_at DESC, pk DESC LIMIT 6",
        ("u", to_micros(at), pk),
    ).fetchall()
    detail = " ".join(row[-1] for row in plan)
    assert "USING INDEX ix_episodes_user_id_occurred_at_pk" in detail and "TEMP B-TREE" not in detail
