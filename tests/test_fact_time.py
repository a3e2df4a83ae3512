"""Facts on both time axes: what was true at V (valid time), as the store knew it at K
(transaction time). A supersession or a correction of the past never changes what the store
answers about an earlier moment of its own knowledge. Both engines."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from store import MemoryStore

from .conftest import T0

DAY = timedelta(days=1)


def tick(clock, seconds: int = 60) -> None:
    clock[0] = clock[0] + timedelta(seconds=seconds)


def shown(facts) -> list[tuple[str, datetime, datetime | None]]:
    return sorted((f.object, f.valid_from, f.valid_until) for f in facts)


@dataclass
class ModelFact:
    object: str
    valid_from: datetime
    recorded_at: datetime
    # (since, valid_until): the valid_until the store held from ``since`` on.
    versions: list[tuple[datetime, datetime | None]] = field(default_factory=list)

    def until_at(self, known_at: datetime) -> datetime | None:
        held = [until for since, until in self.versions if since <= known_at]
        return held[-1]


class Reference:
    """The rule, written the simple way: the fact whose interval holds the new valid_from ends
    there and the new fact takes the rest of it; in a gap the new fact ends where the next one
    starts; restating the open fact's object changes nothing."""

    def __init__(self) -> None:
        self.facts: list[ModelFact] = []

    def add(self, obj: str, valid_from: datetime, now: datetime) -> None:
        current = [f for f in self.facts if f.versions[-1][1] is None]
        if current and current[0].object == obj:
            return
        holder = next(
            (f for f in self.facts if f.valid_from <= valid_from and (f.versions[-1][1] is None or f.versions[-1][1] > valid_from)), None
        )
        if holder is not None:
            until = holder.versions[-1][1]
            holder.versions.append((now, valid_from))
        else:
            later = [f.valid_from for f in self.facts if f.valid_from > valid_from]
            until = min(later) if later else None
        self.facts.append(ModelFact(obj, valid_from, now, [(now, until)]))

    def answer(self, valid_at: datetime | None, known_at: datetime) -> list[tuple[str, datetime, datetime | None]]:
        out = []
        for f in self.facts:
            if f.recorded_at > known_at:
                continue
            until = f.until_at(known_at)
            holds = until is None if valid_at is None else f.valid_from <= valid_at and (until is None or until > valid_at)
            if holds:
                out.append((f.object, f.valid_from, until))
        return sorted(out)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_valid_and_known_time_agrees_with_a_reference_model_and_with_what_was_said(store, clock, seed):
    rng = random.Random(seed)
    model = Reference()
    said: list[tuple[datetime, dict]] = []
    probes = [T0 + DAY * d for d in range(-2, 40, 3)]
    for _ in range(25):
        obj = rng.choice(["Paris", "Berlin", "Lisbon", "Porto", "Oslo"])
        valid_from = T0 + DAY * rng.randrange(0, 36)  # forwards, backwards, or onto a start
        store.add_fact("alice", "lives_in", obj, user_id="u", valid_from=valid_from)
        model.add(obj, valid_from, clock[0])
        answers = {v: shown(store.facts(user_id="u", valid_at=v)) for v in probes}
        answers[None] = shown(store.facts(user_id="u"))
        said.append((clock[0], answers))
        tick(clock, rng.choice([1, 60, 3600]))
    for known_at, answers in said:
        for valid_at, answer in answers.items():
            assert shown(store.facts(user_id="u", valid_at=valid_at, known_at=known_at)) == answer
            assert answer == model.answer(valid_at, known_at), (known_at, valid_at)
        later = known_at + timedelta(milliseconds=500)  # between two changes: the same answers
        assert shown(store.facts(user_id="u", known_at=later)) == answers[None]
    assert store.facts(user_id="u", known_at=T0 - timedelta(seconds=1)) == []


