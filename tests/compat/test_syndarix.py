"""syndarix's documented WorkingMemory semantics, checked on store.compat.syndarix."""

import asyncio

import pytest

from store import MemoryStore
from store.compat.syndarix import MemoryNotFoundError, ScopeContext, ScopeLevel, TaskState, WorkingMemory


@pytest.fixture
def mem_store(tmp_path):
    store = MemoryStore.open(tmp_path / "s.db")
    yield store
    store.close()


@pytest.fixture
async def wm(mem_store):
    return await WorkingMemory.for_session("sess", project_id="proj", store=mem_store)


async def test_set_get_default_and_none_value(wm):
    await wm.set("a", {"x": [1, 2]})
    assert await wm.get("a") == {"x": [1, 2]}
    assert await wm.get("missing", "dflt") == "dflt"
    await wm.set("n", None)
    assert await wm.get("n", "dflt") == "dflt"  # syndarix: a None value reads as the default


async def test_reserved_keys_refused(wm):
    with pytest.raises(ValueError):
        await wm.set("_task_state", 1)
    with pytest.raises(ValueError):
        await wm.delete("_scratchpad")


async def test_delete_and_exists(wm):
    await wm.set("a", 1)
    assert await wm.exists("a")
    assert await wm.delete("a") is True
    assert await wm.delete("a") is False
    assert not await wm.exists("a")


async def test_ttl_seconds_and_default_ttl(mem_store):
    wm = await WorkingMemory.for_session("s2", store=mem_store, default_ttl_seconds=1)
    await wm.set("short", 1, ttl_seconds=1)
    await wm.set("defaulted", 2)
    await wm.set("long", 3, ttl_seconds=3600)
    await asyncio.sleep(1.1)
    assert await wm.get("short") is None and await wm.get("defaulted") is None
    assert await wm.get("long") == 3


async def test_list_keys_glob_and_get_all(wm):
    for k in ("user:1", "user:2", "task:1", "userx"):
        await wm.set(k, k)
    assert sorted(await wm.list_keys()) == ["task:1", "user:1", "user:2", "userx"]
    assert sorted(await wm.list_keys("user:*")) == ["user:1", "user:2"]
    assert await wm.list_keys("user:?") == ["user:1", "user:2"] or sorted(await wm.list_keys("user:?")) == ["user:1", "user:2"]
    assert await wm.get_all() == {k: k for k in ("user:1", "user:2", "task:1", "userx")}


async def test_clear_counts_keys_and_keeps_task_state_and_scratchpad(wm):
    await wm.set("a", 1)
    await wm.set("b", 2)
    await wm.set_task_state(TaskState(task_id="t1", total_steps=4))
    await wm.append_scratchpad("note")
    assert await wm.clear() == 2
    assert await wm.get_all() == {}
    assert (await wm.get_task_state()).task_id == "t1"
    assert await wm.get_scratchpad() == ["note"]


async def test_task_state_round_trip_keeps_progress_as_given(wm):
    assert await wm.get_task_state() is None
    state = TaskState(
        task_id="t1", task_type="report", description="write it", total_steps=10, current_step=2, progress_percent=55.0, context={"k": "v"}
    )
    await wm.set_task_state(state)
    got = await wm.get_task_state()
    assert (got.task_id, got.task_type, got.description, got.current_step, got.total_steps, got.context) == (
        "t1",
        "report",
        "write it",
        2,
        10,
        {"k": "v"},
    )
    assert got.progress_percent == 55.0  # not recomputed as 20% from the steps
    assert got.started_at == state.started_at and got.updated_at >= state.started_at


async def test_update_task_progress_never_invents_a_task(wm):
    assert await wm.update_task_progress(current_step=3) is None
    assert await wm.get_task_state() is None


async def test_update_task_progress_changes_only_what_it_is_given(wm):
    await wm.set_task_state(TaskState(task_id="t", total_steps=10, current_step=1, progress_percent=5.0))
    updated = await wm.update_task_progress(current_step=4)
    assert updated.current_step == 4 and updated.progress_percent == 5.0
    updated = await wm.update_task_progress(progress_percent=150.0, status="running")
    assert updated.progress_percent == 100.0 and updated.status == "running" and updated.current_step == 4
    assert (await wm.get_task_state()).progress_percent == 100.0


async def test_scratchpad_with_timestamps_and_clear(wm):
    await wm.append_scratchpad("first")
    await wm.append_scratchpad("second")
    assert await wm.get_scratchpad() == ["first", "second"]
    stamped = await wm.get_scratchpad_with_timestamps()
    assert [e["content"] for e in stamped] == ["first", "second"]
    assert all(isinstance(e["timestamp"], str) and "T" in e["timestamp"] for e in stamped)
    assert await wm.clear_scratchpad() == 2
    assert await wm.get_scratchpad() == []


