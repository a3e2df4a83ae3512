"""Every bad input, through every public method: a typed error from store.errors, nothing changed.

One table of calls, each with the error type it must raise. The store is filled in every
tier first, so a call that half-worked would show in the dump of the database.
"""

from __future__ import annotations

import io
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from store import MemoryStore, errors
from store.errors import (
    ContentTooLargeError,
    InvalidInputError,
    InvalidTextError,
    MemlensError,
    NaiveDatetimeError,
    NotFoundError,
    UnknownCheckpointError,
)

from .conftest import T0, dump

UTC = UTC
EAST = timezone(timedelta(hours=5))
WEST = timezone(timedelta(hours=-5))
# In range as written, out of range once converted to UTC (year 0 and year 10000).
MIN_EAST = datetime.min.replace(tzinfo=EAST)
MAX_WEST = datetime.max.replace(tzinfo=WEST)
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)
HUGE = 2**64
NAN, INF = math.nan, math.inf


def nested(depth: int, leaf=1):
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


DEEP = nested(5000)


def doubled(levels: int):
    value: list = []
    for _ in range(levels):
        value = [value, value]
    return value


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Built once: every test starts from a copy of this file."""
    from store.embedding import FakeEmbedder  # the autouse fixture is per test; this runs once

    path = tmp_path_factory.mktemp("template") / "filled.db"
    s = MemoryStore.open(path, max_content_bytes=10_000, embedder=FakeEmbedder())
    s.update_block("persona", "careful planner", user_id="u")
    episode = s.remember("book a hotel in Lisbon", "held Memmo Alfama", user_id="u", session_id="s", occurred_at=T0)
    s.add_fact("u", "lives_in", "Porto", user_id="u", source_episode_ids=[episode.id])
    mem = s.session("s", user_id="u")
    mem.set("k", {"v": 1}, ttl=3600)
    mem.set_task_state("trip", total_steps=4)
    mem.append_scratchpad("note one")
    s.checkpoint_id = mem.create_checkpoint("first")
    checkpoint_id = s.checkpoint_id
    s.export(user_id="u")  # an audit entry
    s.remember("someone else", user_id="other")
    s.close()
    return path, checkpoint_id


@pytest.fixture
def filled(template, db_path):
    path, checkpoint_id = template
    db_path.write_bytes(path.read_bytes())
    s = MemoryStore.open(db_path, max_content_bytes=10_000)
    s.checkpoint_id = checkpoint_id
    yield s
    s.close()


def mem(s):
    return s.session("s", user_id="u")


def export_lines(s) -> list[dict]:
    """Tenant u's export, read through a read-only handle so that exporting records no audit
    entry: the dump taken before the call must only change if the import writes."""
    buffer = io.StringIO()
    with MemoryStore.open(s.path, read_only=True) as reader:
        reader.export_to(buffer, user_ids=["u"], fmt="jsonl")
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def crafted(tmp: Path, s, change) -> Path:
    """An export of tenant u, changed by ``change(records)`` and re-signed the way a hostile
    file would be: the manifest's digests are recomputed, so only the content is wrong."""
    from store.rights.export import SECTIONS, Digests, canonical
    from store.rights.import_check import SECTION_OF

    lines = export_lines(s)
    manifest = lines.pop()
    change(lines)
    digests = Digests()
    for record in lines:
        if isinstance(record, dict) and record.get("type") in SECTION_OF:
            digests.add(SECTION_OF[record["type"]], canonical(record))
    manifest["counts"] = {section: digests.counts[section] for section in SECTIONS}
    manifest["sha256"] = digests.manifest("", [], T0, None, False)["sha256"]
    path = tmp / "crafted.jsonl"
    path.write_text("\n".join(json.dumps(r) if isinstance(r, (dict, list)) else r for r in [*lines, manifest]) + "\n")
    return path


def first(kind: str, field: str, value):
    def change(records):
        next(r for r in records if r["type"] == kind)[field] = value

    return change