def test_a_correction_of_the_past_is_a_new_record_and_the_old_belief_stays_answerable(store, clock):
    store.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
    tick(clock)
    store.add_fact("alice", "lives_in", "Berlin", user_id="u", valid_from=T0 + 10 * DAY)
    tick(clock)
    before_correction = clock[0]
    tick(clock)
    lisbon = store.add_fact("alice", "lives_in", "Lisbon", user_id="u", valid_from=T0 + 5 * DAY)
    assert (lisbon.valid_from, lisbon.valid_until) == (T0 + 5 * DAY, T0 + 10 * DAY)  # up to Berlin
    assert [f.object for f in store.facts(user_id="u")] == ["Berlin"]  # the current fact stays
    assert [f.object for f in store.facts(user_id="u", valid_at=T0 + 7 * DAY)] == ["Lisbon"]
    then = store.facts(user_id="u", valid_at=T0 + 7 * DAY, known_at=before_correction)
    assert [(f.object, f.valid_until) for f in then] == [("Paris", T0 + 10 * DAY)]
    now = {f.object: f.valid_until for f in store.facts(user_id="u", include_history=True)}
    assert now == {"Paris": T0 + 5 * DAY, "Lisbon": T0 + 10 * DAY, "Berlin": None}
    earliest = store.add_fact("alice", "lives_in", "Rome", user_id="u", valid_from=T0 - 3 * DAY)
    assert earliest.valid_until == T0  # before everything: ends where the first one starts


def test_forget_erases_the_facts_transaction_records_with_them(backend_url, clock):
    with MemoryStore.open(backend_url, embedder=None) as s:
        s.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
        tick(clock)
        moved = s.remember("I moved to Berlin", user_id="u", session_id="s1")
        s.add_fact("alice", "lives_in", "Berlin", user_id="u", valid_from=T0 + 10 * DAY, source_episode_ids=[moved.id])
        tick(clock)
        s.add_fact("alice", "diet", "vegan", user_id="u", valid_from=T0)
        s.add_fact("alice", "diet", "vegetarian", user_id="u", valid_from=T0 + DAY)
        exported = s.export(user_id="u")
        assert len(exported["fact_changes"]) == 2
        receipt = s.forget(user_id="u", session_id="s1")  # Berlin rests only on the erased episode
        assert receipt.counts["facts"] == 1 and receipt.counts["fact_changes"] == 1
        # Paris is open again, and no record keeps the erased fact's start or id.
        assert [(f.object, f.valid_until) for f in s.facts(user_id="u", subject="alice", predicate="lives_in")] == [("Paris", None)]
        changes = s.export(user_id="u")["fact_changes"]
        assert [c["caused_by"] for c in changes] == [next(f["id"] for f in exported["facts"] if f["object"] == "vegetarian")]
        assert s.forget(user_id="u").counts["fact_changes"] == 1
        assert s.export(user_id="u", missing_ok=True)["fact_changes"] == []


def test_export_and_import_carry_the_transaction_time_exactly(backend_url, tmp_path, clock):
    moments = []
    with MemoryStore.open(backend_url, embedder=None) as s:
        for day, obj in ((0, "Paris"), (10, "Berlin"), (5, "Lisbon"), (20, "Porto")):
            s.add_fact("alice", "lives_in", obj, user_id="u", valid_from=T0 + day * DAY)
            moments.append(clock[0])
            tick(clock)
        exported = s.export(user_id="u")
        views = {k: shown(s.facts(user_id="u", include_history=True, known_at=k)) for k in moments}
    with MemoryStore.open(tmp_path / "copy.db", embedder=None) as copy:
        copy.import_(exported)
        assert {k: shown(copy.facts(user_id="u", include_history=True, known_at=k)) for k in moments} == views
        again = copy.import_(exported)
        assert again.counts.get("fact_changes", 0) == 0 and again.unchanged["fact_changes"] == 3


