"""MemlensStore's async methods: the calls of one turn of the event loop are one batch, as in
LangGraph's own AsyncSqliteStore, and each caller still gets its own result or its own error."""

from __future__ import annotations

import asyncio
import random
import threading
import warnings

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import GetOp, InvalidNamespaceError  # noqa: E402
from langgraph.store.sqlite import AsyncSqliteStore  # noqa: E402

from store.compat.langgraph import MemlensStore  # noqa: E402
from store.errors import InvalidInputError  # noqa: E402

NAMESPACES = [("memories", "alice"), ("memories", "bob"), ("memories", "bob", "work"), ("notes", "carol")]
PREFIXES = [(), ("memories",), ("memories", "bob"), ("notes",), ("nothing",)]


@pytest.fixture
def memlens(tmp_path):
    with MemlensStore(tmp_path / "m.db") as store:
        yield store


def a_turn(rng: random.Random) -> list[tuple]:
    """Calls to make at once: writes and reads of the same few keys, so that reads and writes of
    one key meet in one turn."""
    calls: list[tuple] = []
    for _ in range(rng.randint(1, 40)):
        namespace, key = rng.choice(NAMESPACES), f"k{rng.randint(0, 5)}"
        kind = rng.choice(["put", "put", "delete", "get", "search", "filtered", "list"])
        if kind == "put":
            calls.append(("aput", namespace, key, {"n": rng.randint(0, 3), "text": rng.choice(["a", "b"])}))
        elif kind == "delete":
            calls.append(("adelete", namespace, key))
        elif kind == "get":
            calls.append(("aget", namespace, key))
        elif kind == "search":
            calls.append(("asearch", rng.choice(PREFIXES)))
        elif kind == "filtered":
            calls.append(("asearch", rng.choice(PREFIXES), {"n": rng.randint(0, 3)}))
        else:
            calls.append(("alist_namespaces", rng.randint(1, 3)))
    return calls


async def make(store, call: tuple):
    name, *args = call
    if name == "aput":
        return await store.aput(*args)
    if name == "adelete":
        return await store.adelete(*args)
    if name == "aget":
        item = await store.aget(*args)
        return None if item is None else (item.namespace, item.key, item.value)
    if name == "asearch":
        found = await store.asearch(args[0], filter=args[1] if len(args) > 1 else None, limit=100)
        # Items written in one batch share their update time, which each store orders its own way.
        return sorted((i.namespace, i.key, repr(i.value)) for i in found)
    return await store.alist_namespaces(max_depth=args[0])


@pytest.mark.parametrize("seed", range(3))
async def test_calls_made_in_one_turn_give_what_langgraphs_async_store_gives(memlens, seed):
    rng = random.Random(seed)
    async with AsyncSqliteStore.from_conn_string(":memory:") as reference:
        await reference.setup()
        for turn in range(40):
            calls = a_turn(rng)
            want = await asyncio.gather(*(make(reference, c) for c in calls))
            got = await asyncio.gather(*(make(memlens, c) for c in calls))
            assert got == want, (seed, turn, [c for c, g, w in zip(calls, got, want, strict=True) if g != w])


async def test_a_read_in_the_same_turn_as_a_write_sees_the_store_before_it(memlens):
    await memlens.aput(("memories", "alice"), "city", {"is": "Porto"})
    _, before, _ = await asyncio.gather(
        memlens.aput(("memories", "alice"), "city", {"is": "Lisbon"}),
        memlens.aget(("memories", "alice"), "city"),
        memlens.aput(("memories", "alice"), "city", {"is": "Faro"}),
    )
    assert before.value == {"is": "Porto"}
    assert (await memlens.aget(("memories", "alice"), "city")).value == {"is": "Faro"}  # the last write won


async def test_a_call_that_fails_fails_alone_and_writes_nothing(memlens):
    await memlens.aput(("memories", "alice"), "a", {"n": 1})
    outcomes = await asyncio.gather(
        memlens.aput(("memories", "bob"), "b", {"n": 2}),
        memlens.asearch(("memories",), filter={"n": {"$near": 1}}),  # no such operator
        memlens.aput(("memories", "bad.label"), "c", {"n": 3}),  # a label memlens could not take apart
        memlens.aput(("memories", " carol"), "c", {"n": 4}),  # a user id memlens refuses
        memlens.abatch([GetOp(("memories", "alice"), "a"), 42]),  # not an operation
        memlens.aget(("memories", "alice"), "a"),
        return_exceptions=True,
    )
    assert outcomes[0] is None
    assert isinstance(outcomes[1], ValueError) and "$near" in str(outcomes[1])
    assert isinstance(outcomes[2], InvalidNamespaceError)
    assert isinstance(outcomes[3], InvalidInputError)
    assert isinstance(outcomes[4], ValueError) and "Unknown operation type" in str(outcomes[4])
    assert outcomes[5].value == {"n": 1}
    assert (await memlens.aget(("memories", "bob"), "b")).value == {"n": 2}
    assert await memlens.alist_namespaces() == [("memories", "alice"), ("memories", "bob")]


async def test_a_cancelled_caller_leaves_the_others_of_its_turn_answered(memlens):
    await memlens.aput(("memories", "alice"), "a", {"n": 1})
    waiting = [asyncio.ensure_future(memlens.aget(("memories", "alice"), "a")) for _ in range(5)]
    await asyncio.sleep(0)  # every call is queued
    waiting[2].cancel()
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert isinstance(outcomes[2], asyncio.CancelledError)
    assert [o.value for i, o in enumerate(outcomes) if i != 2] == [{"n": 1}] * 4


async def test_a_turn_of_many_reads_reads_the_sessions_once(memlens, monkeypatch):
    for user in ("alice", "bob", "carol"):
        await memlens.aput(("memories", user), "a", {"text": user})
    asked: list = []
    store = memlens.memory_store
    sessions, keyed = store.sessions, store.keyed_sessions
    monkeypatch.setattr(store, "sessions", lambda **kw: asked.append(kw["user_id"]) or sessions(**kw))
    monkeypatch.setattr(store, "keyed_sessions", lambda prefix: asked.append(prefix) or keyed(prefix))
    found = await asyncio.gather(
        *(memlens.asearch(("memories",)) for _ in range(200)),
        *(memlens.asearch(("memories", "bob")) for _ in range(50)),
        memlens.alist_namespaces(),
    )
    assert [len(f) for f in found] == [3] * 200 + [1] * 50 + [3]
    # Every user's sessions in one reading per prefix naming no user; bob's own once.
    assert sorted(asked, key=str) == ["bob", "langgraph:", "langgraph:memories"]


def test_loops_in_two_threads_share_one_store(memlens):
    errors: list[BaseException] = []

    def agent(user: str) -> None:
        async def work() -> None:
            for n in range(30):
                await asyncio.gather(memlens.aput(("memories", user), f"k{n}", {"n": n}), memlens.aget(("memories", user), f"k{n - 1}"))

        try:
            asyncio.run(work())
        except BaseException as error:  # the test's thread must report, not die quietly
            errors.append(error)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        threads = [threading.Thread(target=agent, args=(u,)) for u in ("alice", "bob")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert errors == []
    for user in ("alice", "bob"):
        assert len(memlens.search(("memories", user), limit=100)) == 30