def raw_line(text: str):
    def change(records):
        records.insert(0, text)

    return change


# name: (call, expected error type)
CALLS = {
    # --- datetimes: overflow on the way to UTC, or arithmetic past year 9999 ----------------------
    "remember occurred_at min east": (lambda s, t: s.remember("q", user_id="u", occurred_at=MIN_EAST), InvalidInputError),
    "remember occurred_at max west": (lambda s, t: s.remember("q", user_id="u", occurred_at=MAX_WEST), InvalidInputError),
    "remember_many one max west": (
        lambda s, t: s.remember_many([{"input": "a"}, {"input": "b", "occurred_at": MAX_WEST}], user_id="u"),
        InvalidInputError,
    ),
    "add_fact valid_from min east": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", valid_from=MIN_EAST), InvalidInputError),
    "add_fact valid_from max west": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", valid_from=MAX_WEST), InvalidInputError),
    "episodes since min east": (lambda s, t: s.episodes(user_id="u", since=MIN_EAST), InvalidInputError),
    "episodes until max west": (lambda s, t: s.episodes(user_id="u", until=MAX_WEST), InvalidInputError),
    "facts valid_at max west": (lambda s, t: s.facts(user_id="u", valid_at=MAX_WEST), InvalidInputError),
    "recall time_range min east": (lambda s, t: s.recall("hotel", user_id="u", time_range=(MIN_EAST, None)), InvalidInputError),
    "recall time_range max west": (lambda s, t: s.recall("hotel", user_id="u", time_range=(None, MAX_WEST)), InvalidInputError),
    "recall_facts valid_at min east": (lambda s, t: s.recall_facts("Porto", user_id="u", valid_at=MIN_EAST), InvalidInputError),
    "forget before max west": (lambda s, t: s.forget(user_id="u", before=MAX_WEST), InvalidInputError),
    "forget before min east, dry run": (lambda s, t: s.forget(user_id="u", before=MIN_EAST, dry_run=True), InvalidInputError),
    "naive since": (lambda s, t: s.episodes(user_id="u", since=datetime(2026, 1, 1)), NaiveDatetimeError),
    "date, not datetime": (lambda s, t: s.episodes(user_id="u", since=T0.date()), InvalidInputError),
    "cursor beyond 64 bits": (lambda s, t: s.episodes(user_id="u", cursor=f"{HUGE}.1"), InvalidInputError),
    "cursor row key beyond 64 bits": (lambda s, t: s.episodes(user_id="u", cursor=f"0.{HUGE}"), InvalidInputError),
    "cursor not text": (lambda s, t: s.episodes(user_id="u", cursor=12), InvalidInputError),
    # --- TTLs ---------------------------------------------------------------------------------
    "ttl inf": (lambda s, t: mem(s).set("k", 2, ttl=INF), InvalidInputError),
    "ttl nan": (lambda s, t: mem(s).set("k", 2, ttl=NAN), InvalidInputError),
    "ttl 1e12": (lambda s, t: mem(s).set("k", 2, ttl=1e12), InvalidInputError),
    "ttl huge int": (lambda s, t: mem(s).set("k", 2, ttl=HUGE), InvalidInputError),
    "ttl negative": (lambda s, t: mem(s).set("k", 2, ttl=-5), InvalidInputError),
    "ttl zero": (lambda s, t: mem(s).set("k", 2, ttl=0), InvalidInputError),
    "ttl True": (lambda s, t: mem(s).set("k", 2, ttl=True), InvalidInputError),
    "ttl text": (lambda s, t: mem(s).set("k", 2, ttl="60"), InvalidInputError),
    "ttl timedelta.max": (lambda s, t: mem(s).set("k", 2, ttl=timedelta.max), InvalidInputError),
    "ttl negative timedelta": (lambda s, t: mem(s).set("k", 2, ttl=timedelta(seconds=-1)), InvalidInputError),
    # --- JSON values ------------------------------------------------------------------------------
    "kv value nested 5000 deep": (lambda s, t: mem(s).set("k", DEEP), InvalidInputError),
    "kv value NaN": (lambda s, t: mem(s).set("k", NAN), InvalidInputError),
    "kv value inf inside": (lambda s, t: mem(s).set("k", {"x": [1, INF]}), InvalidInputError),
    "kv value int key": (lambda s, t: mem(s).set("k", {1: "one"}), InvalidInputError),
    "kv value bool key": (lambda s, t: mem(s).set("k", {True: "yes"}), InvalidInputError),
    "kv value None key": (lambda s, t: mem(s).set("k", {None: 1}), InvalidInputError),
    "kv value tuple key": (lambda s, t: mem(s).set("k", {(1, 2): 1}), InvalidInputError),
    "kv value mixed keys": (lambda s, t: mem(s).set("k", {"a": 1, 2: "b"}), InvalidInputError),
    "kv value bytes": (lambda s, t: mem(s).set("k", b"raw"), InvalidInputError),
    "kv value set": (lambda s, t: mem(s).set("k", {1, 2}), InvalidInputError),
    "kv value 2**50 items in 50 levels": (lambda s, t: mem(s).set("k", doubled(50)), ContentTooLargeError),
    "kv value self-referencing": (lambda s, t: mem(s).set("k", (lambda d: (d.__setitem__("me", d), d)[1])({})), InvalidInputError),
    "metadata nested 5000 deep": (lambda s, t: s.remember("q", user_id="u", metadata={"x": DEEP}), InvalidInputError),
    "metadata NaN": (lambda s, t: s.remember("q", user_id="u", metadata={"score": NAN}), InvalidInputError),
    "metadata int key": (lambda s, t: s.remember("q", user_id="u", metadata={7: "x"}), InvalidInputError),
    "tool_calls nested 5000 deep": (lambda s, t: s.remember("q", user_id="u", tool_calls=[DEEP]), InvalidInputError),
    "tool_calls with inf": (lambda s, t: s.remember("q", user_id="u", tool_calls=[{"cost": -INF}]), InvalidInputError),
    "task data nested 5000 deep": (lambda s, t: mem(s).set_task_state("t", data={"x": DEEP}), InvalidInputError),
    "task data NaN": (lambda s, t: mem(s).set_task_state("t", data={"x": NAN}), InvalidInputError),
    "task data int key": (lambda s, t: mem(s).set_task_state("t", data={3: "x"}), InvalidInputError),
    "task progress data deep": (lambda s, t: mem(s).update_task_progress(1, data={"x": DEEP}), InvalidInputError),
    "task data a list": (lambda s, t: mem(s).set_task_state("t", data=[1, 2]), InvalidInputError),
    "task progress data a list": (lambda s, t: mem(s).update_task_progress(1, data=[1, 2]), InvalidInputError),
    # --- bools where integers are expected, integers beyond 64 bits -------------------------------
    "episodes limit True": (lambda s, t: s.episodes(user_id="u", limit=True), InvalidInputError),
    "episodes limit huge": (lambda s, t: s.episodes(user_id="u", limit=HUGE), InvalidInputError),
    "session_messages limit True": (lambda s, t: s.session_messages("s", user_id="u", limit=True), InvalidInputError),
    "session_messages limit huge": (lambda s, t: s.session_messages("s", user_id="u", limit=HUGE), InvalidInputError),
    "recall limit True": (lambda s, t: s.recall("hotel", user_id="u", limit=True), InvalidInputError),
    "recall_facts limit False": (lambda s, t: s.recall_facts("Porto", user_id="u", limit=False), InvalidInputError),
    "audit_log limit huge": (lambda s, t: s.audit_log(user_id="u", limit=HUGE), InvalidInputError),
    "audit_log limit text": (lambda s, t: s.audit_log(user_id="u", limit="10"), InvalidInputError),
    "audit_log limit zero": (lambda s, t: s.audit_log(user_id="u", limit=0), InvalidInputError),
    "audit_log all_tenants not a bool": (lambda s, t: s.audit_log(all_tenants="yes"), InvalidInputError),
    "consolidate limit huge": (lambda s, t: s.consolidate(lambda e: [("a", "b", "c")], user_id="u", limit=HUGE), InvalidInputError),
    "consolidate limit True": (lambda s, t: s.consolidate(lambda e: [("a", "b", "c")], user_id="u", limit=True), InvalidInputError),
    "consolidate limit negative": (lambda s, t: s.consolidate(lambda e: [("a", "b", "c")], user_id="u", limit=-1), InvalidInputError),
    "consolidate extract not callable": (lambda s, t: s.consolidate("rules", user_id="u"), InvalidInputError),
    "get_scratchpad limit huge": (lambda s, t: mem(s).get_scratchpad(limit=HUGE), InvalidInputError),
    "get_scratchpad limit negative": (lambda s, t: mem(s).get_scratchpad(limit=-1), InvalidInputError),
    "get_scratchpad limit True": (lambda s, t: mem(s).get_scratchpad(limit=True), InvalidInputError),
    "confidence True": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", confidence=True), InvalidInputError),
    "confidence NaN": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", confidence=NAN), InvalidInputError),
    "confidence huge int": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", confidence=2**1100), InvalidInputError),
    "source_episode_ids a string": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", source_episode_ids="abc"), InvalidInputError),
    "source_episode_ids not iterable": (lambda s, t: s.add_fact("a", "b", "c", user_id="u", source_episode_ids=5), InvalidInputError),
    "task total_steps True": (lambda s, t: mem(s).set_task_state("t", total_steps=True), InvalidInputError),
    "task total_steps huge": (lambda s, t: mem(s).set_task_state("t", total_steps=HUGE), InvalidInputError),
    "task current_step huge": (lambda s, t: mem(s).set_task_state("t", current_step=HUGE, total_steps=HUGE), InvalidInputError),
    "task current_step False": (lambda s, t: mem(s).update_task_progress(False), InvalidInputError),
    "task progress_percent True": (lambda s, t: mem(s).update_task_progress(progress_percent=True), InvalidInputError),
    "task progress_percent inf": (lambda s, t: mem(s).update_task_progress(progress_percent=INF), InvalidInputError),
    "task progress_percent huge int": (lambda s, t: mem(s).update_task_progress(progress_percent=2**1100), InvalidInputError),
    "task status None": (lambda s, t: mem(s).update_task_progress(status=123), InvalidInputError),
    "open scratchpad_limit huge": (lambda s, t: MemoryStore.open(s.path, scratchpad_limit=HUGE), InvalidInputError),
    "open max_content_bytes True": (lambda s, t: MemoryStore.open(s.path, max_content_bytes=True), InvalidInputError),
    "recall prefix not a bool": (lambda s, t: s.recall("hotel", user_id="u", prefix="yes"), InvalidInputError),
    "facts include_history not a bool": (lambda s, t: s.facts(user_id="u", include_history="no"), InvalidInputError),
    "session create not a bool": (lambda s, t: s.session("s", user_id="u", create="no"), InvalidInputError),
    # --- text and names ----------------------------------------------------------------------
    "block name not text": (lambda s, t: s.update_block(5, "x", user_id="u"), InvalidInputError),
    "append_block separator NUL": (lambda s, t: s.append_block("persona", "x", user_id="u", separator="\x00"), InvalidTextError),
    "delete_block name None": (lambda s, t: s.delete_block(None, user_id="u"), InvalidInputError),
    "get_block name empty": (lambda s, t: s.get_block("", user_id="u"), InvalidInputError),
    "get_episode id not text": (lambda s, t: s.get_episode(7, user_id="u"), InvalidInputError),
    "get_episode unknown": (lambda s, t: s.get_episode("nope", user_id="u"), NotFoundError),
    "remember items not iterable": (lambda s, t: s.remember_many(7, user_id="u"), InvalidInputError),
    "remember item id not text": (lambda s, t: s.remember_many([{"input": "a", "id": 5}], user_id="u"), InvalidInputError),
    "recall query not text": (lambda s, t: s.recall(b"hotel", user_id="u"), InvalidInputError),
    "recall kind unknown": (lambda s, t: s.recall("hotel", user_id="u", kind="everything"), InvalidInputError),
    "recall kind unhashable": (lambda s, t: s.recall("hotel", user_id="u", kind=["all"]), InvalidInputError),
    "recall mode unhashable": (lambda s, t: s.recall("hotel", user_id="u", mode={"a": 1}), InvalidInputError),
    "recall_facts mode unknown": (lambda s, t: s.recall_facts("Porto", user_id="u", mode="semantic"), InvalidInputError),
    "facts subject not text": (lambda s, t: s.facts(user_id="u", subject=5), InvalidInputError),
    "user_id not text": (lambda s, t: s.working(user_id=5), InvalidInputError),
    "profile user_id with NUL": (lambda s, t: s.profile(user_id="a\x00b"), InvalidInputError),
    "warm_vectors user_id a list": (lambda s, t: s.warm_vectors(user_id=["u"]), InvalidInputError),
    "kv get key not text": (lambda s, t: mem(s).get(5), InvalidInputError),
    "kv delete key empty": (lambda s, t: mem(s).delete(""), InvalidInputError),
    "kv exists key None": (lambda s, t: mem(s).exists(None), InvalidInputError),
    "task name not text": (lambda s, t: mem(s).set_task_state(5), InvalidInputError),
    "scratchpad not text": (lambda s, t: mem(s).append_scratchpad(["note"]), InvalidInputError),
    "checkpoint description not text": (lambda s, t: mem(s).create_checkpoint(5), InvalidInputError),
    "restore unknown checkpoint": (lambda s, t: mem(s).restore_checkpoint("nope"), UnknownCheckpointError),
    "restore checkpoint id not text": (lambda s, t: mem(s).restore_checkpoint(5), InvalidInputError),
    "delete checkpoint id None": (lambda s, t: mem(s).delete_checkpoint(None), InvalidInputError),
    "diff second id not text": (lambda s, t: mem(s).diff_checkpoint(s.checkpoint_id, 5), InvalidInputError),
    "export actor with NUL": (lambda s, t: s.export(user_id="u", actor="a\x00"), InvalidInputError),
    "export_to format unknown": (lambda s, t: s.export_to(io.StringIO(), user_ids=["u"], fmt="xml"), InvalidInputError),
    "forget session not text": (lambda s, t: s.forget(user_id="u", session_id=5), InvalidInputError),
    # --- import sources and crafted files (digests recomputed, as an attacker would) ------------------
    "import source a number": (lambda s, t: s.import_(5), InvalidInputError),
    "import source a list": (lambda s, t: s.import_([{"type": "manifest"}]), InvalidInputError),
    "import records not a list": (lambda s, t: s.import_({"records": 5, "manifest": {}}), InvalidInputError),
    "import manifest not an object": (lambda s, t: s.import_({"records": [], "manifest": 5}), InvalidInputError),
    # The import branch's validators may name these differently; any ImportValidationError
    # (an InvalidInputError) is what the rule asks for.
    "import file line nested 5000 deep": (lambda s, t: s.import_(crafted(t, s, raw_line("[" * 5000 + "]" * 5000))), InvalidInputError),
    # json.dumps writes these as the bare words NaN and -Infinity, which json.loads accepts back.
    "import kv value NaN": (lambda s, t: s.import_(crafted(t, s, first("kv", "value", NAN))), InvalidInputError),
    "import metadata -Infinity": (lambda s, t: s.import_(crafted(t, s, first("episode", "metadata", {"x": -INF}))), InvalidInputError),
    "import kv value nested 150 deep": (lambda s, t: s.import_(crafted(t, s, first("kv", "value", nested(150)))), InvalidInputError),
    "import block pinned_order beyond 64 bits": (
        lambda s, t: s.import_(crafted(t, s, first("block", "pinned_order", HUGE))),
        InvalidInputError,
    ),
    "import episode time min east": (
        lambda s, t: s.import_(crafted(t, s, first("episode", "occurred_at", "0001-01-01T00:00:00+05:00"))),
        InvalidInputError,
    ),
    "import fact time max west": (
        lambda s, t: s.import_(crafted(t, s, first("fact", "recorded_at", "9999-12-31T23:59:59-05:00"))),
        InvalidInputError,
    ),
    "import manifest counts not an object": (lambda s, t: s.import_(crafted_manifest(t, s, counts=[1])), InvalidInputError),
}


