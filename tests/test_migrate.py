"""`migrate_from` / `memlens migrate` between two SQLite stores: everything arrives, verified;
anything wrong (a destination with data, another model, a hostile source, a copy that does not
match) leaves the destination exactly as it was. The kill test is in test_migrate_kill.py, the
PostgreSQL round trip in test_migrate_pg.py."""

from __future__ import annotations

import base64
import sqlite3
from dataclasses import replace
from datetime import timedelta

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import (
    InvalidInputError,
    MigrationMismatchError,
    MigrationSourceError,
    MigrationTargetError,
    ModelMismatchError,
)
from store.rights import import_write
from store.tiers.importing import WRITTEN

from .conftest import T0, dump
from .migrate_support import assert_same, build


@pytest.fixture
def source(tmp_path, clock):
    s = MemoryStore.open(tmp_path / "source.db", embedder=FakeEmbedder())
    build(s, clock)
    yield s
    s.close()


@pytest.fixture
def target(tmp_path):
    s = MemoryStore.open(tmp_path / "target.db", embedder=FakeEmbedder())
    yield s
    s.close()


def test_everything_arrives_and_the_source_is_unchanged(source, target, tmp_path, clock):
    before = dump(tmp_path / "source.db")
    report = target.migrate_from(source, actor="ops")
    assert dump(tmp_path / "source.db") == before
    assert sorted(report.tenants, key=str) == sorted(["alice", "bob", "carol", "erased", None], key=str)
    assert report.history_only == ["erased"]  # its audit entries alone: not counted as a tenant held
    assert report.vectors == "copied" and report.embedded == 0
    held = [t.counts for t in source.tenants()]
    assert report.counts["episodes"] == sum(c.episodes for c in held) == 12 * 3 - 6 + 6
    assert report.counts["facts"] == sum(c.facts for c in held) > 0
    assert_same(source, target)
    # The erased tenant and imported history arrive with their origin: the DPO's record survives.
    forget = [e for e in target.audit_log(user_id="erased") if e.action == "forget"]
    assert forget and forget[0].origin == "local" and forget[0].actor == "dpo@example.com" and forget[0].disk_scrubbed
    assert {e.origin for e in target.audit_log(user_id="carol")} == {"imported", "local"}
    assert any(e.action == "forget" and e.origin == "imported" for e in target.audit_log(user_id="carol"))
    migrated = [e for e in target.audit_log(all_tenants=True) if e.action == "migrate"]
    assert len(migrated) == 5 and {e.actor for e in migrated} == {"ops"} and migrated[0].scope["from"].endswith("source.db")


def test_history_and_expiry_keep_their_times(source, target, clock):
    target.migrate_from(source)
    history = target.facts(user_id="alice", subject="alice", include_history=True)
    porto = next(f for f in history if f.object == "Porto")
    assert porto.valid_from == T0 and porto.valid_until == T0 + timedelta(days=1) and porto.recorded_at == T0
    assert [f.object for f in target.facts(user_id="alice", valid_at=T0 + timedelta(hours=1), subject="alice")] == ["Porto"]
    mem = target.session("s0", user_id="alice", create=False)
    assert mem.get("ttl") == "soon gone" and mem.get("expired") is None
    clock[0] = clock[0] + timedelta(hours=3)
    assert mem.get("ttl") is None  # the expiry time came along, not a fresh TTL
    assert [c.description for c in mem.list_checkpoints()] == ["before", "after"]


def test_vectors_are_copied_not_recomputed(source, target):
    embedder = target.embedder
    calls = embedder.texts_embedded
    target.migrate_from(source)
    assert embedder.texts_embedded == calls
    assert [h.id for h in target.recall("café 1", user_id="bob", mode="vector", limit=5)] == [
        h.id for h in source.recall("café 1", user_id="bob", mode="vector", limit=5)
    ]


def test_a_destination_holding_a_tenant_is_refused(source, target, tmp_path):
    target.remember("mine", "ok", user_id="dave")
    before = dump(tmp_path / "target.db")
    with pytest.raises(MigrationTargetError, match="already holds 1 tenant"):
        target.migrate_from(source)
    assert dump(tmp_path / "target.db") == before
    # Told to, it adds the source's tenants beside dave's.
    report = target.migrate_from(source, into_existing=True)
    assert "dave" not in report.tenants and target.export(user_id="dave")["episodes"][0]["input"] == "mine"


def test_into_existing_still_never_merges_a_tenant(source, target, tmp_path):
    target.remember("alice's other life", "ok", user_id="alice")
    before = dump(tmp_path / "target.db")
    with pytest.raises(MigrationTargetError, match="both stores hold 'alice'"):
        target.migrate_from(source, into_existing=True)
    assert dump(tmp_path / "target.db") == before


