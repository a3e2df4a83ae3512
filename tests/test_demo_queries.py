"""The demo guide's queries (docs/demo.md), run against the real full demo with the real model: each claim the
guide's table makes is checked here, and each query must appear in it word for word.

Claims about vector and keyword hold for those modes themselves; for hybrid only what survives
any fusion that keeps both lists' evidence (fusion is being reworked)."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from store import MemoryStore
from store.demo import DEMO_NOW, build_demo_store

from .conftest import built_once

pytestmark = pytest.mark.model
GUIDE = (Path(__file__).resolve().parent.parent / "docs" / "demo.md").read_text()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    built = built_once(tmp_path_factory, "full-demo.db", lambda path: build_demo_store(path).close())
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    shutil.copy2(built, path)
    with MemoryStore.open(path, read_only=True) as store:
        yield store


def texts(store, query, user, mode, limit=10):
    return [hit.text for hit in store.recall(query, user_id=user, mode=mode, limit=limit)]


def rank(found: list[str], wanted: str) -> int | None:
    return next((i + 1 for i, text in enumerate(found) if text.startswith(wanted)), None)


PARAPHRASES = [
    ("carol", "joint pain on steps", "My knee swells up whenever I go downstairs."),
    ("bob", "why did last night's release crash", "The nightly deploy broke because the container ran out of memory."),
]


@pytest.mark.parametrize("user, query, target", PARAPHRASES)
def test_a_paraphrase_is_found_by_vector_search_and_missed_by_keyword_search(demo, user, query, target):
    assert f"`{query}`" in GUIDE and target in GUIDE
    assert rank(texts(demo, query, user, "vector"), target) == 1
    assert rank(texts(demo, query, user, "keyword", limit=50), target) is None


def test_hybrid_keeps_a_paraphrase_the_keyword_list_barely_touches(demo):
    # Keyword search has a single hit for this query, so at most one result can outrank vector's first.
    assert len(texts(demo, "joint pain on steps", "carol", "keyword", limit=50)) == 1
    assert rank(texts(demo, "joint pain on steps", "carol", "hybrid", limit=5), "My knee swells up") is not None


def test_near_duplicates_only_semantics_tells_apart(demo):
    query = "did the airline call off my trip to Japan"
    assert f"`{query}`" in GUIDE
    flights = ["My flight to Kyoto was cancelled", "My flight to Kyoto was delayed", "My flight to Kyoto was confirmed"]
    vector, keyword = texts(demo, query, "alice", "vector"), texts(demo, query, "alice", "keyword")
    assert [rank(vector, f) for f in flights] == [1, 2, 3]
    assert rank(keyword, flights[0]) == 3 and {rank(keyword, f) for f in flights} == {1, 2, 3}  # same words: length decides


@pytest.mark.parametrize(
    "user, wanted, vector_first, vector_top5_without_it",
    [
        ("alice", "ORD-48213", "ORD-84213", True),
        ("bob", "PAY-1432", "PAY-1187", True),
        ("carol", "APT-70522", "APT-70252", False),
    ],
)
def test_an_exact_identifier_is_first_by_keyword_and_not_by_vector(demo, user, wanted, vector_first, vector_top5_without_it):
    assert f"`{wanted}`" in GUIDE and f"first: {vector_first}" in GUIDE
    keyword, vector = texts(demo, wanted, user, "keyword"), texts(demo, wanted, user, "vector")
    assert wanted in keyword[0] and all(wanted not in t for t in keyword[1:])
    assert vector_first in vector[0] and wanted not in vector[0]
    assert all(wanted not in t for t in vector[:5]) == vector_top5_without_it
    if user == "bob":
        assert all(any(near in t for t in vector[:5]) for near in ("PAY-1342", "PAY-1423"))
    if user == "alice":
        assert all(wanted not in t for t in vector)  # "not in its top 10"


def test_the_as_of_view_tells_the_story(demo):
    before, now = DEMO_NOW - timedelta(days=30), DEMO_NOW
    lives = {when: [f.object for f in demo.facts(user_id="alice", valid_at=when) if f.predicate == "lives_in"] for when in (before, now)}
    assert lives == {before: ["Lisbon"], now: ["Porto"]}
    assert "valid_at=DEMO_NOW - timedelta(days=30)" in GUIDE
    top = demo.recall_facts("where does she live now", user_id="alice", mode="vector", limit=1)[0]
    assert top.text == "alice lives in Porto" and "alice lives in Porto" in GUIDE