def crafted_manifest(tmp: Path, s, **fields) -> Path:
    lines = export_lines(s)
    lines[-1].update(fields)
    path = tmp / "manifest.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    return path


def test_the_table_is_as_wide_as_the_brief_asks():
    assert len(CALLS) >= 65
    assert all(issubclass(error, MemlensError) and error is not MemlensError for _, error in CALLS.values())


@pytest.mark.parametrize("name", list(CALLS))
def test_bad_input_raises_a_typed_error_and_changes_nothing(filled, db_path, tmp_path, name):
    call, expected = CALLS[name]
    work = tmp_path / "work"
    work.mkdir()
    before = dump(db_path)
    with pytest.raises(MemlensError) as info:
        result = call(filled, work)
        if isinstance(result, MemoryStore):  # an open that should have been refused
            result.close()
    assert isinstance(info.value, expected), f"{type(info.value).__name__}: {info.value}"
    assert str(info.value)
    assert dump(db_path) == before
    assert type(info.value).__module__ == errors.__name__


def test_json_accepted_values_round_trip(store):
    """What check_json lets through comes back as it went in: no key or value quietly changed."""
    mem = store.session("s", user_id="u")
    value = {"text": "a\x00b", "n": [1, 2.5, -3, None, True, "é"], "deep": nested(90), "big": 2**63 - 1}
    mem.set("k", value)
    assert mem.get("k") == value


