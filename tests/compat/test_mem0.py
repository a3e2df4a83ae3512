"""memlens as mem0's ``Memory`` (store.compat.mem0): the same calls made on mem0 itself (its
local Qdrant and SQLite history; a hash embedder stands in for the hosted one) and on memlens
give the same answers, and what mem0 needs an LLM for is refused, not faked."""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-home-"))
pytest.importorskip("mem0")

from mem0 import Memory  # noqa: E402
from mem0.exceptions import ValidationError as Mem0ValidationError  # noqa: E402
from mem0.utils.factory import EmbedderFactory  # noqa: E402

from store.compat.mem0 import MemlensMemory, memory_predicate, memory_scope  # noqa: E402
from store.compat.mem0_source import import_mem0  # noqa: E402
from store.memory import MemoryStore  # noqa: E402
from tests.compat.mem0_support import local_config  # noqa: E402


@pytest.fixture
def mem0_config(tmp_path, monkeypatch) -> dict:
    monkeypatch.setitem(EmbedderFactory.provider_to_class, "openai", "tests.compat.mem0_support.HashEmbedding")
    return local_config(tmp_path, "t")


@pytest.fixture
def both(mem0_config, tmp_path):
    theirs = Memory.from_config(mem0_config)
    ours = MemlensMemory(MemoryStore.open(tmp_path / "memlens.db", embedder=None))
    yield theirs, ours
    theirs.close()
    ours.memory_store.close()


def texts(result: dict) -> list[str]:
    return sorted(item["memory"] for item in result["results"])


def events(history: list[dict]) -> list[tuple]:
    return [(e["event"], e["old_memory"], e["new_memory"], bool(e["is_deleted"])) for e in history]


def raises_alike(call_theirs, call_ours, theirs_raise=ValueError) -> None:
    """mem0 refuses and so does memlens (with a ValueError: mem0's own ValidationError is not one,
    and memlens does not need mem0 installed to run its surface)."""
    with pytest.raises(theirs_raise):
        call_theirs()
    with pytest.raises(ValueError):
        call_ours()


