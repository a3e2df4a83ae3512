from datetime import timedelta

import pytest

from store import testing
from store.errors import InvalidInputError, UnknownCheckpointError, UnknownSessionError


def test_set_get_delete_exists_and_listing(store):
    mem = store.session("s", user_id="u")
    mem.set("b", {"x": [1, 2]})
    mem.set("a", "text")
    assert mem.get("b") == {"x": [1, 2]}
    assert mem.get("missing", "dflt") == "dflt"
    assert mem.list_keys() == ["a", "b"] and mem.get_all() == {"a": "text", "b": {"x": [1, 2]}}
    assert mem.exists("a") and mem.delete("a") and not mem.exists("a") and not mem.delete("a")


def test_expired_keys_are_invisible_then_purged(store, clock):
    mem = store.session("s", user_id="u")
    mem.set("short", 1, ttl=10)
    mem.set("long", 2, ttl=timedelta(hours=1))
    mem.set("forever", 3)
    clock[0] += timedelta(seconds=11)
    assert mem.get("short") is None and not mem.exists("short")
    assert mem.list_keys() == ["forever", "long"]
    assert store.purge_expired() == 1
    assert mem.get_stats().keys == 2


def test_a_touch_slides_an_expiry_and_a_rewrite_keeps_the_creation_time(store, clock):
    mem = store.session("s", user_id="u")
    start = clock[0]
    mem.set("sliding", 1, ttl=10)
    mem.set("forever", 2)
    clock[0] += timedelta(seconds=8)
    assert mem.touch("sliding", "forever", "missing") == 1  # only an entry with a time to live moves
    entry = mem.entry("sliding")
    assert entry.expires_at == clock[0] + timedelta(seconds=10) and entry.ttl_seconds == 10
    assert entry.updated_at == start and entry.created_at == start  # a touch is no write
    clock[0] += timedelta(seconds=8)  # 16 s after the write, 8 after the touch: still live
    assert mem.get("sliding") == 1
    mem.set("sliding", 3)  # rewritten without a time to live: it keeps its creation, loses its expiry
    entry = mem.entry("sliding")
    assert (entry.created_at, entry.updated_at, entry.expires_at, entry.ttl_seconds) == (start, clock[0], None, None)
    clock[0] += timedelta(seconds=11)
    assert mem.get("sliding") == 3 and mem.touch("sliding") == 0
    mem.set("brief", 4, ttl=1)
    clock[0] += timedelta(seconds=2)
    assert mem.touch("brief") == 0 and mem.get("brief") is None  # an expired entry is not revived


def test_bad_ttl_is_refused(store):
    with pytest.raises(InvalidInputError):
        store.session("s", user_id="u").set("k", 1, ttl=-5)


def test_task_progress_is_clamped_and_computed(store):
    mem = store.session("s", user_id="u")
    assert mem.get_task_state() is None
    mem.set_task_state("migrate db", total_steps=4)
    assert mem.update_task_progress(1).progress_percent == 25.0
    assert mem.update_task_progress(progress_percent=250).progress_percent == 100.0
    assert mem.update_task_progress(progress_percent=-3).progress_percent == 0.0
    state = mem.update_task_progress(4, status="done", data={"k": 1})
    assert (state.task, state.current_step, state.status, state.data) == ("migrate db", 4, "done", {"k": 1})
    assert mem.get_task_state() == state


def test_scratchpad_keeps_the_newest_up_to_the_cap(tmp_path):
    from store import MemoryStore

    with MemoryStore.open(tmp_path / "s.db", scratchpad_limit=3) as s:
        mem = s.session("s", user_id="u")
        for i in range(5):
            mem.append_scratchpad(f"n{i}")
        assert [e.content for e in mem.get_scratchpad()] == ["n2", "n3", "n4"]
        assert [e.content for e in mem.get_scratchpad(limit=1)] == ["n4"]
        assert mem.clear_scratchpad() == 3 and mem.get_scratchpad() == []


def test_checkpoint_restore_and_diff(store):
    mem = store.session("s", user_id="u")
    mem.set("keep", 1)
    mem.set("change", "old")
    mem.set_task_state("t", total_steps=2)
    mem.append_scratchpad("first")
    cp1 = mem.create_checkpoint("one")
    mem.set("change", "new")
    mem.set("added", True)
    mem.delete("keep")
    mem.update_task_progress(2)
    mem.append_scratchpad("second")
    cp2 = mem.create_checkpoint("two")

    diff = mem.diff_checkpoint(cp1, cp2)
    assert diff.added_keys == {"added": True} and diff.removed_keys == {"keep": 1}
    assert diff.changed_keys == {"change": ("old", "new")}
    assert diff.scratchpad_added == ["second"] and diff.task_state_after.current_step == 2
    assert mem.diff_checkpoint(cp2).is_empty

    mem.restore_checkpoint(cp1)
    assert mem.get_all() == {"keep": 1, "change": "old"}
    assert mem.get_task_state().current_step == 0
    assert [e.content for e in mem.get_scratchpad()] == ["first"]
    assert [c.description for c in mem.list_checkpoints()] == ["one", "two"]
    mem.delete_checkpoint(cp2)
    assert [c.id for c in mem.list_checkpoints()] == [cp1]