# --- consolidate: the extractor's output is input too; all of it is stored, or none ----------------


@pytest.fixture
def five_episodes(store):
    for hour in range(5):
        store.remember(f"I like city number {hour}", user_id="u", occurred_at=T0 + timedelta(hours=hour))
    return store


def likes(episode):
    yield ("u", f"likes_{episode.input.split()[-1]}", "yes")


def test_an_extractor_that_raises_midway_stores_nothing_and_marks_nothing(five_episodes, db_path):
    seen = []

    def flaky(episode):
        seen.append(episode.input)
        if len(seen) == 3:
            raise TimeoutError("the LLM timed out")
        return likes(episode)

    before = dump(db_path)
    with pytest.raises(TimeoutError):
        five_episodes.consolidate(flaky, user_id="u")
    assert dump(db_path) == before  # no fact, no consolidated_at
    added = five_episodes.consolidate(likes, user_id="u")
    assert sorted(f.predicate for f in added) == [f"likes_{n}" for n in range(5)]


@pytest.mark.parametrize("bad", [("only", "two"), ("u", "p", ""), ("u", "p", "o", 1.5), ("u", "p", "o", True), "u p o", None])
def test_a_malformed_item_from_the_third_episode_stores_nothing(five_episodes, db_path, bad):
    calls = []

    def extract(episode):
        calls.append(episode)
        return [("u", "p", "fine")] if len(calls) != 3 else [bad]

    before = dump(db_path)
    with pytest.raises(InvalidInputError):
        five_episodes.consolidate(extract, user_id="u")
    assert dump(db_path) == before


