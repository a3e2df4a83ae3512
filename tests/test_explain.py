"""Why a memory did not come back: each kind of miss is named as what it is, and a memory that
came back is said to have, at its rank."""

from __future__ import annotations

from datetime import timedelta

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError

from .cli_process import run_cli


@pytest.fixture
def store(tmp_path, clock):
    with MemoryStore.open(tmp_path / "why.db", embedder=FakeEmbedder()) as s:
        yield s


def causes(answer) -> list[str]:
    return [c.cause for c in answer.causes]


def test_a_memory_that_came_back_is_placed_and_one_ranked_below_is_compared_with_the_last_hit(store, clock):
    wanted = store.remember("the invoice for the boat repair", user_id="u")
    for i in range(6):
        clock[0] += timedelta(minutes=1)
        store.remember(f"invoice number {i} for the boat repair and the invoice total", user_id="u")
    came = store.explain("boat repair invoice", wanted.id, user_id="u", limit=10)
    assert came.returned and came.rank is not None and came.rank <= 10 and came.causes == []
    missed = store.explain("boat repair invoice total", wanted.id, user_id="u", limit=3)
    assert not missed.returned and missed.rank is not None and missed.rank > 3
    assert causes(missed) == ["ranked_below", "words_missing"] and missed.missing_words == ["total"]
    assert missed.cut is not None and missed.scores is not None and missed.scores.score <= missed.cut.score
    assert f"ranked {missed.rank}, below the 3 returned" in missed.causes[0].detail
    # Channel by channel, the keyword standout included (every hybrid candidate has one).
    mine, cut = missed.scores.keyword_standout, missed.cut.keyword_standout
    assert mine is not None and cut is not None and mine <= cut
    assert f"keyword standout {mine:.2f} against {cut:.2f}" in missed.causes[0].detail


def test_a_memory_without_the_query_words_is_not_ranked_by_keyword_search(store):
    other = store.remember("we spoke about gardening and tomatoes", user_id="u")
    store.remember("the quarterly budget review", user_id="u")
    answer = store.explain("quarterly budget", other.id, user_id="u", mode="keyword")
    assert causes(answer) == ["beyond_depth", "words_missing"] and answer.rank is None
    assert answer.missing_words == ["quarterly", "budget"] and "keyword search finds only" in answer.causes[0].detail


def test_filters_are_named_session_time_and_kind(store, clock):
    at = clock[0]
    episode = store.remember("a note about the dentist", user_id="u", session_id="monday")
    by_session = store.explain("dentist", episode.id, user_id="u", session_id="tuesday")
    assert causes(by_session) == ["session"] and "'monday'" in by_session.causes[0].detail
    by_time = store.explain("dentist", episode.id, user_id="u", time_range=(at + timedelta(days=1), None))
    assert causes(by_time) == ["time"]
    by_kind = store.explain("dentist", episode.id, user_id="u", kind="facts")
    assert causes(by_kind) == ["kind"] and not by_kind.returned
    assert store.explain("dentist", episode.id, user_id="u", session_id="monday", kind="all").returned


def test_a_superseded_fact_names_what_replaced_it_and_an_expired_one_when_it_expired(store, clock):
    old = store.add_fact("ana", "lives_in", "Porto", user_id="u")
    clock[0] += timedelta(days=1)
    new = store.add_fact("ana", "lives_in", "Lisbon", user_id="u")
    answer = store.explain("where does ana live", old.id, user_id="u", kind="facts")
    assert causes(answer) == ["superseded"] and new.id in answer.causes[0].detail and "Lisbon" in answer.causes[0].detail
    assert answer.missing_words == []  # "live" is held: the fact is searched as "ana lives in Porto"
    clock[0] += timedelta(days=1)
    store.end_fact(new.id, user_id="u")
    assert causes(store.explain("ana", new.id, user_id="u", kind="facts")) == ["expired"]


def test_a_memory_the_tenant_does_not_hold_says_so_without_saying_whose_it_is(store):
    theirs = store.remember("bob's secret plan", user_id="bob")
    mine = store.remember("alice's own note", user_id="alice")
    answer = store.explain("secret plan", theirs.id, user_id="alice")
    assert causes(answer) == ["not_held"] and "bob" not in answer.causes[0].detail.lower() and answer.kind is None
    store.forget(user_id="alice", before=mine.occurred_at + timedelta(seconds=1))
    erased = store.explain("own note", mine.id, user_id="alice")
    assert causes(erased) == ["not_held"] and "1 erasure" in erased.causes[0].detail
    with pytest.raises(InvalidInputError):
        store.explain("x", "", user_id="alice")
    with pytest.raises(InvalidInputError):
        store.explain("x", mine.id, user_id="alice", limit=0)


def test_the_command_line_explains_and_exits_1_on_a_miss(tmp_path):
    path = tmp_path / "cli.db"
    with MemoryStore.open(path, embedder=None) as s:  # no vectors: the command searches by keyword, without the model
        episode = s.remember("lunch with Priya on Friday", user_id="u", session_id="work")
    done = run_cli("explain", "--db", path, "--user", "u", "lunch Priya", "--id", episode.id, "--session", "home", "--mode", "keyword")
    assert done.returncode == 1, done.stderr
    assert "did not come back" in done.stdout and "session: it belongs to session 'work'" in done.stdout
    came = run_cli("explain", "--db", path, "--user", "u", "lunch Priya", "--id", episode.id, "--mode", "keyword")
    assert came.returncode == 0 and "came back: rank 1" in came.stdout
    wrong = run_cli("explain", "--db", path, "--user", "v", "lunch", "--id", episode.id, "--mode", "keyword")
    assert wrong.returncode == 2 and "v" in wrong.stderr  # an error is 2, as for every command; a miss is 1
