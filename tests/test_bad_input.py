"""Bad input gets a typed, clear error and leaves the store exactly as it was."""

from datetime import datetime

import pytest

from store import MemoryStore
from store.errors import ContentTooLargeError, InvalidInputError, InvalidTextError, NaiveDatetimeError

from .conftest import T0, dump


@pytest.fixture
def small_store(db_path):
    s = MemoryStore.open(db_path, max_content_bytes=1000)
    s.update_block("persona", "existing", user_id="u")
    s.remember("existing episode", user_id="u", session_id="s")
    s.session("s", user_id="u").set("k", "v")
    yield s
    s.close()


BIG = "x" * 1001
NUL = "before\x00after"
SURROGATE = "bad \ud800 text"

CALLS = {
    "block too large": (lambda s: s.update_block("persona", BIG, user_id="u"), ContentTooLargeError),
    "episode too large": (lambda s: s.remember(BIG, user_id="u"), ContentTooLargeError),
    "output with NUL": (lambda s: s.remember("q", NUL, user_id="u"), InvalidTextError),
    "input with lone surrogate": (lambda s: s.remember(SURROGATE, user_id="u"), InvalidTextError),
    "block name with NUL": (lambda s: s.update_block("a\x00b", "v", user_id="u"), InvalidTextError),
    "fact with surrogate": (lambda s: s.add_fact("a", "b", SURROGATE, user_id="u"), InvalidTextError),
    "naive occurred_at": (lambda s: s.remember("q", user_id="u", occurred_at=datetime(2026, 1, 1)), NaiveDatetimeError),
    "naive valid_from": (lambda s: s.add_fact("a", "b", "c", user_id="u", valid_from=datetime(2026, 1, 1)), NaiveDatetimeError),
    "naive valid_at": (lambda s: s.facts(user_id="u", valid_at=datetime(2026, 1, 1)), NaiveDatetimeError),
    "kv value too large": (lambda s: s.session("s", user_id="u").set("k", BIG), ContentTooLargeError),
    "kv value not JSON": (lambda s: s.session("s", user_id="u").set("k", object()), InvalidInputError),
    "kv key with surrogate": (lambda s: s.session("s", user_id="u").set(SURROGATE, 1), InvalidTextError),
    "scratchpad with NUL": (lambda s: s.session("s", user_id="u").append_scratchpad(NUL), InvalidTextError),
    "batch with one bad item": (
        lambda s: s.remember_many([{"input": "ok", "occurred_at": T0}, {"input": SURROGATE}], user_id="u"),
        InvalidTextError,
    ),
    "empty episode": (lambda s: s.remember("", "", user_id="u"), InvalidInputError),
    "unknown episode field": (lambda s: s.remember_many([{"inptu": "typo"}], user_id="u"), InvalidInputError),
    "confidence out of range": (lambda s: s.add_fact("a", "b", "c", user_id="u", confidence=1.5), InvalidInputError),
    "task data not JSON": (lambda s: s.session("s", user_id="u").set_task_state("t", data={"x": {1, 2}}), InvalidInputError),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_input_is_refused_and_changes_nothing(small_store, db_path, name):
    call, error = CALLS[name]
    before = dump(db_path)
    with pytest.raises(error) as info:
        call(small_store)
    assert str(info.value)  # every error says something a user can act on
    assert dump(db_path) == before


def test_errors_name_the_limit_and_how_to_raise_it(small_store):
    with pytest.raises(ContentTooLargeError, match="max_content_bytes"):
        small_store.remember(BIG, user_id="u")


def test_json_values_with_nul_inside_round_trip(store):
    """A NUL inside a JSON value is escaped by JSON and stored faithfully."""
    mem = store.session("s", user_id="u")
    mem.set("k", {"text": "a\x00b"})
    assert mem.get("k") == {"text": "a\x00b"}