def test_an_extractor_returning_a_non_iterable_stores_nothing(five_episodes, db_path):
    before = dump(db_path)
    with pytest.raises(InvalidInputError):
        five_episodes.consolidate(lambda e: 42, user_id="u")
    assert dump(db_path) == before


def test_episodes_that_yield_nothing_are_marked_and_never_shown_again(five_episodes):
    shown = []

    def picky(episode):
        shown.append(episode.input)
        return likes(episode) if episode.input.endswith("2") else []

    assert [f.predicate for f in five_episodes.consolidate(picky, user_id="u", limit=3)] == ["likes_2"]
    assert shown == [f"I like city number {n}" for n in range(3)]  # oldest first, limit respected
    assert len(five_episodes.consolidate(picky, user_id="u")) == 0
    assert shown[3:] == ["I like city number 3", "I like city number 4"]
    assert five_episodes.consolidate(picky, user_id="u") == [] and len(shown) == 5


def test_episodes_consolidated_by_another_process_meanwhile_are_not_duplicated(five_episodes, backend_url):
    """A second store (another process, say) consolidates while this extractor is still running:
    the facts it stored are not stored again."""
    other = MemoryStore.open(backend_url)

    def slow(episode):
        if episode.input.endswith("0"):
            assert len(other.consolidate(likes, user_id="u")) == 5
        return likes(episode)

    try:
        assert five_episodes.consolidate(slow, user_id="u") == []
    finally:
        other.close()
    assert len(five_episodes.facts(user_id="u", include_history=True)) == 5


