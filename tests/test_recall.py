"""Recall with the fast fake embedder: mechanics, filters, isolation, index upkeep."""

from datetime import timedelta

import pytest

from store import MemoryStore, testing
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError, ModelMismatchError

from .conftest import T0


@pytest.fixture
def memories(store):
    store.remember_many(
        [
            {"input": "book a hotel in Lisbon", "output": "holding Memmo Alfama", "session_id": "trip", "occurred_at": T0},
            {
                "input": "I am allergic to cats",
                "output": "noted the cat allergy",
                "session_id": "trip",
                "occurred_at": T0 + timedelta(hours=1),
            },
            {
                "input": "fix the failing pytest fixture",
                "output": "scope it to the module",
                "session_id": "code",
                "occurred_at": T0 + timedelta(hours=2),
            },
            {
                "input": "what hotel did we pick?",
                "output": "Memmo Alfama in Lisbon",
                "session_id": "trip",
                "occurred_at": T0 + timedelta(hours=3),
            },
        ],
        user_id="u",
    )
    return store


def test_hybrid_hits_carry_a_score_breakdown(memories):
    hits = memories.recall("hotel Lisbon", user_id="u", limit=3)
    assert hits and all(h.kind == "episode" for h in hits)
    top = hits[0]
    assert "lisbon" in top.episode.input.lower() + top.episode.output.lower()
    s = top.scores
    assert s.vector is not None and s.keyword is not None and s.vector_rank and s.keyword_rank
    assert s.fused == pytest.approx(1 / (60 + s.vector_rank) + 1 / (60 + s.keyword_rank))
    assert {"hotel", "lisbon"} <= set(top.matched_terms)
    assert [h.scores.score for h in hits] == sorted((h.scores.score for h in hits), reverse=True)


def test_keyword_mode_uses_no_vectors(memories):
    hits = memories.recall("allergic", user_id="u", mode="keyword")
    assert [h.episode.input for h in hits] == ["I am allergic to cats"]
    assert hits[0].scores.vector is None and hits[0].scores.keyword_rank == 1


def test_prefix_matches_while_typing(memories):
    assert memories.recall("pyte", user_id="u", mode="keyword", prefix=True)
    assert not memories.recall("pyte", user_id="u", mode="keyword", prefix=False)


def test_empty_query_falls_back_to_recency(memories):
    hits = memories.recall("  ", user_id="u", limit=2)
    assert [h.episode.input for h in hits] == ["what hotel did we pick?", "fix the failing pytest fixture"]


def test_session_and_time_filters_apply_to_both_lists(memories):
    hits = memories.recall("hotel fixture", user_id="u", session_id="code", limit=10)
    assert {h.session_id for h in hits} == {"code"}
    hits = memories.recall("hotel", user_id="u", time_range=(T0 + timedelta(minutes=30), None), limit=10)
    assert all(h.occurred_at >= T0 + timedelta(minutes=30) for h in hits)


def test_recall_never_returns_another_tenants_memories(memories):
    memories.remember("book a hotel in Lisbon for Bob", user_id="bob")
    memories.remember("book a hotel in Lisbon anonymously", user_id=None)
    for tenant, others in (("u", ("bob", "anonymously")), ("bob", ("Alfama", "anonymously")), (None, ("Bob", "Alfama"))):
        for mode in ("hybrid", "keyword", "vector"):
            texts = " ".join(h.text for h in memories.recall("hotel Lisbon", user_id=tenant, mode=mode, limit=50, kind="all"))
            assert texts and not any(o in texts for o in others)


def test_facts_blocks_and_scratchpad_are_searchable(store):
    store.add_fact("alice", "lives_in", "Lisbon", user_id="u", valid_from=T0)
    store.add_fact("alice", "lives_in", "Porto", user_id="u", valid_from=T0 + timedelta(days=5))
    store.update_block("persona", "a travel planner who loves Lisbon", user_id="u")
    store.session("trip", user_id="u").append_scratchpad("remember the Lisbon tram 28")
    hits = store.recall("Lisbon", user_id="u", kind="all", limit=10)
    assert {"block", "scratchpad"} <= {h.kind for h in hits}
    assert not any(h.fact and h.fact.object == "Lisbon" for h in hits)  # superseded: not believed now
    assert [h.fact.object for h in store.recall_facts("lives", user_id="u")] == ["Porto"]
    then = store.recall_facts("lives", user_id="u", valid_at=T0 + timedelta(days=1))
    assert [h.fact.object for h in then] == ["Lisbon"]
    notes = store.recall("tram", user_id="u", kind="scratchpad")
    assert notes[0].note.content == "remember the Lisbon tram 28" and notes[0].session_id == "trip"


