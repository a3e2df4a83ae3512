"""``MemoryStore.activity``: episodes per UTC day for one tenant (the inspector's sparkline)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from store.errors import InvalidInputError, NaiveDatetimeError

from .conftest import T0, dump

UTC = UTC
PLUS_TWO = timezone(timedelta(hours=2))


def at(day: int, hour: int = 12, minute: int = 0, tz=UTC) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=tz)


def test_counts_each_day_and_days_without_episodes_are_zeros(store):
    for day, n in ((2, 3), (5, 1), (7, 2)):
        for i in range(n):
            store.remember(f"day {day} turn {i}", user_id="alice", occurred_at=at(day, 9 + i))
    got = store.activity(user_id="alice", days=7, until=at(7, 18))
    assert got.days == [date(2026, 3, d) for d in range(1, 8)]
    assert got.episodes == [0, 3, 0, 0, 1, 0, 2]
    assert got.timezone == "UTC" and got.user_id == "alice"


def test_days_are_utc_calendar_days_whatever_offset_the_times_were_given_in(store):
    # 01:30 at +02:00 on the 3rd is 23:30 UTC on the 2nd; the last microsecond of a UTC day
    # stays on it, midnight UTC starts the next one.
    store.remember("late", user_id="alice", occurred_at=at(3, 1, 30, tz=PLUS_TWO))
    store.remember("last instant", user_id="alice", occurred_at=datetime(2026, 3, 3, 23, 59, 59, 999_999, tzinfo=UTC))
    store.remember("midnight", user_id="alice", occurred_at=datetime(2026, 3, 4, 0, 0, tzinfo=UTC))
    # ``until`` is read in UTC too: 00:30 at +02:00 on the 5th is still the 4th in UTC.
    got = store.activity(user_id="alice", days=3, until=at(5, 0, 30, tz=PLUS_TWO))
    assert got.days == [date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 4)]
    assert got.episodes == [1, 1, 1]


def test_episodes_outside_the_window_are_not_counted(store):
    store.remember("before", user_id="alice", occurred_at=datetime(2026, 3, 1, 23, 59, 59, tzinfo=UTC))
    store.remember("inside", user_id="alice", occurred_at=at(2, 0, 0))
    store.remember("after", user_id="alice", occurred_at=datetime(2026, 3, 4, 0, 0, tzinfo=UTC))
    assert store.activity(user_id="alice", days=2, until=at(3, 23, 59)).episodes == [1, 0]


def test_another_tenants_episodes_never_count(store):
    store.remember("mine", user_id="alice", occurred_at=at(2))
    for i in range(5):  # same days, same session name: only the tenant tells them apart
        store.remember(f"theirs {i}", user_id="bob", session_id="s", occurred_at=at(2 + i % 2))
        store.remember(f"nobody's {i}", user_id=None, session_id="s", occurred_at=at(2 + i % 2))
    assert store.activity(user_id="alice", days=2, until=at(3)).episodes == [1, 0]
    assert store.activity(user_id="bob", days=2, until=at(3)).episodes == [3, 2]
    assert store.activity(user_id=None, days=2, until=at(3)).episodes == [3, 2]


def test_until_defaults_to_the_stores_clock(store, clock):
    clock[0] = at(10, 8)
    store.remember("today", user_id="alice")  # occurred_at defaults to the same clock
    got = store.activity(user_id="alice", days=2)
    assert got.days[-1] == date(2026, 3, 10) and got.episodes == [0, 1]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"days": 0}, InvalidInputError),
        ({"days": -3}, InvalidInputError),
        ({"days": "7"}, InvalidInputError),
        ({"days": 100_000}, InvalidInputError),
        ({"until": datetime(2026, 3, 3)}, NaiveDatetimeError),
        ({"until": "2026-03-03"}, InvalidInputError),
        ({"until": datetime(1, 1, 5, tzinfo=UTC), "days": 30}, InvalidInputError),
        ({"user_id": ""}, InvalidInputError),
    ],
)
def test_bad_input_raises_a_typed_error_and_changes_nothing(store, db_path, kwargs, error):
    store.remember("x", user_id="alice", occurred_at=T0)
    before = dump(db_path)
    with pytest.raises(error):
        store.activity(**{"user_id": "alice", **kwargs})
    assert dump(db_path) == before


def test_a_tenant_without_episodes_gets_zeros(store):
    store.update_block("persona", "quiet", user_id="carol")
    assert store.activity(user_id="carol", days=4, until=T0).episodes == [0, 0, 0, 0]
