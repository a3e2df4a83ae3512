"""Export everything, import it back: the same content, validated, atomic, idempotent."""

import json
from datetime import timedelta

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import ImportValidationError, InvalidInputError, UnknownTenantError

from .conftest import T0, dump

SECTIONS = ["blocks", "episodes", "facts", "sessions", "kv_entries", "task_states", "scratchpad", "checkpoints"]


def fill(s: MemoryStore, user: str | None) -> None:
    s.update_block("persona", f"persona of {user}", user_id=user)
    s.update_block("goals", "ship it", user_id=user)
    episodes = s.remember_many(
        [
            {
                "input": f"q{i} by {user}",
                "output": f"a{i}",
                "session_id": f"s{i % 2}",
                "occurred_at": T0 + timedelta(hours=i),
                "tool_calls": [{"name": "t", "args": {"i": i}}],
                "metadata": {"i": i},
            }
            for i in range(6)
        ],
        user_id=user,
    )
    s.add_fact("x", "lives_in", "Paris", user_id=user, valid_from=T0, source_episode_ids=[episodes[0].id])
    s.add_fact("x", "lives_in", "Rome", user_id=user, valid_from=T0 + timedelta(days=1))
    mem = s.session("s0", user_id=user)
    mem.set("k", {"deep": [1, 2]})
    mem.set("ttl", 1, ttl=3600)
    mem.set_task_state("task", total_steps=3, current_step=1)
    mem.append_scratchpad("note one")
    mem.create_checkpoint("cp")


def content(doc: dict) -> dict:
    return {s: doc[s] for s in SECTIONS}


@pytest.fixture
def source(backend_url):
    s = MemoryStore.open(backend_url, embedder=FakeEmbedder())
    fill(s, "alice")
    fill(s, None)
    yield s
    s.close()


@pytest.fixture
def target_url(request, backend, tmp_path) -> str:
    """A second, empty store on the same backend as ``source``."""
    if backend == "sqlite":
        return str(tmp_path / "target.db")
    return request.getfixturevalue("pg_server").fresh_database()


def test_export_holds_every_tier_and_a_verifiable_manifest(source):
    doc = source.export(user_id="alice")
    m = doc["manifest"]
    assert m["format"] == "memlens-export" and m["tenants"] == ["alice"]
    assert {s: len(doc[s]) for s in SECTIONS} == {
        "blocks": 2,
        "episodes": 6,
        "facts": 2,
        "sessions": 2,
        "kv_entries": 2,
        "task_states": 1,
        "scratchpad": 1,
        "checkpoints": 1,
    }
    assert all(m["counts"][s] == len(doc[s]) for s in SECTIONS)
    assert all(r["user_id"] == "alice" for s in SECTIONS for r in doc[s])
    assert any(f["valid_until"] for f in doc["facts"])  # full temporal history
    assert len(m["sha256"]["episodes"]) == 64


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_round_trip_gives_the_same_content_embeddings_included(source, tmp_path, target_url, fmt):
    path = tmp_path / f"alice.{fmt}"
    source.export_to(path, user_ids=["alice"], fmt=fmt, include_embeddings=True)
    first = source.export(user_id="alice", include_embeddings=True)
    with MemoryStore.open(target_url, embedder=FakeEmbedder()) as target:
        report = target.import_(path)
        assert report.reembedded == 0 and report.counts["episodes"] == 6
        second = target.export(user_id="alice", include_embeddings=True)
    assert content(second) == content(first)
    assert all("embedding" in e for e in second["episodes"])
    assert {k: v for k, v in second["manifest"]["sha256"].items() if k != "audit"} == {
        k: v for k, v in first["manifest"]["sha256"].items() if k != "audit"
    }


def test_reimporting_is_idempotent(source, tmp_path, target_url):
    path = tmp_path / "alice.jsonl"
    source.export_to(path, user_ids=["alice"])
    with MemoryStore.open(target_url, embedder=FakeEmbedder()) as target:
        target.import_(path)
        once = content(target.export(user_id="alice"))
        report = target.import_(path)
        assert content(target.export(user_id="alice")) == once
        assert report.counts["episodes"] == 0 and report.counts["checkpoints"] == 0


def test_import_into_a_store_with_another_model_reembeds(source, tmp_path, target_url):
    path = tmp_path / "alice.jsonl"
    source.export_to(path, user_ids=["alice"], include_embeddings=True)
    with MemoryStore.open(target_url, embedder=FakeEmbedder(dim=16)) as target:
        report = target.import_(path)
        assert report.reembedded == 8  # 6 episodes + 2 facts
        hit = target.recall("q3 by alice\na3", user_id="alice", mode="vector")[0]
        assert hit.scores.vector == pytest.approx(1.0, abs=1e-5)