def test_the_same_calls_give_the_same_answers_as_mem0(both):
    theirs, ours = both
    ids: dict[str, tuple[str, str]] = {}
    for name, text, scope in (
        ("pizza", "I love pizza in Lisbon", {"user_id": "alice"}),
        ("dog", "my dog is called Rex", {"user_id": "alice", "agent_id": "planner"}),
        ("sushi", "prefers sushi", {"user_id": "bob"}),
        ("run", "booked a table for two", {"user_id": "bob", "agent_id": "planner", "run_id": "r1"}),
    ):
        a, b = theirs.add(text, infer=False, **scope), ours.add(text, infer=False, **scope)
        assert [{k: v for k, v in r.items() if k != "id"} for r in a["results"]] == [
            {k: v for k, v in r.items() if k != "id"} for r in b["results"]
        ]
        ids[name] = (a["results"][0]["id"], b["results"][0]["id"])
    conversation = [
        {"role": "system", "content": "you are helpful"},
        {"role": "user", "content": "I moved to Porto", "name": "al"},
        {"role": "assistant", "content": "Porto is lovely"},
    ]
    a, b = theirs.add(conversation, user_id="alice", infer=False), ours.add(conversation, user_id="alice", infer=False)
    assert [(r["memory"], r["role"], r["actor_id"]) for r in a["results"]] == [
        (r["memory"], r["role"], r["actor_id"]) for r in b["results"]
    ]

    for filters in (
        {"user_id": "alice"},
        {"user_id": "bob"},
        {"agent_id": "planner"},
        {"user_id": "bob", "run_id": "r1"},
        {"user_id": "carol"},
    ):
        assert texts(theirs.get_all(filters=filters)) == texts(ours.get_all(filters=filters)), filters
    assert len(ours.get_all(filters={"user_id": "alice"}, top_k=2)["results"]) == 2

    for name, (their_id, our_id) in ids.items():
        a, b = theirs.get(their_id), ours.get(our_id)
        keys = ("memory", "hash", "user_id", "agent_id", "run_id")
        assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}, name
    assert theirs.get("00000000-0000-0000-0000-000000000000") is None and ours.get("00000000-0000-0000-0000-000000000000") is None

    their_pizza, our_pizza = ids["pizza"]
    for text in ("I love pizza in Porto", "I love pizza in Naples"):
        assert theirs.update(their_pizza, text) == ours.update(our_pizza, text)
    assert theirs.get(their_pizza)["memory"] == ours.get(our_pizza)["memory"] == "I love pizza in Naples"
    assert events(theirs.history(their_pizza)) == events(ours.history(our_pizza))

    a, b = theirs.search("prefers sushi", filters={"user_id": "bob"}), ours.search("prefers sushi", filters={"user_id": "bob"})
    assert a["results"][0]["memory"] == b["results"][0]["memory"] == "prefers sushi"
    assert all(item["user_id"] == "bob" for item in b["results"])

    their_sushi, our_sushi = ids["sushi"]
    assert theirs.delete(their_sushi) == ours.delete(our_sushi)
    assert theirs.get(their_sushi) is None and ours.get(our_sushi) is None
    assert events(theirs.history(their_sushi)) == events(ours.history(our_sushi))
    assert (
        texts(theirs.get_all(filters={"user_id": "bob"})) == texts(ours.get_all(filters={"user_id": "bob"})) == ["booked a table for two"]
    )
    assert "prefers sushi" not in texts(ours.search("sushi", filters={"user_id": "bob"}))
    raises_alike(lambda: theirs.delete(their_sushi), lambda: ours.delete(our_sushi))
    raises_alike(lambda: theirs.update(their_sushi, "x"), lambda: ours.update(our_sushi, "x"))

    raises_alike(theirs.delete_all, ours.delete_all)
    raises_alike(lambda: theirs.get_all(), lambda: ours.get_all())
    raises_alike(lambda: theirs.get_all(user_id="alice"), lambda: ours.get_all(user_id="alice"))
    raises_alike(lambda: theirs.search("pizza", filters={}), lambda: ours.search("pizza", filters={}))
    raises_alike(lambda: theirs.add("x", infer=False), lambda: ours.add("x", infer=False), theirs_raise=Mem0ValidationError)
    raises_alike(lambda: theirs.add("x", user_id="two words", infer=False), lambda: ours.add("x", user_id="two words", infer=False))

    assert theirs.delete_all(agent_id="planner") == ours.delete_all(agent_id="planner")
    for filters in ({"user_id": "alice"}, {"user_id": "bob"}, {"agent_id": "planner"}):
        assert texts(theirs.get_all(filters=filters)) == texts(ours.get_all(filters=filters)), filters
    assert theirs.delete_all(user_id="alice") == ours.delete_all(user_id="alice")
    assert theirs.get_all(filters={"user_id": "alice"}) == ours.get_all(filters={"user_id": "alice"}) == {"results": []}
    theirs.reset()
    ours.reset()
    for filters in ({"user_id": "alice"}, {"user_id": "bob"}):
        assert theirs.get_all(filters=filters) == ours.get_all(filters=filters) == {"results": []}


def test_what_needs_mem0s_llm_or_keeps_a_document_is_refused_and_nothing_is_stored(tmp_path):
    with MemlensMemory(tmp_path / "m.db") as memory:
        store = memory.memory_store
        with pytest.raises(ValueError, match="infer=False"):
            memory.add("I love pizza", user_id="alice")  # mem0's default asks its LLM
        for extra in ({"metadata": {"mood": "happy"}}, {"expiration_date": "2030-01-01"}, {"prompt": "extract foods"}):
            with pytest.raises(ValueError):
                memory.add("I love pizza", user_id="alice", infer=False, **extra)
        with pytest.raises(ValueError, match="user_id, agent_id and run_id only"):
            memory.get_all(filters={"user_id": "alice", "mood": "happy"})
        with pytest.raises(ValueError, match="rerank"):
            memory.search("pizza", filters={"user_id": "alice"}, rerank=True)
        assert store.tenant_names() == []