def test_an_episode_erased_while_the_extractor_runs_gets_no_orphan_fact(five_episodes, backend_url):
    other = MemoryStore.open(backend_url)

    def slow(episode):
        if episode.input.endswith("0"):
            other.forget(user_id="u", before=T0 + timedelta(minutes=30))
        return likes(episode)

    try:
        added = five_episodes.consolidate(slow, user_id="u")
    finally:
        other.close()
    assert sorted(f.predicate for f in added) == [f"likes_{n}" for n in range(1, 5)]
    alive = {e.id for e in five_episodes.episodes(user_id="u").items}
    assert all(set(f.source_episode_ids) <= alive for f in five_episodes.facts(user_id="u", include_history=True))


def test_the_extreme_times_that_exist_in_utc_are_accepted_and_round_trip(store, tmp_path):
    """The refusals above are for times that do not exist in UTC; the first and last instants that
    do are ordinary values: stored, paged, searched, exported and imported back unchanged."""
    first_ = store.remember("at the dawn of time", user_id="u", occurred_at=MIN_UTC)
    last = store.remember("at the end of time", user_id="u", occurred_at=MAX_UTC.astimezone(WEST))
    page = store.episodes(user_id="u", limit=1)
    assert page.items[0].occurred_at == MAX_UTC and page.next_cursor
    assert store.episodes(user_id="u", cursor=page.next_cursor).items[0].occurred_at == MIN_UTC
    assert store.episodes(user_id="u", since=MIN_UTC, until=MAX_UTC).items == [first_]
    assert [h.id for h in store.recall("time", user_id="u", time_range=(MIN_UTC, MAX_UTC), mode="keyword")] == [first_.id]
    store.add_fact("u", "born", "long ago", user_id="u", valid_from=MIN_UTC)
    assert store.facts(user_id="u", valid_at=MAX_UTC)[0].valid_from == MIN_UTC
    assert store.forget(user_id="u", before=MAX_UTC, dry_run=True).counts["episodes"] == 1
    store.export_to(tmp_path / "u.jsonl", user_ids=["u"])
    with MemoryStore.open(tmp_path / "copy.db") as copy:
        copy.import_(tmp_path / "u.jsonl")
        assert {e.occurred_at for e in copy.episodes(user_id="u").items} == {MIN_UTC, MAX_UTC}
    assert last.occurred_at == MAX_UTC
