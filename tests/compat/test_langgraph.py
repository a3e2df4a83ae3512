"""store.compat.langgraph: a LangGraph BaseStore on memlens, held to LangGraph's own stores.

The differential test applies one random sequence of operations to LangGraph's InMemoryStore,
its SqliteStore and a MemlensStore, and compares every result: items got, searches (with and
without a query) and namespace listings."""

from __future__ import annotations

import random
import warnings
from datetime import timedelta

import pytest

pytest.importorskip("langgraph")

from langgraph.graph import START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.store.sqlite import SqliteStore  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

from store.compat.langgraph import SESSION_PREFIX, MemlensStore  # noqa: E402
from store.embedding import FakeEmbedder  # noqa: E402
from store.memory import MemoryStore  # noqa: E402

NAMESPACES = [("memories", "alice"), ("memories", "bob"), ("memories", "bob", "work"), ("notes", "carol"), ("docs",)]
PREFIXES = [(), ("memories",), ("memories", "bob"), ("notes",), ("docs",), ("memories", "alice"), ("nothing",)]
WORDS = ["pizza", "lisbon", "flight", "hotel", "budget", "meeting", "report", "garden", "piano", "coffee"]


@pytest.fixture
def memlens(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ("docs",) names no user: the anonymous tenant, warned once
        with MemlensStore(tmp_path / "m.db", index={"fields": ["text"]}, mode="vector") as store:
            yield store


def random_value(rng: random.Random, namespace: tuple[str, ...], key: str) -> dict:
    words = " ".join(rng.sample(WORDS, 3))
    # A word of the item's own keeps any two items' texts (and so their scores) apart.
    return {"text": f"{words} {'-'.join(namespace)}-{key}", "n": rng.randint(0, 9), "tag": rng.choice(["a", "b", None])}


def random_filter(rng: random.Random) -> dict | None:
    return rng.choice(
        [None, {"tag": "a"}, {"n": {"$gte": 5}}, {"n": {"$lt": 3}, "tag": "b"}, {"n": {"$ne": 4}}, {"tag": None}, {"missing": 1}]
    )


def same_ranked(got: list, want: list, reference: InMemoryStore) -> bool:
    """Position by position the same score, and the same item unless two scores are closer than
    float32 tells apart (memlens keeps vectors in float32, InMemoryStore in float64); every item
    as the reference holds it."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if abs(g.score - w.score) > 1e-4:
            return False
        held = reference.get(tuple(g.namespace), g.key)
        if held is None or held.value != g.value:
            return False
    return True


def placed(items) -> list[tuple]:
    return sorted((tuple(i.namespace), i.key, repr(sorted(i.value.items()))) for i in items)


@pytest.mark.parametrize("seed", range(6))
def test_a_random_sequence_gives_what_langgraphs_own_stores_give(memlens, tmp_path, seed):
    embedder = FakeEmbedder()

    def embed(texts: list[str]) -> list[list[float]]:
        return embedder.embed(texts).astype(float).tolist()

    rng = random.Random(seed)
    reference = InMemoryStore(index={"dims": embedder.dim, "embed": embed, "fields": ["text"]})
    with SqliteStore.from_conn_string(str(tmp_path / "langgraph.sqlite")) as sqlite_store:
        sqlite_store.setup()
        nonempty = 0
        differences, counts = [], {"put": 0, "delete": 0, "get": 0, "search": 0, "query": 0, "list": 0, "batch": 0}
        for step in range(500):
            roll = rng.random()
            namespace, key = rng.choice(NAMESPACES), rng.choice(["k1", "k2", "k3", "k4"])
            if roll < 0.35:
                value = random_value(rng, namespace, key)
                for store in (reference, sqlite_store, memlens):
                    store.put(namespace, key, value)
                counts["put"] += 1
            elif roll < 0.45:
                for store in (reference, sqlite_store, memlens):
                    store.delete(namespace, key)
                counts["delete"] += 1
            elif roll < 0.55:
                got, want = memlens.get(namespace, key), reference.get(namespace, key)
                if (got and (tuple(got.namespace), got.key, got.value)) != (want and (tuple(want.namespace), want.key, want.value)):
                    differences.append((step, "get", namespace, key, got, want))
                counts["get"] += 1
            elif roll < 0.70:
                prefix, found = rng.choice(PREFIXES), random_filter(rng)
                limit, offset = rng.choice([(100, 0), (2, 0), (3, 1)])
                got = memlens.search(prefix, filter=found, limit=limit, offset=offset)
                every = reference.search(prefix, filter=found, limit=1000)
                # No order is defined without a query (InMemoryStore lists by insertion, the SQL
                # stores by update time): a full page holds every match; a part of one, matches only.
                if (limit, offset) == (100, 0):
                    ok = placed(got) == placed(every) == placed(sqlite_store.search(prefix, filter=found, limit=100))
                else:
                    ok = len(got) == len(every[offset : offset + limit]) and set(placed(got)) <= set(placed(every))
                if not ok:
                    differences.append((step, "search", prefix, found, limit, offset, placed(got), placed(every)))
                counts["search"] += 1
            elif roll < 0.85:
                prefix, found = rng.choice(PREFIXES), random_filter(rng)
                limit, offset = rng.choice([(10, 0), (2, 0), (3, 2)])
                query = " ".join(rng.sample(WORDS, 2))
                got = memlens.search(prefix, query=query, filter=found, limit=limit, offset=offset)
                want = reference.search(prefix, query=query, filter=found, limit=limit, offset=offset)
                nonempty += bool(want)
                if not same_ranked(got, want, reference):
                    differences.append(
                        (step, "query", prefix, query, found, [(i.key, i.score) for i in got], [(i.key, i.score) for i in want])
                    )
                counts["query"] += 1
            elif roll < 0.97:
                options = rng.choice(
                    [
                        {},
                        {"prefix": ("memories",)},
                        {"suffix": ("bob",)},
                        {"max_depth": 1},
                        {"prefix": ("memories", "*")},
                        {"limit": 2, "offset": 1},
                    ]
                )
                got, want = memlens.list_namespaces(**options), sqlite_store.list_namespaces(**options)
                if got != want:
                    differences.append((step, "list", options, got, want))
                counts["list"] += 1
            else:  # a batch: reads see the state before its writes; the last write to a key wins
                value = random_value(rng, namespace, key)
                ops = [PutOp(namespace, key, value), PutOp(namespace, key, None), PutOp(namespace, key, value)]
                for store in (reference, sqlite_store, memlens):
                    store.batch(ops)
                counts["batch"] += 1
    assert differences == []
    assert min(counts.values()) > 0 and nonempty > counts["query"] // 4, (counts, nonempty)


def test_an_item_is_memory_of_the_tenant_its_namespace_names(memlens):
    memlens.put(("memories", "alice"), "food", {"text": "likes pizza"})
    memlens.put(("memories", "bob"), "food", {"text": "likes sushi"})
    store = memlens.memory_store
    assert [s.session_id for s in store.sessions(user_id="alice")] == [SESSION_PREFIX + "memories.alice"]
    entry = store.session(SESSION_PREFIX + "memories.alice", user_id="alice").entry("food")
    assert entry.value == {"text": "likes pizza"} and entry.search_text == "likes pizza"
    exported = store.export(user_id="alice")
    assert [e["value"] for e in exported["kv_entries"]] == [{"text": "likes pizza"}]
    receipt = store.forget(user_id="alice", actor="test")
    assert receipt.counts["kv_entries"] == 1
    assert memlens.get(("memories", "alice"), "food") is None
    assert memlens.get(("memories", "bob"), "food").value == {"text": "likes sushi"}
    assert memlens.search(("memories",), query="pizza") and all(
        i.namespace[1] == "bob" for i in memlens.search(("memories",), query="pizza")
    )


def test_a_namespace_without_a_user_goes_to_the_anonymous_tenant_with_a_warning(tmp_path):
    with MemlensStore(tmp_path / "m.db") as store:
        with pytest.warns(UserWarning, match="names no user"):
            store.put(("docs",), "a", {"x": 1})
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per namespace root
            store.put(("docs",), "b", {"x": 2})
        assert store.memory_store.session(SESSION_PREFIX + "docs", user_id=None).list_keys() == ["a", "b"]


def test_a_rule_of_the_callers_places_the_tenant(tmp_path):
    with MemlensStore(tmp_path / "m.db", user_at=lambda ns: ns[-1]) as store:
        store.put(("profile", "settings", "dave"), "theme", {"dark": True})
        assert store.memory_store.tenant_names() == ["dave"]
    with MemlensStore(tmp_path / "n.db", user_at=0) as store:
        store.put(("erin", "memories"), "k", {"v": 1})
        assert store.memory_store.tenant_names() == ["erin"]
    with pytest.raises(ValueError, match="user_at"):
        MemlensStore(tmp_path / "o.db", user_at=-1)


def test_a_callers_embedding_is_refused_not_ignored(tmp_path):
    with pytest.raises(ValueError, match="own local model"):
        MemlensStore(tmp_path / "m.db", index={"dims": 3, "embed": lambda texts: [[0.0, 0.0, 1.0]] * len(texts)})
    with pytest.raises(ValueError, match="dimensions"):
        MemlensStore(tmp_path / "n.db", index={"dims": 1536, "fields": ["text"]})


def test_a_namespace_memlens_could_not_take_apart_again_is_refused(memlens):
    for bad in [("a.b", "u"), ("", "u"), ()]:
        with pytest.raises(InvalidNamespaceError):
            memlens.batch([PutOp(bad, "k", {"v": 1})])
    assert memlens.memory_store.tenant_names() == []


def test_index_fields_per_put_are_kept_and_false_keeps_an_item_out_of_meaning(memlens):
    memlens.put(("memories", "alice"), "a", {"text": "pizza", "other": "garden"}, index=["other"])
    memlens.put(("memories", "alice"), "b", {"text": "pizza garden"}, index=False)
    memlens.put(("memories", "alice"), "c", {"text": "pizza lisbon"})
    session = memlens.memory_store.session(SESSION_PREFIX + "memories.alice", user_id="alice")
    assert [(e.key, e.search_text) for e in session.entries()] == [("a", "garden"), ("b", None), ("c", "pizza lisbon")]
    found = memlens.search(("memories", "alice"), query="garden", limit=3)
    assert [i.key for i in found][:2] == ["a", "c"] and found[2].key == "b" and found[2].score is None  # last, unscored


def test_a_time_to_live_slides_on_read_unless_asked_not_to(tmp_path, clock):
    with MemlensStore(tmp_path / "m.db", ttl={"default_ttl": 1.0, "refresh_on_read": True}) as store:
        ns = ("memories", "alice")
        store.put(ns, "kept", {"v": 1})
        store.put(ns, "forever", {"v": 2}, ttl=None)
        store.put(ns, "unread", {"v": 3})
        clock[0] += timedelta(seconds=50)
        assert store.get(ns, "kept").value == {"v": 1}  # refreshed: a minute from now
        assert store.get(ns, "unread", refresh_ttl=False).value == {"v": 3}  # not refreshed
        clock[0] += timedelta(seconds=50)
        assert store.get(ns, "unread") is None
        assert {i.key for i in store.search(ns)} == {"kept", "forever"}  # the search refreshed "kept" again
        clock[0] += timedelta(seconds=50)
        assert {i.key for i in store.search(ns, refresh_ttl=False)} == {"kept", "forever"}
        clock[0] += timedelta(seconds=20)
        assert {i.key for i in store.search(ns)} == {"forever"}
        assert store.sweep_ttl() == 2


async def test_the_async_methods_give_what_the_sync_ones_give(memlens):
    await memlens.aput(("memories", "alice"), "a", {"text": "pizza lisbon"})
    assert (await memlens.aget(("memories", "alice"), "a")).value == {"text": "pizza lisbon"}
    assert [i.key for i in await memlens.asearch(("memories",), query="pizza")] == ["a"]
    assert await memlens.alist_namespaces() == [("memories", "alice")]
    await memlens.adelete(("memories", "alice"), "a")
    assert await memlens.aget(("memories", "alice"), "a") is None


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def remember(state: State, *, store: BaseStore) -> dict:
    store.put(("memories", state["user"]), f"said-{len(state['said'])}", {"text": state["said"]})
    return {}


def recall(state: State, *, store: BaseStore) -> dict:
    return {"recalled": [item.value["text"] for item in store.search(("memories", state["user"]), query="pizza", limit=3)]}


def test_a_langgraph_graph_runs_unchanged_on_memlens(tmp_path):
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    with MemlensStore(tmp_path / "agent.db", index={"fields": ["text"]}) as store:
        graph = builder.compile(store=store)
        out = graph.invoke({"user": "alice", "said": "I love pizza in Lisbon", "recalled": []})
        assert out["recalled"] == ["I love pizza in Lisbon"]
        graph.invoke({"user": "bob", "said": "sushi please", "recalled": []})
    with MemoryStore.open(tmp_path / "agent.db") as reopened:  # memory of its tenants, for the rest of memlens
        assert set(reopened.tenant_names()) == {"alice", "bob"}
        hits = reopened.search_keys("pizza", user_id="alice")
        assert hits[0].entry.value == {"text": "I love pizza in Lisbon"}


def test_memlens_store_serves_langgraph_on_each_engine(backend_url):
    with MemoryStore.open(backend_url) as memory, MemlensStore(memory, index={"fields": ["text"]}) as store:
        store.put(("memories", "alice"), "a", {"text": "pizza in Lisbon", "n": 1}, ttl=5)
        store.put(("memories", "alice"), "b", {"text": "a budget meeting", "n": 2})
        store.put(("memories", "bob"), "a", {"text": "sushi"})
        assert store.get(("memories", "alice"), "a").value == {"text": "pizza in Lisbon", "n": 1}
        assert [i.key for i in store.search(("memories", "alice"), query="pizza Lisbon", limit=1)] == ["a"]
        assert [i.key for i in store.search(("memories",), filter={"n": {"$gt": 1}})] == ["b"]
        assert store.list_namespaces() == [("memories", "alice"), ("memories", "bob")]
        store.delete(("memories", "alice"), "a")
        assert store.get(("memories", "alice"), "a") is None
        assert memory.forget(user_id="bob", actor="test").counts["kv_entries"] == 1
        assert store.list_namespaces() == [("memories", "alice")]


def test_an_order_filter_compares_as_langgraphs_sql_store_does(memlens, tmp_path):
    items = {"a": {"n": 5, "day": "2026-03-01"}, "b": {"n": "7", "day": "2025-12-31"}, "c": {"other": 1}, "d": {"n": True}}
    with SqliteStore.from_conn_string(str(tmp_path / "langgraph.sqlite")) as reference:
        reference.setup()
        for key, value in items.items():
            reference.put(("docs", "u"), key, value)
            memlens.put(("docs", "u"), key, value)
        for found in ({"n": {"$gt": 4}}, {"n": {"$lte": 5}}, {"day": {"$gte": "2026-01-01"}}, {"day": {"$lt": "2026-01-01"}}):
            want = {i.key for i in reference.search(("docs",), filter=found)}
            assert {i.key for i in memlens.search(("docs",), filter=found)} == want, found