async def test_checkpoints_create_list_restore_delete(wm):
    await wm.set("a", 1)
    cp = await wm.create_checkpoint("before change")
    assert cp != await wm.create_checkpoint("another")  # memlens ids are 32 hex digits, not 36-char UUID text
    await wm.delete_checkpoint((await wm.list_checkpoints())[-1]["id"])
    await wm.set("a", 2)
    await wm.set("b", 3)
    listed = await wm.list_checkpoints()
    assert [(c["id"], c["description"]) for c in listed] == [(cp, "before change")] and "created_at" in listed[0]
    await wm.restore_checkpoint(cp)
    assert await wm.get_all() == {"a": 1}
    assert await wm.delete_checkpoint(cp) is True
    assert await wm.delete_checkpoint(cp) is False
    with pytest.raises(MemoryNotFoundError):
        await wm.restore_checkpoint(cp)


async def test_scope_levels_map_to_tenant_and_session(mem_store):
    a = await WorkingMemory.for_session("s", project_id="p1", store=mem_store)
    b = await WorkingMemory.for_session("s", project_id="p2", store=mem_store)
    c = await WorkingMemory.for_session("s", project_id="p1", agent_instance_id="agent-7", store=mem_store)
    await a.set("k", "a")
    await b.set("k", "b")
    await c.set("k", "c")
    assert [await m.get("k") for m in (a, b, c)] == ["a", "b", "c"]
    assert [s.session_id for s in mem_store.sessions(user_id="p1")] == ["agent-7/s", "s"] or sorted(
        s.session_id for s in mem_store.sessions(user_id="p1")
    ) == ["agent-7/s", "s"]
    assert a.scope.scope_type == ScopeLevel.SESSION and a.scope.parent.scope_id == "p1"
    direct = await WorkingMemory.create(ScopeContext(ScopeLevel.SESSION, "s", ScopeContext(ScopeLevel.PROJECT, "p2")), store=mem_store)
    assert await direct.get("k") == "b"


async def test_health_close_and_stats(wm):
    assert await wm.is_healthy() is True
    assert wm.is_using_fallback is False
    await wm.set("a", 1)
    await wm.append_scratchpad("x")
    await wm.create_checkpoint()
    stats = await wm.get_stats()
    assert stats["scope_type"] == "session" and stats["scope_id"] == "sess"
    assert (stats["user_keys"], stats["checkpoint_count"], stats["scratchpad_entries"], stats["has_task_state"]) == (1, 1, 1, False)
    await wm.close()
    assert await wm.get("a") == 1  # close leaves the shared store open


def _scope(*levels: tuple[ScopeLevel, str]) -> ScopeContext:
    scope = None
    for level, scope_id in levels:
        scope = ScopeContext(level, scope_id, scope)
    return scope


P = (ScopeLevel.PROJECT, "proj")
COLLIDED = [  # pairs of different scopes of one project that shared one memory before
    (_scope(P, (ScopeLevel.SESSION, "x")), _scope(P, (ScopeLevel.AGENT_TYPE, "x"))),
    (
        _scope(P, (ScopeLevel.AGENT_INSTANCE, "a/b"), (ScopeLevel.SESSION, "c")),
        _scope(P, (ScopeLevel.AGENT_INSTANCE, "a"), (ScopeLevel.SESSION, "b/c")),
    ),
    (
        _scope(P, (ScopeLevel.AGENT_TYPE, "planner"), (ScopeLevel.SESSION, "s")),
        _scope(P, (ScopeLevel.AGENT_TYPE, "coder"), (ScopeLevel.SESSION, "s")),
    ),
    (_scope(P, (ScopeLevel.SESSION, "agent_type=x")), _scope(P, (ScopeLevel.AGENT_TYPE, "x"))),
]


@pytest.mark.parametrize("first, second", COLLIDED, ids=["session vs agent type", "slash", "agent types", "encoded look-alike"])
async def test_different_scopes_never_share_memory(mem_store, first, second):
    one = await WorkingMemory.create(first, store=mem_store)
    other = await WorkingMemory.create(second, store=mem_store)
    await one.set("k", "first's")
    await other.set("k", "second's")
    assert await one.get("k") == "first's" and await other.get("k") == "second's"


def test_the_plain_scopes_keep_the_session_ids_they_had():
    from store.compat.syndarix import session_key

    assert session_key(_scope(P, (ScopeLevel.SESSION, "sess-1"))) == "sess-1"
    assert session_key(_scope(P, (ScopeLevel.AGENT_INSTANCE, "agent-7"), (ScopeLevel.SESSION, "s"))) == "agent-7/s"
    assert session_key(_scope((ScopeLevel.SESSION, "s"))) == "s"  # no project: the anonymous bucket
