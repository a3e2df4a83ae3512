"""Arshai's documented store / retrieve / update / delete cycle, on store.compat.arshai."""

import time

import pytest

pytest.importorskip("arshai")

from arshai.core.interfaces.imemorymanager import IMemoryInput, IWorkingMemory  # noqa: E402
from arshai.memory.memory_types import ConversationMemoryType  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.compat.arshai import MemlensMemoryManager  # noqa: E402

WM = ConversationMemoryType.WORKING_MEMORY


def put(conv, text, memory_type=WM, **kw):
    return IMemoryInput(conversation_id=conv, memory_type=memory_type, data=[IWorkingMemory(working_memory=text)], **kw)


def ask(conv, memory_type=WM):
    return IMemoryInput(conversation_id=conv, memory_type=memory_type)


@pytest.fixture
def manager(tmp_path):
    m = MemlensMemoryManager(tmp_path / "a.db")
    yield m
    m.memory_store.close()


def test_documented_cycle(manager):
    key = manager.store(put("conv_123", "User's name is Alice", metadata={"source": "user_preference"}))
    assert key == "memory:WORKING_MEMORY:conv_123"
    assert [m.working_memory for m in manager.retrieve(ask("conv_123"))] == ["User's name is Alice"]
    manager.update(put("conv_123", "User prefers SMS communication (updated)"))
    assert manager.retrieve(ask("conv_123"))[0].working_memory == "User prefers SMS communication (updated)"
    manager.delete(ask("conv_123"))
    assert manager.retrieve(ask("conv_123")) == []


def test_types_and_conversations_are_separate(manager):
    manager.store(put("c1", "working"))
    manager.store(put("c1", "short", ConversationMemoryType.SHORT_TERM_MEMORY))
    manager.store(put("c2", "other"))
    assert manager.retrieve(ask("c1"))[0].working_memory == "working"
    assert manager.retrieve(ask("c1", ConversationMemoryType.SHORT_TERM_MEMORY))[0].working_memory == "short"
    assert manager.retrieve(ask("c1", ConversationMemoryType.LONG_TERM_MEMORY)) == []


def test_store_replaces_and_empty_data_is_refused(manager):
    manager.store(put("c", "one"))
    manager.store(put("c", "two"))
    assert [m.working_memory for m in manager.retrieve(ask("c"))] == ["two"]
    with pytest.raises(ValueError):
        manager.store(ask("c"))
    with pytest.raises(ValueError):
        manager.update(ask("c"))


def test_update_of_a_missing_memory_creates_nothing(manager):
    manager.update(put("nobody", "text"))
    assert manager.retrieve(ask("nobody")) == []


def test_ttl_expires_and_update_does_not_extend_it(tmp_path):
    m = MemlensMemoryManager(tmp_path / "t.db", ttl=1)
    m.store(put("c", "v1"))
    time.sleep(0.6)
    m.update(put("c", "v2"))
    assert m.retrieve(ask("c"))[0].working_memory == "v2"
    time.sleep(0.6)
    assert m.retrieve(ask("c")) == []
    m.memory_store.close()


def test_persists_across_processes_reopen(tmp_path):
    MemlensMemoryManager(tmp_path / "p.db").store(put("c", "kept"))
    again = MemlensMemoryManager(MemoryStore.open(tmp_path / "p.db"))
    assert again.retrieve(ask("c"))[0].working_memory == "kept"


def test_expired_memories_are_cleared_as_arshais_docs_say_and_storage_lists_the_live_ones(tmp_path):
    """Arshai's documentation tells users to call _clear_expired_memory(); its InMemoryManager
    keeps its memories in .storage by "memory:TYPE:conversation"."""
    import sqlite3
    from datetime import UTC, datetime, timedelta

    from store.validation import set_clock

    start = datetime(2026, 11, 1, tzinfo=UTC)
    manager = MemlensMemoryManager(tmp_path / "a.db", ttl=60)
    try:
        set_clock(lambda: start)
        manager.store(put("c1", "soon past its TTL"))
        set_clock(lambda: start + timedelta(seconds=30))
        manager.store(put("c2", "still live"))
        set_clock(lambda: start + timedelta(seconds=61))
        assert list(manager.storage) == ["memory:WORKING_MEMORY:c2"]
        assert manager.storage["memory:WORKING_MEMORY:c2"]["data"] == {"working_memory": "still live"}
        with pytest.raises(TypeError):
            manager.storage["memory:WORKING_MEMORY:c3"] = {}  # a copy that could not write back
        with sqlite3.connect(tmp_path / "a.db") as raw:
            assert raw.execute("SELECT count(*) FROM kv_entries").fetchone()[0] == 2  # hidden, not yet deleted
        manager._clear_expired_memory()
        with sqlite3.connect(tmp_path / "a.db") as raw:
            assert raw.execute("SELECT count(*) FROM kv_entries").fetchone()[0] == 1
        assert [m.working_memory for m in manager.retrieve(ask("c2"))] == ["still live"]
    finally:
        set_clock(None)
        manager.memory_store.close()