def test_restore_is_all_or_nothing(store):
    """A restore that fails half-way (here: a damaged scratchpad note, written last) changes nothing."""
    import json

    from sqlalchemy import update

    from store.schema import checkpoints_t

    mem = store.session("s", user_id="u")
    mem.set("k", "before")
    cp = mem.create_checkpoint()
    mem.set("k", "after")
    mem.append_scratchpad("note")
    damaged = {"kv": {"k": {"value": '"before"', "expires_at": None}}, "task_state": None, "scratchpad": [{"created_at": "bad"}]}
    with testing.backend(store).write() as conn:
        conn.execute(update(checkpoints_t).values(snapshot=json.dumps(damaged)))
    with pytest.raises(TypeError):
        mem.restore_checkpoint(cp)
    assert mem.get("k") == "after" and [e.content for e in mem.get_scratchpad()] == ["note"]


def test_unknown_checkpoint_and_session_ids(store):
    mem = store.session("s", user_id="u")
    with pytest.raises(UnknownCheckpointError):
        mem.restore_checkpoint("nope")
    with pytest.raises(UnknownCheckpointError):
        mem.diff_checkpoint("nope")
    with pytest.raises(UnknownCheckpointError):
        mem.delete_checkpoint("nope")
    with pytest.raises(UnknownSessionError):
        store.session("never-seen", user_id="u", create=False)
    store.remember("hi", user_id="u", session_id="from-episode")
    assert store.session("from-episode", user_id="u", create=False).session_id == "from-episode"


def test_checkpoint_of_another_tenant_is_unknown(store):
    cp = store.session("s", user_id="u").create_checkpoint()
    with pytest.raises(UnknownCheckpointError):
        store.session("s", user_id="v").restore_checkpoint(cp)


def test_clear_keeps_checkpoints(store):
    mem = store.session("s", user_id="u")
    mem.set("k", 1)
    mem.append_scratchpad("x")
    cp = mem.create_checkpoint()
    mem.clear()
    assert mem.get_all() == {} and mem.get_scratchpad() == [] and mem.get_task_state() is None
    mem.restore_checkpoint(cp)
    assert mem.get_all() == {"k": 1}


def test_stats_and_sessions_listing(store):
    store.remember("q", "a", user_id="u", session_id="s")
    mem = store.session("s", user_id="u")
    mem.set("k", 1)
    mem.create_checkpoint()
    stats = mem.get_stats()
    assert (stats.keys, stats.checkpoints, stats.episodes, stats.has_task_state) == (1, 1, 1, False)
    assert [(s.session_id, s.episodes) for s in store.sessions(user_id="u")] == [("s", 1)]


@pytest.mark.parametrize("per_read", [None, 2], ids=["one read", "two tenants a read"])
def test_keyed_sessions_lists_every_tenants_sessions_holding_a_live_key(store, clock, monkeypatch, per_read):
    if per_read is not None:  # PostgreSQL reads a few tenants at a time; here every path runs on both engines
        monkeypatch.setattr(testing.backend(store), "tenants_per_read", per_read)
    for user in ("carol", "alice", None, "bob", "dave"):
        store.session("lg:notes", user_id=user).set("k", 1)
    store.session("lg:brief", user_id="alice").set("k", 1, ttl=10)  # expires below
    store.session("lg:emptied", user_id="bob").set("k", 1)
    store.session("lg:emptied", user_id="bob").delete("k")  # the session stays, with no key
    store.remember("hello", "hi", user_id="bob", session_id="lg:episodes-only")
    store.session("lg_x", user_id="alice").set("k", 1)  # '_' is a LIKE wildcard: must not match 'lg:'
    store.session("other", user_id="carol").set("k", 1)
    clock[0] += timedelta(seconds=11)
    assert store.keyed_sessions("lg:") == [
        ("alice", "lg:notes"),
        ("bob", "lg:notes"),
        ("carol", "lg:notes"),
        ("dave", "lg:notes"),
        (None, "lg:notes"),
    ]
    assert store.keyed_sessions("lg_") == [("alice", "lg_x")]
    assert ("carol", "other") in store.keyed_sessions()
    store.forget(user_id="dave")
    assert ("dave", "lg:notes") not in store.keyed_sessions("lg:")
    for bad in (None, 3, "a\x00"):
        with pytest.raises(InvalidInputError):
            store.keyed_sessions(bad)