def test_a_change_naming_a_fact_the_file_does_not_hold_is_refused(tmp_path, clock):
    from store.errors import ImportValidationError

    with MemoryStore.open(tmp_path / "a.db", embedder=None) as s:
        s.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
        s.add_fact("alice", "lives_in", "Berlin", user_id="u", valid_from=T0 + DAY)
        exported = s.export(user_id="u")
    exported["fact_changes"][0]["caused_by"] = "no-such-fact"
    with MemoryStore.open(tmp_path / "b.db", embedder=None) as copy:
        with pytest.raises(ImportValidationError, match="no-such-fact"):
            copy.import_(exported)
        assert copy.tenants() == []


def test_an_ended_fact_leaves_the_present_and_stays_in_the_past_and_in_what_was_known(backend_url, tmp_path, clock):
    with MemoryStore.open(backend_url, embedder=None) as s:
        paris = s.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
        tick(clock)
        before_end = clock[0]
        tick(clock)
        ended = s.end_fact(paris.id, user_id="u", at=T0 + 3 * DAY)
        assert (ended.id, ended.valid_from, ended.valid_until) == (paris.id, T0, T0 + 3 * DAY)
        assert s.facts(user_id="u") == []
        assert [f.object for f in s.facts(user_id="u", valid_at=T0 + DAY)] == ["Paris"]
        assert s.facts(user_id="u", valid_at=T0 + 4 * DAY) == []
        assert shown(s.facts(user_id="u", known_at=before_end)) == [("Paris", T0, None)]  # as it was known then: open
        assert [f.object for f in s.recall_facts("Paris", user_id="u", mode="keyword")] == []
        # A new belief after the end is not a supersession: nothing of the ended fact changes.
        s.add_fact("alice", "lives_in", "Berlin", user_id="u", valid_from=T0 + 5 * DAY)
        assert shown(s.facts(user_id="u", include_history=True)) == [("Berlin", T0 + 5 * DAY, None), ("Paris", T0, T0 + 3 * DAY)]
        exported = s.export(user_id="u")
        assert [(c["fact_id"], c["caused_by"], c["valid_until_before"]) for c in exported["fact_changes"]] == [(paris.id, paris.id, None)]
        moments = (before_end, clock[0])
        views = {k: shown(s.facts(user_id="u", include_history=True, known_at=k)) for k in moments}
    with MemoryStore.open(tmp_path / "copy.db", embedder=None) as copy:
        copy.import_(exported)
        assert {k: shown(copy.facts(user_id="u", include_history=True, known_at=k)) for k in moments} == views
        receipt = copy.forget(user_id="u", facts_only=True)
        assert receipt.counts["facts"] == 2 and receipt.counts["fact_changes"] == 1


def test_ending_a_fact_that_is_not_there_or_not_open_changes_nothing(backend_url, clock):
    from store.errors import InvalidInputError, UnknownFactError

    with MemoryStore.open(backend_url, embedder=None) as s:
        paris = s.add_fact("alice", "lives_in", "Paris", user_id="u", valid_from=T0)
        s.add_fact("bob", "lives_in", "Oslo", user_id="v", valid_from=T0)
        tick(clock)

        def state():
            return [(shown(s.facts(user_id=u, include_history=True)), s.export(user_id=u)["fact_changes"]) for u in ("u", "v")]

        before = state()
        with pytest.raises(UnknownFactError):
            s.end_fact(paris.id, user_id="v")  # another tenant's fact is not there for v
        with pytest.raises(UnknownFactError):
            s.end_fact("no-such-fact", user_id="u")
        with pytest.raises(InvalidInputError, match="at or before"):
            s.end_fact(paris.id, user_id="u", at=T0)
        with pytest.raises(InvalidInputError):
            s.end_fact(paris.id, user_id="u", at=datetime(2026, 2, 1))  # naive: refused
        assert state() == before
        s.end_fact(paris.id, user_id="u")
        after = state()
        with pytest.raises(InvalidInputError, match="already ended"):
            s.end_fact(paris.id, user_id="u")
        assert state() == after
