"""Working blocks keep their earlier versions: each update, append and delete keeps what it
ended, capped per block; ``working(as_of=)`` reads the blocks as they were; forget erases every
version in its scope down to the bytes; export and import carry the history exactly. Both engines."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError

from .conftest import T0
from .test_forget import stored_bytes


def tick(clock, seconds: int = 1) -> None:
    clock[0] = clock[0] + timedelta(seconds=seconds)


def test_each_change_keeps_the_version_it_ended(store, clock):
    store.update_block("persona", "v1", user_id="u")
    tick(clock)
    store.append_block("persona", "more", user_id="u")
    tick(clock)
    store.update_block("persona", "v3", user_id="u")
    tick(clock)
    store.delete_block("persona", user_id="u")
    history = store.block_history("persona", user_id="u")
    assert [(v.content, v.written_at, v.replaced_at, v.replaced_by) for v in history.versions] == [
        ("v1", T0, T0 + timedelta(seconds=1), "append"),
        ("v1\nmore", T0 + timedelta(seconds=1), T0 + timedelta(seconds=2), "update"),
        ("v3", T0 + timedelta(seconds=2), T0 + timedelta(seconds=3), "delete"),
    ]
    assert not history.earlier_dropped and history.user_id == "u"
    tick(clock)
    store.update_block("persona", "back", user_id="u")  # a new block of the same name
    assert [v.replaced_by for v in store.block_history("persona", user_id="u").versions] == ["append", "update", "delete", None]
    assert store.block_history("persona", user_id="someone else").versions == []


def test_the_cap_drops_the_oldest_for_good_and_says_so(backend_url, clock):
    with MemoryStore.open(backend_url, embedder=None, block_versions_kept=3) as s:
        for i in range(6):
            s.update_block("goals", f"goal {i}", user_id="u")
            tick(clock)
        history = s.block_history("goals", user_id="u")
        assert [v.content for v in history.versions] == ["goal 2", "goal 3", "goal 4", "goal 5"]  # 3 earlier + current
        assert history.earlier_dropped
        assert s.working(user_id="u", as_of=T0 + timedelta(seconds=1, milliseconds=500)) == []  # dropped: unknown, not guessed
        assert [b.content for b in s.working(user_id="u", as_of=T0 + timedelta(seconds=2, milliseconds=500))] == ["goal 2"]
    with MemoryStore.open(backend_url, embedder=None, block_versions_kept=1) as s:
        s.update_block("goals", "one kept", user_id="u")
        history = s.block_history("goals", user_id="u")
        assert [v.content for v in history.versions] == ["goal 5", "one kept"] and history.earlier_dropped
    with pytest.raises(InvalidInputError):
        MemoryStore.open(backend_url, embedder=None, block_versions_kept=0)


def test_working_as_of_any_moment_is_what_working_said_then(store, clock):
    """A random history of updates, appends and deletes over four blocks; every answer of
    working() is recorded as it is given, then asked again with as_of."""
    rng = random.Random(7)
    said = []
    for step in range(60):
        name = rng.choice(["persona", "human", "goals", "notes"])
        op = rng.choice(["update", "update", "append", "delete"])
        if op == "update":
            store.update_block(name, f"{name} {step}", user_id="u")
        elif op == "append":
            store.append_block(name, f"line {step}", user_id="u")
        else:
            store.delete_block(name, user_id="u")
        said.append((clock[0], store.working(user_id="u")))
        tick(clock, rng.choice([1, 2, 5]))
    for at, answer in said:
        assert store.working(user_id="u", as_of=at) == answer
        assert store.working(user_id="u", as_of=at + timedelta(milliseconds=500)) == answer
    assert store.working(user_id="u", as_of=T0 - timedelta(seconds=1)) == []


def _secret() -> str:
    return "zq" + uuid.uuid4().hex[:12]


def test_forget_erases_every_version_down_to_the_bytes(backend_url, backend, db_path, request, clock):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder(dim=16)) as s:
        mine, theirs = [_secret() for _ in range(3)], _secret()
        for token in mine:
            s.update_block("persona", f"{token} persona", user_id="alice")
            tick(clock)
        s.update_block("persona", f"{theirs} persona", user_id="bob")
        s.update_block("persona", "bob again", user_id="bob")
        dry = s.forget(user_id="alice", dry_run=True)
        receipt = s.forget(user_id="alice")
        assert dry.counts == receipt.counts and receipt.counts["block_versions"] == 2 and receipt.counts["blocks"] == 1
        assert receipt.disk_scrubbed
        raw = stored_bytes(request, backend, db_path)
        assert [t for t in mine if t.encode() in raw] == []
        assert theirs.encode() in raw  # bob's history stays
        assert [v.content for v in s.block_history("persona", user_id="bob").versions] == [f"{theirs} persona", "bob again"]


def test_forget_before_a_date_erases_the_versions_replaced_before_it(store, clock):
    for i in range(4):
        store.update_block("persona", f"v{i}", user_id="u")
        tick(clock, 10)
    receipt = store.forget(user_id="u", before=T0 + timedelta(seconds=15))
    assert receipt.counts["block_versions"] == 1  # v0, replaced at 10 s; v1 was replaced at 20 s
    assert [v.content for v in store.block_history("persona", user_id="u").versions] == ["v1", "v2", "v3"]


def test_export_and_import_carry_the_history_exactly(backend_url, tmp_path, clock):
    with MemoryStore.open(backend_url, embedder=None, block_versions_kept=2) as s:
        for i in range(4):
            s.append_block("notes", f"line {i}", user_id="u")
            tick(clock)
        s.delete_block("notes", user_id="u")
        exported = s.export(user_id="u")
        history = s.block_history("notes", user_id="u")
    assert len(exported["block_versions"]) == 2 and exported["block_versions"][0]["earlier_dropped"] is True
    with MemoryStore.open(tmp_path / "copy.db", embedder=None) as copy:
        copy.import_(exported)
        assert copy.block_history("notes", user_id="u") == history
        again = copy.import_(exported)
        assert again.counts.get("block_versions", 0) == 0 and again.unchanged["block_versions"] == 2
        assert copy.block_history("notes", user_id="u") == history


@pytest.mark.parametrize("field, value", [("replaced_at", "2020-01-01T00:00:00+00:00"), ("replaced_by", "rename")])
def test_an_impossible_version_in_a_file_is_refused_and_nothing_is_written(tmp_path, clock, field, value):
    from store.errors import ImportValidationError

    with MemoryStore.open(tmp_path / "a.db", embedder=None) as s:
        s.update_block("persona", "v1", user_id="u")
        tick(clock)
        s.update_block("persona", "v2", user_id="u")
        exported = s.export(user_id="u")
    exported["block_versions"][0][field] = value
    with MemoryStore.open(tmp_path / "b.db", embedder=None) as copy:
        with pytest.raises(ImportValidationError):
            copy.import_(exported)
        assert copy.tenants() == []
