"""The tier registry is the one list every walk of the tiers reads (export, erasure, import,
migration, counts): a tier declared in it, but missing from one of its walks, would be a record
exported but never erased, or erased but never imported. These hold each walk to the list."""

from __future__ import annotations

import typing

from store.tiers import registry
from store.tiers.registry import AUDIT, ERASE_ORDER, EXPORTED, IMPORT_ORDER, SECTIONS, TIERS


def test_every_tier_is_erased_and_children_go_before_their_parents():
    assert sorted(t.name for t in ERASE_ORDER) == sorted(t.name for t in TIERS)
    assert all(t.erased is not None for t in TIERS), "a tier forget would never erase"
    position = {t.table.name: i for i, t in enumerate(ERASE_ORDER)}
    for tier in TIERS:
        for key in tier.table.foreign_keys:
            parent = key.column.table.name
            assert position[tier.table.name] < position[parent], f"{tier.name} references {parent}, so it must go first"


def test_every_tier_is_imported_with_sessions_first():
    assert sorted(t.name for t in IMPORT_ORDER) == sorted(t.name for t in TIERS)
    assert IMPORT_ORDER[0].name == "sessions"
    assert all(t.write is not None for t in TIERS), "a tier an import would count but never write"


def test_each_tiers_record_is_the_type_it_exports_under_a_section_of_its_own():
    assert len(set(SECTIONS)) == len(SECTIONS) == len(EXPORTED)
    for tier in EXPORTED:
        assert typing.get_args(tier.record_model.model_fields["type"].annotation) == (tier.record_type,), tier.name
    assert AUDIT.erased is None, "forget never erases the audit log"


def test_every_vector_kind_a_record_carries_belongs_to_a_tier_with_vectors():
    for record_type in registry.VECTOR_TEXT:
        tier = next(t for t in TIERS if t.record_type == record_type)
        assert tier.vector_kind == record_type and "embedding" in tier.record_model.model_fields


def test_every_field_of_a_snapshot_is_shown_by_exactly_one_tier(tmp_path):
    """A snapshot is put together from what each tier declares it shows at a moment
    (``as_of``): a field no tier fills would be a default passed off as the past, a field two
    fill would be the later one's."""
    from datetime import timedelta

    from store import MemoryStore, testing
    from store.embedding import FakeEmbedder
    from store.models import MemorySnapshot
    from store.tiers.moments import Moment
    from store.validation import utcnow

    with MemoryStore.open(tmp_path / "m.db", embedder=FakeEmbedder(), trace=True) as store:
        store.update_block("persona", "likes tea", user_id="u")
        store.remember("met at the cafe", user_id="u", session_id="s")
        store.add_fact("u", "likes", "tea", user_id="u")
        store.session("s", user_id="u").set("k", 1)
        store.recall("cafe", user_id="u")
        store.snapshot(user_id="u", as_of=utcnow())  # the recall's trace written before the reads below
        filled: dict[str, list[str]] = {}
        with testing.backend(store).read() as conn:
            moment = Moment(conn, testing.tenant(store, "u"), utcnow() + timedelta(seconds=1), utcnow() - timedelta(days=1))
            for tier in TIERS:
                if tier.as_of is not None:
                    for field, value in tier.as_of(moment).items():
                        filled.setdefault(field, []).append(tier.name)
                        assert value or field == "gaps", f"{tier.name} showed nothing in {field} of a tenant that has some"
    gaps = filled.pop("gaps")
    assert gaps == ["sessions"]
    assert {f: len(t) for f, t in filled.items()} == dict.fromkeys(set(MemorySnapshot.model_fields) - {"user_id", "as_of", "gaps"}, 1)


def test_every_kind_of_change_in_the_timeline_comes_from_the_tier_that_declares_it(tmp_path, clock):
    """The timeline is put together from what each tier declares a change (``changes``): a tier
    whose changes were left out of the registry would drop from it without a word."""
    from datetime import timedelta

    from store import MemoryStore, testing
    from store.embedding import FakeEmbedder
    from store.tiers.changes import Window

    with MemoryStore.open(tmp_path / "m.db", embedder=FakeEmbedder()) as store:
        store.update_block("persona", "likes tea", user_id="u")
        clock[0] += timedelta(minutes=1)
        store.update_block("persona", "likes coffee", user_id="u")
        store.update_block("mood", "calm", user_id="u")
        clock[0] += timedelta(minutes=1)
        store.delete_block("mood", user_id="u")
        fact = store.add_fact("u", "likes", "tea", user_id="u")
        clock[0] += timedelta(minutes=1)
        store.end_fact(fact.id, user_id="u")
        session = store.session("s", user_id="u")
        session.set("k", 1)
        session.create_checkpoint("before the trip")
        timeline = store.timeline(user_id="u")
        declared: dict[tuple[str, str], set[str]] = {}
        with testing.backend(store).read() as conn:
            window = Window(conn, testing.tenant(store, "u"), None, None, 100)
            for tier in TIERS:
                for change in tier.changes(window) if tier.changes is not None else ():
                    declared.setdefault((change.tier, change.kind), set()).add(tier.name)
    assert declared == {
        ("block", "written"): {"blocks", "block_versions"},
        ("block", "deleted"): {"block_versions"},
        ("fact", "recorded"): {"facts"},
        ("fact", "validity changed"): {"fact_changes"},
        ("session", "started"): {"sessions"},
        ("session", "checkpoint"): {"checkpoints"},
    }
    assert {(c.tier, c.kind) for c in timeline} == set(declared)
