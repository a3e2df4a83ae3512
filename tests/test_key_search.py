"""Session keys with a search text: found by search_keys, kept to their tenant and to the pairs
asked for, and their vectors erased with them (by delete, expiry, rewrite and forget)."""

from datetime import timedelta

import pytest

from store import schema, testing
from store.errors import InvalidInputError


def key_vectors(store, user_id) -> int:
    with testing.backend(store).read() as conn:
        rows = conn.execute(schema.vectors_t.select().where(schema.vectors_t.c.kind == "key", schema.vectors_t.c.user_id == user_id))
        return len(rows.all())


@pytest.fixture
def keyed(store):
    trip = store.session("trip", user_id="alice")
    trip.set("flight", {"to": "Lisbon"}, search_text="flight to Lisbon on Friday")
    trip.set("hotel", {"name": "Alfama"}, search_text="hotel in Alfama, three nights")
    trip.set("plain", {"x": 1})  # no search text: never a hit
    store.session("work", user_id="alice").set("deadline", "Q3", search_text="quarterly report deadline")
    store.session("trip", user_id="bob").set("flight", {"to": "Oslo"}, search_text="flight to Oslo")
    return store


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
def test_a_key_is_found_by_its_search_text_and_only_in_its_tenant(keyed, mode):
    hits = keyed.search_keys("flight Lisbon", user_id="alice", mode=mode)
    assert hits and all(h.kind == "key" for h in hits)
    assert (hits[0].session_id, hits[0].id, hits[0].entry.value) == ("trip", "flight", {"to": "Lisbon"})
    assert {h.entry.value.get("to") for h in hits if isinstance(h.entry.value, dict)} <= {"Lisbon", None}
    assert "plain" not in {h.id for h in hits}
    bob = keyed.search_keys("flight", user_id="bob", mode=mode)
    assert [(h.session_id, h.id, h.entry.value) for h in bob] == [("trip", "flight", {"to": "Oslo"})]


def test_among_keeps_a_search_to_the_pairs_named(keyed):
    hits = keyed.search_keys("deadline flight hotel", user_id="alice", among=[("work", "deadline"), ("trip", "hotel")], limit=10)
    assert {(h.session_id, h.id) for h in hits} <= {("work", "deadline"), ("trip", "hotel")}
    assert keyed.search_keys("flight", user_id="alice", among=[]) == []
    with pytest.raises(InvalidInputError):
        keyed.search_keys("flight", user_id="alice", among=["trip"])


def test_a_keys_vector_goes_with_its_entry(keyed, clock):
    keyed.search_keys("flight", user_id="alice")  # embeds alice's searchable keys
    assert key_vectors(keyed, "alice") == 3
    trip = keyed.session("trip", user_id="alice")
    trip.delete("hotel")
    assert key_vectors(keyed, "alice") == 2
    trip.set("brief", "x", ttl=1, search_text="a brief note")
    keyed.search_keys("brief", user_id="alice")
    assert key_vectors(keyed, "alice") == 3
    clock[0] += timedelta(seconds=2)
    assert keyed.search_keys("brief note", user_id="alice", mode="keyword") == []  # expired: no hit
    assert keyed.purge_expired() == 1 and key_vectors(keyed, "alice") == 2
    receipt = keyed.forget(user_id="alice", session_id="trip", actor="test")
    assert receipt.counts["kv_entries"] == 2 and receipt.counts["vectors"] == 1
    assert key_vectors(keyed, "alice") == 1  # the work session's key
    keyed.forget(user_id="alice", actor="test")
    assert key_vectors(keyed, "alice") == 0 and key_vectors(keyed, "bob") == 0  # bob's was never embedded


def test_a_rewritten_key_is_searched_by_its_new_text(keyed):
    trip = keyed.session("trip", user_id="alice")
    assert keyed.search_keys("Lisbon", user_id="alice", mode="keyword")[0].id == "flight"
    trip.set("flight", {"to": "Porto"}, search_text="flight to Porto")
    assert [h.id for h in keyed.search_keys("Lisbon", user_id="alice", mode="keyword")] == []
    assert keyed.search_keys("Porto", user_id="alice")[0].entry.value == {"to": "Porto"}
    trip.set("flight", {"to": "Porto"})  # no search text now: not searched
    assert "flight" not in {h.id for h in keyed.search_keys("flight Porto", user_id="alice")}


def test_an_empty_query_finds_nothing_and_a_bad_one_is_refused(keyed):
    assert keyed.search_keys("  ", user_id="alice") == []
    with pytest.raises(InvalidInputError):
        keyed.search_keys("flight", user_id="alice", limit=0)
    with pytest.raises(InvalidInputError):
        keyed.session("trip", user_id="alice").set("k", 1, search_text=3)