def test_a_callers_extractor_stands_in_for_the_llm(tmp_path):
    def extract(messages):
        return [m["content"].removeprefix("remember: ") for m in messages if m["content"].startswith("remember: ")]

    with MemlensMemory(MemoryStore.open(tmp_path / "m.db", embedder=None), extract=extract) as memory:
        added = memory.add([{"role": "user", "content": "hello"}, {"role": "user", "content": "remember: likes jazz"}], user_id="alice")
        assert [r["memory"] for r in added["results"]] == ["likes jazz"]
        assert texts(memory.get_all(filters={"user_id": "alice"})) == ["likes jazz"]
        memory.memory_store.close()


def test_a_memory_is_its_users_and_forget_erases_it_with_its_history(tmp_path):
    with MemlensMemory(MemoryStore.open(tmp_path / "m.db", embedder=None)) as memory:
        mine = memory.add("my passport number is X123", user_id="alice", infer=False)["results"][0]["id"]
        memory.add("likes tea", user_id="bob", infer=False)
        memory.update(mine, "my passport number is Y456")
        assert memory.get(mine, user_id="bob") is None  # the id is alice's: bob's tenant has no such memory
        with pytest.raises(ValueError):
            memory.update(mine, "hijacked", user_id="bob")
        assert memory.get(mine)["memory"] == "my passport number is Y456"
        store = memory.memory_store
        receipt = store.forget(user_id="alice")
        assert receipt.counts["facts"] == 2
        assert memory.history(mine) == [] and memory.get(mine) is None
        assert texts(memory.get_all(filters={"user_id": "bob"})) == ["likes tea"]
        store.close()


def test_memory_imported_from_mem0_is_the_same_memory_here(mem0_config, tmp_path):
    theirs = Memory.from_config(mem0_config)
    kept = theirs.add("I love pizza in Lisbon", user_id="alice", agent_id="planner", infer=False)["results"][0]["id"]
    theirs.update(kept, "I love pizza in Porto")
    history = events(theirs.history(kept))
    theirs.close()
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        import_mem0(store, mem0_config)
        memory = MemlensMemory(store)
        assert memory.get(kept)["memory"] == "I love pizza in Porto" and memory.get(kept)["agent_id"] == "planner"
        assert events(memory.history(kept)) == history
        memory.update(kept, "I love pizza in Naples")
        assert [f.object for f in store.facts(user_id="alice")] == ["I love pizza in Naples"]


@pytest.mark.parametrize(("agent", "run"), [(None, None), ("planner", None), (None, "r1"), ("a,b", "r)1"), ("x", "y")])
def test_a_memorys_scope_is_read_back_from_its_predicate(agent, run):
    assert memory_scope(memory_predicate(agent, run)) == (agent, run)


@pytest.mark.parametrize(
    "predicate", ["lives_in", "memory ()", "memory (agent )", "memory (team a)", "memories", "memory (run a, agent b)"]
)
def test_a_fact_that_is_not_a_mem0_memory_is_not_taken_for_one(predicate):
    assert memory_scope(predicate) is None


async def test_the_async_surface_answers_as_mem0s_async_memory(mem0_config, tmp_path):
    from mem0 import AsyncMemory

    from store.compat.mem0 import AsyncMemlensMemory

    theirs = AsyncMemory.from_config(mem0_config)
    async with AsyncMemlensMemory(MemoryStore.open(tmp_path / "m.db", embedder=None)) as ours:
        their_id = (await theirs.add("likes jazz", user_id="alice", infer=False))["results"][0]["id"]
        our_id = (await ours.add("likes jazz", user_id="alice", infer=False))["results"][0]["id"]
        await theirs.update(their_id, "likes blues")
        await ours.update(our_id, "likes blues")
        assert texts(await theirs.get_all(filters={"user_id": "alice"})) == texts(await ours.get_all(filters={"user_id": "alice"}))
        await theirs.delete(their_id)
        await ours.delete(our_id)
        assert events(await theirs.history(their_id)) == events(await ours.history(our_id))
        assert await ours.get(our_id) is None
        with pytest.raises(AttributeError):
            ours.not_a_method  # noqa: B018
        ours.memory_store.close()
