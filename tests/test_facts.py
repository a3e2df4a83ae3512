from datetime import timedelta

import pytest

from store.errors import InvalidInputError

from .conftest import T0


def test_new_fact_supersedes_and_keeps_the_old_one(store):
    old = store.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
    new = store.add_fact("alice", "lives_in", "Berlin", user_id="u", valid_from=T0 + timedelta(days=10))
    assert [f.object for f in store.facts(user_id="u")] == ["Berlin"]
    history = store.facts(user_id="u", include_history=True)
    closed = next(f for f in history if f.id == old.id)
    assert closed.valid_until == new.valid_from
    assert not closed.is_current and new.is_current


def test_valid_at_answers_what_we_believed_then(store):
    store.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
    store.add_fact("alice", "lives_in", "Berlin", user_id="u", valid_from=T0 + timedelta(days=10))
    store.add_fact("alice", "diet", "vegan", user_id="u", valid_from=T0 + timedelta(days=5))

    def at(days):
        return sorted(f.object for f in store.facts(user_id="u", valid_at=T0 + timedelta(days=days)))

    assert at(-1) == []
    assert at(1) == ["Paris"]
    assert at(6) == ["Paris", "vegan"]
    assert at(10) == ["Berlin", "vegan"]


def test_different_predicates_do_not_supersede(store):
    store.add_fact("alice", "likes", "tea", user_id="u")
    store.add_fact("alice", "dislikes", "coffee", user_id="u")
    assert len(store.facts(user_id="u")) == 2


def test_a_backdated_fact_corrects_the_past_and_leaves_the_current_one(store):
    store.add_fact("a", "p", "new", user_id="u", valid_from=T0)
    older = store.add_fact("a", "p", "older", user_id="u", valid_from=T0 - timedelta(days=1))
    assert older.valid_until == T0 and not older.is_current
    facts = store.facts(user_id="u", include_history=True)
    assert [(f.object, f.valid_until) for f in facts] == [("new", None), ("older", T0)]


def test_sources_and_confidence_round_trip(store):
    e = store.remember("I moved", user_id="u")
    f = store.add_fact("u", "moved", "yes", user_id="u", confidence=0.4, source_episode_ids=[e.id])
    assert store.facts(user_id="u")[0] == f and f.source_episode_ids == [e.id] and f.confidence == 0.4


def test_consolidate_turns_episodes_into_sourced_facts_once(store):
    store.remember("I moved to Porto", user_id="u", occurred_at=T0)
    store.remember("I am vegetarian", user_id="u", occurred_at=T0 + timedelta(hours=1))
    store.remember("what's the weather?", user_id="u", occurred_at=T0 + timedelta(hours=2))

    def extract(episode):
        if "moved to" in episode.input:
            yield ("user", "lives_in", episode.input.split("moved to ")[1])
        if "vegetarian" in episode.input:
            yield ("user", "diet", "vegetarian", 0.8)

    added = store.consolidate(extract, user_id="u")
    assert [(f.predicate, f.object, f.confidence) for f in added] == [("lives_in", "Porto", 1.0), ("diet", "vegetarian", 0.8)]
    assert added[0].valid_from == T0 and len(added[0].source_episode_ids) == 1
    assert store.consolidate(extract, user_id="u") == []  # already consolidated
    episode_id = added[0].source_episode_ids[0]
    store.forget(user_id="u", before=T0 + timedelta(minutes=30))
    assert all(episode_id not in f.source_episode_ids for f in store.facts(user_id="u", include_history=True))


def test_consolidate_refuses_malformed_extractions(store):
    store.remember("hello", user_id="u")
    with pytest.raises(InvalidInputError):
        store.consolidate(lambda e: [("only", "two")], user_id="u")


def test_a_caller_named_fact_keeps_its_id_and_an_id_in_use_is_refused(store):
    from store.errors import DuplicateIdError

    fact = store.add_fact("alice", "lives_in", "Porto", user_id="alice", id="fact-1")
    assert fact.id == "fact-1" and [f.id for f in store.facts(user_id="alice")] == ["fact-1"]
    with pytest.raises(DuplicateIdError):
        store.add_fact("alice", "owns", "a cat", user_id="alice", id="fact-1")
    assert [f.object for f in store.facts(user_id="alice", include_history=True)] == ["Porto"]  # nothing stored
    assert store.add_fact("bob", "owns", "a cat", user_id="bob", id="fact-1").id == "fact-1"  # ids are per tenant
    # Stating the open fact again is corroboration: the open fact, with its own id.
    assert store.add_fact("alice", "lives_in", "Porto", user_id="alice", id="fact-2").id == "fact-1"
    with pytest.raises(InvalidInputError):
        store.add_fact("alice", "owns", "a dog", user_id="alice", id="")