def test_audit_history_alone_makes_a_destination_not_empty(source, target, tmp_path):
    target.remember("x", "y", user_id="zed")
    target.forget(user_id="zed")
    with pytest.raises(MigrationTargetError, match="'zed'"):
        target.migrate_from(source)


def test_another_model_is_refused_unless_reembedding_is_asked_for(source, tmp_path):
    other = FakeEmbedder(dim=32, name="other")
    with MemoryStore.open(tmp_path / "other.db", embedder=other) as target:
        before = dump(tmp_path / "other.db")
        with pytest.raises(ModelMismatchError, match="fake-hash-64"):
            target.migrate_from(source)
        assert dump(tmp_path / "other.db") == before
        report = target.migrate_from(source, reembed=True)
        assert report.vectors == "embedded" and report.embedded > 0
        vector = target.export(user_id="alice", include_embeddings=True)["episodes"][0]["embedding"]
        assert len(base64.b64decode(vector)) == 32 * 4
        assert target.recall("café", user_id="alice", mode="vector", limit=3)


def test_a_copy_that_does_not_match_is_rolled_back(source, target, tmp_path, monkeypatch):
    # A writer that silently drops notes: without the read-back, this migration "succeeds".
    dropping = tuple(
        replace(tier, write=lambda importing, tenant, records: [WRITTEN] * len(records)) if tier.name == "scratchpad_entries" else tier
        for tier in import_write.IMPORT_ORDER
    )
    monkeypatch.setattr(import_write, "IMPORT_ORDER", dropping)
    before = dump(tmp_path / "target.db")
    with pytest.raises(MigrationMismatchError, match="scratchpad") as info:
        target.migrate_from(source)
    assert any(key.endswith("/scratchpad") for key in info.value.mismatches)
    assert dump(tmp_path / "target.db") == before


def test_a_vector_changed_in_the_copy_is_caught(source, target, tmp_path, monkeypatch):
    real = import_write.Writer.save_vectors

    def flipped(self, tenant, kind, pks, ids, texts):
        first = (tenant, kind, ids[0])
        if first in self.vectors:
            self.vectors[first] = bytes(len(self.vectors[first]))
        return real(self, tenant, kind, pks, ids, texts)

    monkeypatch.setattr(import_write.Writer, "save_vectors", flipped)
    before = dump(tmp_path / "target.db")
    with pytest.raises(MigrationMismatchError):
        target.migrate_from(source)
    assert dump(tmp_path / "target.db") == before


@pytest.mark.parametrize(
    "damage, problem",
    [
        ("UPDATE episodes SET occurred_at = 9223372036854775807 WHERE id = 'e4' AND user_id = 'bob'", "cannot be read"),
        ("UPDATE checkpoints SET snapshot = '{\"planted\": 1}' WHERE user_id = 'alice'", "snapshot"),
        ("UPDATE episodes SET metadata = '{not json' WHERE id = 'e2' AND user_id = 'alice'", "cannot be read"),
        ("UPDATE facts SET valid_until = valid_from - 1000000 WHERE user_id = 'alice' AND object = 'Porto'", "valid_until"),
        (
            "UPDATE vectors SET vector = zeroblob(12) WHERE user_id = 'alice' AND kind = 'episode' AND item_pk = "
            "(SELECT min(item_pk) FROM vectors WHERE user_id = 'alice' AND kind = 'episode')",
            "embedding",
        ),
        ("UPDATE blocks SET content = hex(randomblob(3000)) WHERE user_id = 'bob' AND name = 'goals'", "content"),
    ],
)
def test_a_hostile_source_is_refused_and_nothing_is_copied(source, tmp_path, damage, problem):
    source.close()
    conn = sqlite3.connect(tmp_path / "source.db")
    conn.execute(damage)
    conn.commit()
    conn.close()
    with (
        MemoryStore.open(tmp_path / "source.db", read_only=True, embedder=None, check_model=False) as hostile,
        MemoryStore.open(tmp_path / "target.db", embedder=FakeEmbedder(), max_content_bytes=4000) as target,
    ):
        before = dump(tmp_path / "target.db")
        with pytest.raises(MigrationSourceError, match=problem):
            target.migrate_from(hostile)
        assert dump(tmp_path / "target.db") == before


def test_an_empty_source_copies_nothing(tmp_path, target):
    with MemoryStore.open(tmp_path / "empty.db", embedder=FakeEmbedder()) as empty:
        report = target.migrate_from(empty)
    assert report.tenants == [] and not any(report.counts.values())
    assert target.tenants() == []


def test_the_async_store_migrates_too(source, tmp_path):
    import asyncio

    from store import AsyncMemoryStore

    async def main():
        async with await AsyncMemoryStore.open(tmp_path / "async.db", embedder=FakeEmbedder()) as target:
            report = await target.migrate_from(source)
            with pytest.raises(InvalidInputError, match="source must be"):
                await target.migrate_from(str(tmp_path / "source.db"))
            return report

    assert "alice" in asyncio.run(main()).tenants
