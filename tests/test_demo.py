"""The full demo `memlens demo` builds: deterministic, the promised size and shape, facts that
change over time, identifiers among near misses. Built on the fake embedder; the README's
queries against the real model are in test_demo_queries.py."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from store import MemoryStore
from store.demo import DEMO_NOW, build_demo_store
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError

from .conftest import dump

ROOT = Path(__file__).resolve().parent.parent
USERS = ("alice", "bob", "carol")

# One build per process, stable clock and ids, so two processes can be compared byte for byte.
BUILD = """
import sys
from store.demo import DEMO_NOW, build_demo_store
from store.embedding import FakeEmbedder
from store.tiers.common import set_id_source
from store.validation import set_clock
counter = iter(range(1, 1 << 30))
set_clock(lambda: DEMO_NOW)
set_id_source(lambda: f"{next(counter):032x}")
build_demo_store(sys.argv[1], embedder=FakeEmbedder()).close()
"""


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo_store(path, embedder=FakeEmbedder()).close()
    store = MemoryStore.open(path, read_only=True, embedder=FakeEmbedder())
    yield store
    store.close()


def test_two_runs_in_two_processes_write_the_same_bytes(tmp_path):
    paths = [tmp_path / "one.db", tmp_path / "two.db"]
    for path, seed in zip(paths, ("1", "2"), strict=True):  # different hash seeds: no set or dict order may leak in
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", BUILD, str(path)], check=True, env=env, timeout=120)
    one, two = dump(paths[0]), dump(paths[1])
    assert len(one) > 1000 and one == two


def test_each_persona_has_a_few_hundred_episodes_over_weeks_of_sessions(full):
    tenants = {t.user_id: t.counts for t in full.tenants()}
    assert set(tenants) == {*USERS, None}
    for user in USERS:
        counts = tenants[user]
        assert 170 <= counts.episodes <= 260, (user, counts)
        assert counts.sessions >= 40 and counts.blocks >= 2 and counts.facts >= 10
        assert counts.kv_entries and counts.scratchpad_entries and counts.checkpoints
        page = full.episodes(user_id=user, limit=10_000)
        times = [e.occurred_at for e in page.items]
        assert max(times) < DEMO_NOW and max(times) - min(times) > timedelta(weeks=7)
        with_tools = [e for e in page.items if e.tool_calls]
        assert len(with_tools) >= counts.episodes // 5, user
        said = Counter((e.input, e.output) for e in page.items)
        assert said.most_common(1)[0][1] == 1, f"{user} says the same thing twice: {said.most_common(1)}"


def test_sessions_are_mid_task_with_checkpoints(full):
    trip = full.session("trip-lisbon", user_id="alice", create=False)
    task = trip.get_task_state()
    assert (task.current_step, task.total_steps) == (3, 5) and task.status != "done"
    assert [c.description for c in trip.list_checkpoints()] == ["after hotel hold", "after train booked"]
    assert "transport" in trip.diff_checkpoint(trip.list_checkpoints()[0].id).added_keys
    plan = full.session("training-plan", user_id="carol", create=False)
    assert plan.get_task_state().current_step == 9 and plan.get("long_run_km") == 18
    assert full.session("tickets-payments", user_id="bob", create=False).get_task_state().current_step == 2


@pytest.mark.parametrize(
    "user, subject, predicate, story",
    [
        ("alice", "alice", "lives_in", ["Lisbon", "Porto"]),
        ("alice", "alice", "diet", ["pescatarian", "vegetarian"]),
        ("bob", "orders-service", "framework", ["FastAPI", "Litestar"]),
        ("bob", "orders-service", "database", ["PostgreSQL 14", "PostgreSQL 16"]),
        ("carol", "carol", "medication", ["ibuprofen 400 mg twice daily", "ibuprofen 200 mg once daily", "none"]),
    ],
)
def test_facts_change_over_time_and_the_as_of_view_tells_the_story(full, user, subject, predicate, story):
    history = sorted(
        (f for f in full.facts(user_id=user, subject=subject, include_history=True) if f.predicate == predicate), key=lambda f: f.valid_from
    )
    assert [f.object for f in history] == story
    for older, newer in itertools.pairwise(history):
        assert older.valid_until == newer.valid_from  # superseded, not deleted
        as_of = full.facts(user_id=user, subject=subject, valid_at=older.valid_from + timedelta(seconds=1))
        assert [f.object for f in as_of if f.predicate == predicate] == [older.object]
    assert [f.object for f in full.facts(user_id=user, subject=subject) if f.predicate == predicate] == [story[-1]]


@pytest.mark.parametrize(
    "user, wanted, near_misses",
    [
        ("alice", "ORD-48213", ["ORD-48231", "ORD-42813", "ORD-48218", "ORD-84213"]),
        ("bob", "PAY-1432", ["PAY-1423", "PAY-1342", "PAY-1433"]),
        ("carol", "APT-70522", ["APT-70252", "APT-75022", "APT-70523"]),
    ],
)
def test_an_exact_identifier_stands_among_near_misses(full, user, wanted, near_misses):
    texts = [e.input + e.output for e in full.episodes(user_id=user, limit=10_000).items]
    for near in near_misses:
        assert any(near in text for text in texts), near
    hits = full.recall(wanted, user_id=user, mode="keyword", limit=10)
    assert wanted in hits[0].text and all(wanted not in h.text for h in hits[1:])


def test_every_time_the_build_stamped_is_dated_before_the_demos_now(full):
    """A tenant's last activity, a session's update, a checkpoint, a fact's recording: every
    time column but a key's expiry, in every table, ends at DEMO_NOW, not at the build; the
    keys with a time to live are still alive."""
    from sqlalchemy import func, select

    from store import testing
    from store.schema import Base, UtcMicros
    from store.validation import utcnow

    latest = {}
    with testing.backend(full).read() as conn:
        for table in Base.metadata.sorted_tables:
            for column in table.columns:
                if isinstance(column.type, UtcMicros) and column.name != "expires_at":
                    latest[f"{table.name}.{column.name}"] = conn.execute(select(func.max(column))).scalar()
    assert latest["tenants.last_activity"] is not None and latest["checkpoints.created_at"] is not None
    assert {name: at for name, at in latest.items() if at is not None and at > DEMO_NOW} == {}
    for summary in full.tenants():
        assert DEMO_NOW - timedelta(minutes=10) <= summary.last_activity <= DEMO_NOW
        for info in full.sessions(user_id=summary.user_id):
            assert info.updated_at <= DEMO_NOW
    from store.schema import kv_t

    with testing.backend(full).read() as conn:
        expiries = list(conn.execute(select(kv_t.c.expires_at).where(kv_t.c.expires_at.is_not(None))).scalars())
    assert len(expiries) >= 3 and min(expiries) > utcnow()  # on the real clock


def test_the_compact_demo_is_still_there_for_the_snapshots(tmp_path):
    with build_demo_store(tmp_path / "compact.db", size="compact", embedder=FakeEmbedder()) as store:
        counts = {t.user_id: t.counts.episodes for t in store.tenants()}
    assert counts == {"alice": 15, "bob": 12, "carol": 7, None: 3}


def test_an_unknown_size_is_refused_and_creates_nothing(tmp_path):
    with pytest.raises(InvalidInputError, match="size"):
        build_demo_store(tmp_path / "demo.db", size="huge", embedder=FakeEmbedder())
    assert list(tmp_path.iterdir()) == []


def test_the_build_dates_each_thing_at_its_moment_in_the_story(full):
    """A checkpoint "before the knee" is dated before the knee episode, and a session the agent
    last touched with an episode was last updated then, not in the second the demo was built."""
    plan = full.session("training-plan", user_id="carol", create=False)
    (checkpoint,) = plan.list_checkpoints()
    knee = [e for e in full.episodes(user_id="carol", limit=1000).items if "swells up whenever I go downstairs" in e.input]
    assert knee and checkpoint.description == "week 4, before the knee"
    assert checkpoint.created_at < min(e.occurred_at for e in knee)
    for summary in full.tenants():
        sessions = full.sessions(user_id=summary.user_id)
        seconds = {info.updated_at.replace(microsecond=0) for info in sessions}
        assert len(seconds) >= len(sessions) * 0.8, summary.user_id  # not one second for them all
