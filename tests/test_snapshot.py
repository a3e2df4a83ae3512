"""snapshot(as_of=): a tenant's memory at a past moment equals what the API answered at that
moment, tier by tier, wherever the store keeps what it needs; where it does not, the snapshot
says so instead of guessing. Both engines."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from store.errors import InvalidInputError

from .conftest import T0


def tick(clock, seconds: int = 1) -> None:
    clock[0] = clock[0] + timedelta(seconds=seconds)


def said_now(store, sessions: list[str]) -> dict:
    return {
        "blocks": store.working(user_id="u"),
        "facts": store.facts(user_id="u"),
        "episodes": len(store.episodes(user_id="u", limit=1000).items),
        "sessions": {
            name: (
                sorted(store.session(name, user_id="u").get_all().items()),
                store.session(name, user_id="u").get_task_state(),
                [n.content for n in store.session(name, user_id="u").get_scratchpad()],
            )
            for name in sessions
        },
        "session_episodes": {i.session_id: i.episodes for i in store.sessions(user_id="u")},
    }


def as_said(snap) -> dict:
    return {
        "blocks": snap.blocks,
        "facts": snap.facts,
        "episodes": snap.episodes,
        "sessions": {
            s.session_id: (sorted((e.key, e.value) for e in s.kv), s.task_state, [n.content for n in s.scratchpad]) for s in snap.sessions
        },
        "session_episodes": {s.session_id: s.episodes for s in snap.sessions},
    }


@pytest.mark.parametrize("seed", [5, 6])
def test_a_snapshot_of_any_moment_is_what_the_api_said_then(store, clock, seed):
    """Each session is checkpointed after every change, so every tier can be rebuilt; the
    answers of the API are recorded after each step and compared with snapshot(as_of=)."""
    rng = random.Random(seed)
    sessions = ["trip", "work"]
    said = []
    for step in range(40):
        what = rng.choice(["block", "block", "fact", "episode", "kv", "task", "note", "delete"])
        name = rng.choice(sessions)
        memory = store.session(name, user_id="u")
        if what == "block":
            store.update_block(rng.choice(["persona", "goals"]), f"text {step}", user_id="u")
        elif what == "fact":
            store.add_fact(
                "u", rng.choice(["lives_in", "works_at"]), f"place {step}", user_id="u", valid_from=T0 + timedelta(days=rng.randrange(30))
            )
        elif what == "episode":
            store.remember(f"said {step}", "ok", user_id="u", session_id=name, occurred_at=clock[0])
        elif what == "kv":
            memory.set(rng.choice(["a", "b"]), step)
        elif what == "task":
            memory.set_task_state(f"task {step}", total_steps=10)
        elif what == "note":
            memory.append_scratchpad(f"note {step}")
        else:
            memory.delete(rng.choice(["a", "b"]))
        if what in ("kv", "task", "note", "delete", "episode"):
            memory.create_checkpoint(f"after step {step}")
        known = [s for s in sessions if s in {i.session_id for i in store.sessions(user_id="u")}]
        said.append((clock[0], said_now(store, known)))
        tick(clock, rng.choice([1, 30, 600]))
    for at, answer in said:
        snap = store.snapshot(user_id="u", as_of=at)
        assert as_said(snap) == answer
        assert all(s.source != "unknown" for s in snap.sessions) and snap.as_of == at


def test_a_session_changed_since_without_a_checkpoint_is_shown_as_unknown_and_said_to_be(store, clock):
    trip = store.session("trip", user_id="u")
    trip.set("hotel", "Memmo")
    tick(clock)
    kept = store.session("kept", user_id="u")
    kept.set("k", 1)
    tick(clock)
    then = clock[0]
    tick(clock)
    trip.set("hotel", "Pestana")  # changed after the moment, and never checkpointed
    snap = store.snapshot(user_id="u", as_of=then)
    by_name = {s.session_id: s for s in snap.sessions}
    assert by_name["trip"].source == "unknown" and by_name["trip"].kv == []
    assert by_name["kept"].source == "current" and [(e.key, e.value) for e in by_name["kept"].kv] == [("k", 1)]
    assert by_name["kept"].updated_at is not None and by_name["kept"].updated_at <= then and by_name["trip"].updated_at is None
    assert any("'trip'" in gap for gap in snap.gaps) and not any("'kept'" in gap for gap in snap.gaps)
    trip.create_checkpoint("later")  # a checkpoint after the moment does not help it
    assert {s.session_id: s.source for s in store.snapshot(user_id="u", as_of=then).sessions}["trip"] == "unknown"


def test_a_deleted_key_counts_as_a_change(store, clock):
    """A delete writes no row; it moves the session's time, so the snapshot does not show the
    session as unchanged with the key missing that was there at the moment."""
    memory = store.session("s", user_id="u")
    memory.set("a", 1)
    tick(clock)
    then = clock[0]
    tick(clock)
    memory.delete("a")
    session = store.snapshot(user_id="u", as_of=then).sessions[0]
    assert session.source == "unknown"


def test_the_moment_is_checked(store):
    from datetime import datetime

    with pytest.raises(InvalidInputError):
        store.snapshot(user_id="u", as_of=datetime(2026, 1, 1))  # naive
    with pytest.raises(TypeError):
        store.snapshot(user_id="u")  # type: ignore[call-arg]


def test_the_timeline_lists_each_change_once_newest_first_and_each_moment_is_a_snapshot(store, clock):
    # Another tenant's facts about the same subject, superseded too: none of it is u's timeline.
    store.add_fact("u", "lives_in", "Rome", user_id="other", valid_from=T0)
    store.add_fact("u", "lives_in", "Oslo", user_id="other", valid_from=T0 + timedelta(days=2))
    store.update_block("persona", "v1", user_id="u")
    tick(clock)
    store.add_fact("u", "lives_in", "Paris", user_id="u", valid_from=T0)
    tick(clock)
    memory = store.session("trip", user_id="u")
    memory.set("hotel", "Memmo")
    tick(clock)
    store.update_block("persona", "v2", user_id="u")
    tick(clock)
    store.add_fact("u", "lives_in", "Berlin", user_id="u", valid_from=T0 + timedelta(days=1))
    tick(clock)
    memory.create_checkpoint("before the move")
    tick(clock)
    store.delete_block("persona", user_id="u")
    changes = store.timeline(user_id="u")
    assert [(c.tier, c.kind, c.name, c.detail) for c in changes] == [
        ("block", "deleted", "persona", "v2"),
        ("session", "checkpoint", "trip", "before the move"),
        ("fact", "recorded", "u lives_in", "Berlin"),
        ("fact", "validity changed", "u lives_in", "Paris (was open)"),
        ("block", "written", "persona", "v2"),
        ("session", "started", "trip", ""),
        ("fact", "recorded", "u lives_in", "Paris"),
        ("block", "written", "persona", "v1"),
    ]
    assert [c.at for c in changes] == sorted((c.at for c in changes), reverse=True)
    window = store.timeline(user_id="u", since=T0 + timedelta(seconds=4), until=T0 + timedelta(seconds=6))
    # Paris was recorded before the window: the change to it names it all the same.
    assert [(c.kind, c.detail) for c in window] == [
        ("checkpoint", "before the move"),
        ("recorded", "Berlin"),
        ("validity changed", "Paris (was open)"),
    ]
    assert len(store.timeline(user_id="u", limit=2)) == 2
    # Each moment can be shown: at the second block write, the block read v2 and Paris was current.
    moment = next(c.at for c in changes if c.detail == "v2" and c.kind == "written")
    snap = store.snapshot(user_id="u", as_of=moment)
    assert [b.content for b in snap.blocks] == ["v2"] and [f.object for f in snap.facts] == ["Paris"]
    store.forget(user_id="u")
    assert store.timeline(user_id="u") == []


def test_a_diff_between_two_moments_names_every_change_and_nothing_else(store, clock):
    store.update_block("persona", "planner", user_id="u")
    store.update_block("goals", "Lisbon in March", user_id="u")
    paris = store.add_fact("u", "lives_in", "Paris", user_id="u", valid_from=T0)
    vegan = store.add_fact("u", "diet", "vegan", user_id="u", valid_from=T0)
    memory = store.session("trip", user_id="u")
    memory.set("hotel", "Memmo")
    memory.set("budget", 1200)
    memory.append_scratchpad("book the train")
    memory.create_checkpoint("before")  # so the session can be rebuilt at a
    tick(clock)
    a = clock[0]
    tick(clock)
    store.update_block("goals", "Porto in April", user_id="u")
    store.delete_block("persona", user_id="u")
    store.update_block("notes", "new block", user_id="u")
    berlin = store.add_fact("u", "lives_in", "Berlin", user_id="u", valid_from=T0 + timedelta(days=1))
    store.remember("moved", "ok", user_id="u", occurred_at=clock[0])
    memory.set("hotel", "Pestana")
    memory.delete("budget")
    memory.set("train", "Alfa")
    memory.append_scratchpad("pack")
    memory.create_checkpoint("after")
    tick(clock)
    b = clock[0]
    d = store.memory_diff(user_id="u", a=a, b=b)
    assert [(c.name, c.before, c.after) for c in d.blocks] == [
        ("goals", "Lisbon in March", "Porto in April"),
        ("notes", None, "new block"),
        ("persona", "planner", None),
    ]
    assert [f.id for f in d.facts_added] == [berlin.id] and [f.id for f in d.facts_removed] == [paris.id]
    assert vegan.id not in {f.id for f in d.facts_added + d.facts_removed}
    assert d.episodes_added == 1
    (trip,) = d.sessions
    assert (trip.added_keys, trip.removed_keys, trip.changed_keys) == ({"train": "Alfa"}, {"budget": 1200}, {"hotel": ("Memmo", "Pestana")})
    assert trip.scratchpad_added == ["pack"] and trip.scratchpad_removed == []
    assert [gap for gap in d.gaps if "as of its checkpoint" not in gap] == []  # both moments rebuilt in full
    assert store.memory_diff(user_id="u", a=b, b=b).is_empty
    unseen = store.session("unseen", user_id="u")
    unseen.set("k", 1)
    tick(clock)
    c = clock[0]
    tick(clock)
    unseen.set("k", 2)  # changed after c, never checkpointed: the diff cannot see its state at c
    assert any("'unseen'" in gap and "no checkpoint" in gap for gap in store.memory_diff(user_id="u", a=c, b=clock[0]).gaps)
