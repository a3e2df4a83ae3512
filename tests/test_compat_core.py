"""What the compatibility adapters need from the core store, tested on the store itself."""

from datetime import timedelta

import pytest

from store.errors import DuplicateIdError, InvalidInputError

from .conftest import T0

# --- an episode id the tenant already has ------------------------------------------------


def test_duplicate_id_is_refused_by_default_and_nothing_changes(store):
    store.remember("first words", "ok", user_id="u", id="ep-1")
    with pytest.raises(DuplicateIdError):
        store.remember("second words", "ok", user_id="u", id="ep-1")
    [only] = store.episodes(user_id="u").items
    assert only.input == "first words"


def test_replace_swaps_the_episode_and_its_keyword_index(store):
    store.remember("zebra crossing", "ok", user_id="u", id="ep-1", session_id="s")
    store.remember("giraffe neck", "ok", user_id="u", id="ep-1", session_id="s", on_duplicate="replace")
    assert [e.input for e in store.episodes(user_id="u").items] == ["giraffe neck"]
    assert [h.id for h in store.recall("giraffe", user_id="u", mode="keyword")] == ["ep-1"]
    assert store.recall("zebra", user_id="u", mode="keyword") == []


def test_replace_never_touches_another_tenants_episode_of_the_same_id(store):
    store.remember("alice's words", "ok", user_id="alice", id="ep-1")
    store.remember("bob's words", "ok", user_id="bob", id="ep-1")
    store.remember("bob again", "ok", user_id="bob", id="ep-1", on_duplicate="replace")
    assert store.get_episode("ep-1", user_id="alice").input == "alice's words"
    assert store.get_episode("ep-1", user_id="bob").input == "bob again"


def test_unknown_duplicate_policy_is_refused_before_writing(store):
    with pytest.raises(InvalidInputError):
        store.remember("x", "y", user_id="u", on_duplicate="overwrite")
    assert store.episodes(user_id="u").items == []


def test_replacement_with_new_text_is_consolidated_again_same_text_is_not(store):
    calls = []

    def extract(e):
        return calls.append(e.input) or []

    store.remember("same", "x", user_id="u", id="a")
    store.remember("old", "x", user_id="u", id="b")
    store.consolidate(extract, user_id="u")
    store.remember("same", "x", user_id="u", id="a", on_duplicate="replace")
    store.remember("new", "x", user_id="u", id="b", on_duplicate="replace")
    store.consolidate(extract, user_id="u")
    assert calls == ["same", "old", "new"]


# --- tool transcripts ----------------------------------------------------------------------


TRANSCRIPT = [
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "tool": "read", "args": {"path": "a.txt"}}]},
    {"role": "tool", "content": "contents of a.txt", "tool_call_id": "c1", "name": "read"},
]


def test_tool_transcript_is_replayed_between_user_and_assistant(store):
    store.remember("read a.txt", "it says hello", user_id="u", session_id="s", occurred_at=T0, tool_transcript=TRANSCRIPT)
    store.remember("thanks", "welcome", user_id="u", session_id="s", occurred_at=T0 + timedelta(days=1))
    roles = [(m.role, m.content) for m in store.session_messages("s", user_id="u")]
    assert roles[:4] == [("user", "read a.txt"), ("assistant", ""), ("tool", "contents of a.txt"), ("assistant", "it says hello")]
    tool = store.session_messages("s", user_id="u")[2]
    assert tool.tool_call_id == "c1" and tool.name == "read"


def test_limit_that_cuts_a_user_message_drops_its_transcript_too(store):
    store.remember("read a.txt", "it says hello", user_id="u", session_id="s", occurred_at=T0, tool_transcript=TRANSCRIPT)
    store.remember("thanks", "welcome", user_id="u", session_id="s", occurred_at=T0 + timedelta(days=1))
    messages = store.session_messages("s", user_id="u", limit=3)
    assert [m.role for m in messages] == ["assistant", "user", "assistant"]
    assert messages[0].content == "it says hello"


@pytest.mark.parametrize(
    "bad", ["text", [{"role": "user", "content": "x"}], [{"role": "tool", "content": 3}], [{"role": "tool", "content": "x", "secret": 1}]]
)
def test_malformed_transcript_is_refused_and_nothing_stored(store, bad):
    with pytest.raises(InvalidInputError):
        store.remember("x", "y", user_id="u", session_id="s", tool_transcript=bad)
    assert store.episodes(user_id="u").items == []


# --- consolidation -------------------------------------------------------------------------


def test_three_rounds_show_each_episode_to_the_extractor_once(store):
    calls = []
    for round_ in range(3):
        store.remember(f"episode {round_}", "ok", user_id="u", occurred_at=T0 + timedelta(hours=round_))
        store.consolidate(lambda e: calls.append(e.id) or [("u", "said", e.input)], user_id="u")
    assert len(calls) == 3 and len(set(calls)) == 3


def test_all_tenants_form_consolidates_every_tenant_once(store):
    for uid in ("alice", "bob", None):
        store.remember(f"hello from {uid}", "ok", user_id=uid)
    seen = []

    def extract(e):
        return seen.append(e.user_id) or [(str(e.user_id), "greeted", "yes")]

    added = store.consolidate(extract, all_tenants=True)
    assert sorted(seen, key=str) == sorted(["alice", "bob", None], key=str)
    assert {f.user_id for f in added} == {"alice", "bob", None}
    assert store.consolidate(extract, all_tenants=True) == []
    assert [f.subject for f in store.facts(user_id="bob")] == ["bob"]


def test_all_tenants_with_a_user_id_is_refused(store):
    with pytest.raises(InvalidInputError):
        store.consolidate(lambda e: [], user_id="u", all_tenants=True)


# --- facts ---------------------------------------------------------------------------------


def test_facts_filter_by_predicate_and_object(store):
    store.add_fact("alice", "likes", "jazz", user_id="u")
    store.add_fact("bob", "likes", "rock", user_id="u")
    store.add_fact("alice", "lives_in", "Paris", user_id="u")
    assert sorted(f.subject for f in store.facts(user_id="u", predicate="likes")) == ["alice", "bob"]
    assert [f.subject for f in store.facts(user_id="u", object="rock")] == ["bob"]
    assert [f.object for f in store.facts(user_id="u", subject="alice", predicate="likes")] == ["jazz"]


def test_reasserting_the_open_fact_keeps_it_open_and_adds_its_source(store):
    first = store.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0, source_episode_ids=["e1"])
    again = store.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0 + timedelta(days=3), source_episode_ids=["e2"])
    history = store.facts(user_id="u", include_history=True)
    assert len(history) == 1 and history[0].valid_until is None
    assert again.id == first.id and again.valid_from == T0
    assert history[0].source_episode_ids == ["e1", "e2"]


# --- session clear ----------------------------------------------------------------------


def test_clear_keys_only_keeps_task_and_scratchpad_and_counts_live_keys(store):
    session = store.session("s", user_id="u")
    session.set("a", 1)
    session.set("b", 2)
    session.set("gone", 3, ttl=timedelta(microseconds=1))
    session.set_task_state("write report", total_steps=4)
    session.append_scratchpad("thinking")
    import time

    time.sleep(0.01)
    assert session.clear(keys_only=True) == 2
    assert session.list_keys() == []
    assert session.get_task_state().task == "write report"
    assert [e.content for e in session.get_scratchpad()] == ["thinking"]
    session.set("c", 1)
    assert session.clear() == 1
    assert session.get_task_state() is None and session.get_scratchpad() == []