def test_edited_block_is_reembedded_on_next_search(db_path):
    fake = FakeEmbedder()
    with MemoryStore.open(db_path, embedder=fake) as s:
        s.update_block("fruit", "apples", user_id="u")
        assert s.recall("fruit apples", user_id="u", kind="working", mode="vector")[0].scores.vector == pytest.approx(1.0)
        s.update_block("fruit", "pears", user_id="u")
        assert s.recall("fruit pears", user_id="u", kind="working", mode="vector")[0].scores.vector == pytest.approx(1.0)


def test_identical_content_is_embedded_once(db_path):
    fake = FakeEmbedder()
    with MemoryStore.open(db_path, embedder=fake) as s:
        s.remember_many([{"input": "same text"}] * 5 + [{"input": "other"}], user_id="u")
        s.remember("same text", user_id="u")
        assert fake.texts_embedded == 2


def test_vector_index_follows_writes_and_deletes_from_another_store_object(db_path):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as reader, MemoryStore.open(db_path, embedder=FakeEmbedder()) as writer:
        writer.remember("first apple", user_id="u")
        assert len(reader.recall("apple", user_id="u", mode="vector", limit=10)) == 1
        writer.remember_many([{"input": f"apple {i}"} for i in range(3)], user_id="u")
        assert len(reader.recall("apple", user_id="u", mode="vector", limit=10)) == 4
        with testing.backend(writer).write() as conn:
            conn.exec_driver_sql("DELETE FROM episodes WHERE input = 'first apple'")
        texts = [h.text for h in reader.recall("apple", user_id="u", mode="vector", limit=10)]
        assert len(texts) == 3 and "first apple" not in texts


def test_opening_with_another_model_is_a_clear_error(db_path):
    with MemoryStore.open(db_path, embedder=FakeEmbedder(dim=64)) as s:
        s.remember("hello", user_id="u")
    with pytest.raises(ModelMismatchError, match="memlens reembed"):
        MemoryStore.open(db_path, embedder=FakeEmbedder(dim=32))
    with MemoryStore.open(db_path, embedder=FakeEmbedder(dim=32), check_model=False) as s:
        assert s.reembed() == 1
        assert s.stats().embedding_model == "fake-hash-32"
        assert s.recall("hello", user_id="u", mode="vector")[0].scores.vector == pytest.approx(1.0)
    MemoryStore.open(db_path, embedder=FakeEmbedder(dim=32)).close()


def test_without_an_embedder_recall_is_keyword_only(db_path):
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember("keyword only store", user_id="u")
        hit = s.recall("keyword", user_id="u")[0]
        assert hit.scores.vector is None and hit.scores.keyword is not None


@pytest.mark.parametrize("kwargs", [{"kind": "everything"}, {"mode": "fuzzy"}, {"limit": 0}, {"time_range": (T0,)}])
def test_bad_recall_arguments(memories, kwargs):
    with pytest.raises(InvalidInputError):
        memories.recall("hotel", user_id="u", **kwargs)


def test_fts_syntax_in_queries_is_just_text(memories):
    hotels = {"book a hotel in Lisbon", "what hotel did we pick?"}
    for query in ["hotel AND OR", "hotel)", 'hotel"', "hotel*"]:
        hits = memories.recall(query, user_id="u", mode="keyword")
        assert {h.episode.input for h in hits} == hotels, query  # the word, not an operator
        assert all(h.matched_terms == ["hotel"] for h in hits), query
    for query in ['"unbalanced', "NEAR(a b", "a:b"]:
        assert memories.recall(query, user_id="u", mode="keyword") == [], query  # no episode holds these words
    # As FTS5 syntax this would look for "noted" in the input column only, where no episode has it.
    column_filter = memories.recall("input:noted", user_id="u", mode="keyword")
    assert [h.episode.output for h in column_filter] == ["noted the cat allergy"]
    # No words at all: the same as an empty query, the most recent episodes.
    recent = memories.recall("*", user_id="u", mode="keyword")
    assert [h.episode.input for h in recent][:1] == ["what hotel did we pick?"] and len(recent) == 4