def test_a_bad_record_names_its_line_and_field_and_changes_nothing(source, tmp_path):
    path = tmp_path / "alice.jsonl"
    source.export_to(path, user_ids=["alice"])
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if '"type":"episode"' in line)
    record = json.loads(lines[number])
    record["occurred_at"] = "not a date"
    lines[number] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    target_path = tmp_path / "target.db"
    MemoryStore.open(target_path, embedder=FakeEmbedder()).close()
    before = dump(target_path)
    with MemoryStore.open(target_path, embedder=FakeEmbedder()) as target, pytest.raises(ImportValidationError) as info:
        target.import_(path)
    assert info.value.line == number + 1 and info.value.field == "episode.occurred_at"
    assert dump(target_path) == before


def test_tampered_or_truncated_files_are_refused(source, tmp_path):
    path = tmp_path / "alice.jsonl"
    source.export_to(path, user_ids=["alice"])
    text = path.read_text()
    with MemoryStore.open(tmp_path / "t.db", embedder=FakeEmbedder()) as target:
        path.write_text(text.replace("persona of alice", "persona of mallory"))
        with pytest.raises(ImportValidationError, match="sha256"):
            target.import_(path)
        path.write_text("\n".join(text.splitlines()[:-1]) + "\n")
        with pytest.raises(ImportValidationError, match="manifest"):
            target.import_(path)
        assert target.tenants() == []


def test_a_document_without_a_manifest_is_refused(source, tmp_path):
    doc = source.export(user_id="alice")
    for record in doc["episodes"]:
        record["user_id"] = "bob"
    doc["blocks"], doc["manifest"] = [], None
    with pytest.raises(ImportValidationError):
        source.import_(doc)  # no manifest


def test_export_all_and_progress(source, tmp_path):
    calls = []
    manifest = source.export_to(tmp_path / "all.json", fmt="json", progress=lambda done, total: calls.append((done, total)))
    assert set(manifest["tenants"]) == {"alice", None}
    assert calls[-1][0] == calls[-1][1] > 0
    document = json.loads((tmp_path / "all.json").read_text())
    assert document["manifest"]["counts"]["episodes"] == 12


def test_exports_are_audited(source):
    source.export(user_id="alice", actor="dpo@example.com")
    entry = source.audit_log(user_id="alice")[0]
    assert (entry.action, entry.actor, entry.counts["episodes"]) == ("export", "dpo@example.com", 6)


def test_an_export_of_several_tenants_records_each_tenants_own_counts(store, tmp_path):
    store.remember_many([{"input": f"alice {i}", "output": "ok"} for i in range(3)], user_id="alice")
    store.remember_many([{"input": f"bob {i}", "output": "ok"} for i in range(5)], user_id="bob")
    store.update_block("persona", "bob's persona", user_id="bob")
    manifest = store.export_to(tmp_path / "all.jsonl", actor="dpo")
    assert manifest["counts"]["episodes"] == 8 and manifest["counts"]["blocks"] == 1  # the file holds both
    recorded = {e.user_id: e.counts for e in store.audit_log(all_tenants=True) if e.action == "export"}
    assert recorded["alice"]["episodes"] == 3 and recorded["alice"]["blocks"] == 0
    assert recorded["bob"]["episodes"] == 5 and recorded["bob"]["blocks"] == 1
    assert sum(recorded["alice"].values()) + sum(recorded["bob"].values()) == sum(manifest["counts"].values())


def test_the_audit_log_of_a_name_it_never_knew_is_refused_when_asked(store):
    store.remember("hello", user_id="alice")
    store.remember("hello", user_id="bob")
    store.forget(user_id="alice")
    assert store.audit_log(user_id="alcie") == []  # the default: an empty list, as before
    with pytest.raises(UnknownTenantError) as caught:
        store.audit_log(user_id="alcie", missing_ok=False)
    assert caught.value.close_matches == ["alice"]  # erased, but known from its log
    assert [e.action for e in store.audit_log(user_id="alice", missing_ok=False)] == ["forget"]
    assert store.audit_log(user_id="bob", missing_ok=False) == []  # a tenant with no entries yet
    with pytest.raises(UnknownTenantError):
        store.audit_log(user_id=None, missing_ok=False)
    with pytest.raises(InvalidInputError):
        store.audit_log(user_id="bob", missing_ok="no")


def test_an_export_without_user_id_says_what_to_pass(store):
    store.remember("hello", "ok", user_id="alice")
    with pytest.raises(InvalidInputError, match="export needs user_id") as refused:
        store.export()
    assert "Unset" not in str(refused.value)
