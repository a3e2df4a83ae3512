"""Import only writes what it is allowed to: into the tenants its manifest declares, records that
meet the API's rules, audit history marked as imported, never over newer state.

Hostile files here recompute the manifest's counts and digests, as an attacker would, so each
refusal is the rule's doing and not the digest check's."""

import base64
import json
import math
import subprocess
import sys
from datetime import timedelta

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import DuplicateIdError, ImportValidationError, ModelMismatchError
from store.rights import import_write as import_writer
from store.rights.export import Digests, canonical
from store.rights.import_check import SECTION_OF

from .conftest import T0, dump


def fill(s: MemoryStore, user: str) -> None:
    s.update_block("persona", f"persona of {user}", user_id=user)
    s.remember_many(
        [
            {
                "id": f"e{i}",
                "input": f"question {i} of {user}",
                "output": f"answer {i}",
                "session_id": "s",
                "occurred_at": T0 + timedelta(hours=i),
                "metadata": {"i": i},
            }
            for i in range(3)
        ],
        user_id=user,
    )
    s.add_fact(user, "lives_in", "Paris", user_id=user, valid_from=T0)
    mem = s.session("s", user_id=user)
    mem.set("k", {"of": user})
    mem.set_task_state("plan", total_steps=3, current_step=1)
    mem.append_scratchpad(f"note of {user}")
    mem.create_checkpoint("cp")


@pytest.fixture
def two(db_path, clock):
    s = MemoryStore.open(db_path, embedder=FakeEmbedder())
    fill(s, "alice")
    fill(s, "bob")
    yield s
    s.close()


def lines_of(s: MemoryStore, path, user="alice", embeddings=False) -> tuple[list[dict], dict]:
    s.export_to(path, user_ids=[user], include_embeddings=embeddings)
    *records, manifest = [json.loads(line) for line in path.read_text().splitlines()]
    return records, manifest


def reseal(path, records: list[dict], manifest: dict) -> None:
    """Write the records with counts and digests recomputed, as a hostile writer can."""
    digests = Digests()
    lines = []
    for record in records:
        lines.append(canonical(record))
        digests.add(SECTION_OF[record["type"]], lines[-1])
    fresh = digests.manifest("", [], T0, None, False)
    manifest = {**manifest, "counts": fresh["counts"], "sha256": fresh["sha256"]}
    path.write_text("\n".join(lines + [canonical(manifest)]) + "\n")


def first(records: list[dict], kind: str) -> dict:
    return next(r for r in records if r["type"] == kind)


def still_works(s: MemoryStore, user: str) -> None:
    """The tenant recalls, pages, exports, reads its task and restores its checkpoint."""
    assert s.recall("question 1", user_id=user, limit=3)
    assert s.recall("question 1", user_id=user, mode="vector", limit=3)
    assert s.episodes(user_id=user).items
    assert s.export(user_id=user)["episodes"]
    mem = s.session("s", user_id=user)
    assert mem.get_task_state().task == "plan"
    for checkpoint in mem.list_checkpoints():
        mem.diff_checkpoint(checkpoint.id)
        mem.restore_checkpoint(checkpoint.id)


# --- binding to the declared tenants ----------------------------------------------------------


def test_a_file_declaring_alice_cannot_write_into_bob(two, db_path, tmp_path):
    path = tmp_path / "alice.jsonl"
    records, manifest = lines_of(two, path)
    block, kv = first(records, "block"), first(records, "kv")
    block.update(user_id="bob", content="planted", updated_at="2100-01-01T00:00:00+00:00")
    kv.update(user_id="bob", value="planted", updated_at="2100-01-01T00:00:00+00:00")
    forged = {
        "type": "audit",
        "user_id": "bob",
        "at": "2026-01-02T00:00:00+00:00",
        "actor": "dpo@example.com",
        "action": "forget",
        "scope": {},
        "counts": {"episodes": 3},
        "digest": "f" * 64,
    }
    records.append(forged)
    reseal(path, records, manifest)
    before = dump(db_path)
    with pytest.raises(ImportValidationError) as info:
        two.import_(path)
    assert info.value.field == "user_id" and info.value.line == records.index(block) + 1
    assert "does not declare" in str(info.value)
    assert dump(db_path) == before
    assert two.get_block("persona", user_id="bob").content == "persona of bob"
    assert all(e.action != "forget" for e in two.audit_log(user_id="bob"))


def test_every_declared_tenant_of_a_whole_store_export_is_imported(two, tmp_path):
    path = tmp_path / "all.jsonl"
    two.export_to(path)
    with MemoryStore.open(tmp_path / "copy.db", embedder=FakeEmbedder()) as copy:
        report = copy.import_(path)
        assert sorted(report.tenants) == ["alice", "bob"]
        assert copy.get_block("persona", user_id="bob").content == "persona of bob"


def test_as_user_imports_one_tenants_export_under_another_id(two, db_path, tmp_path):
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])
    alice_before = two.export(user_id="alice")["episodes"]
    report = two.import_(path, as_user="carol")  # same episode ids as alice's: ids are per tenant
    assert report.tenants == ["carol"] and report.counts["episodes"] == 3
    assert [e.input for e in two.episodes(user_id="carol").items] == [e["input"] for e in reversed(alice_before)]
    assert two.export(user_id="alice")["episodes"] == alice_before
    entry = two.audit_log(user_id="carol", origin="local")[0]
    assert entry.action == "import" and entry.scope["from_user"] == "alice"
    still_works(two, "carol")
    two.import_(path, as_user=None)
    assert two.get_block("persona", user_id=None).content == "persona of alice"


def test_as_user_is_refused_for_a_multi_tenant_export(two, db_path, tmp_path):
    path = tmp_path / "all.jsonl"
    two.export_to(path)
    before = dump(db_path)
    with pytest.raises(ImportValidationError, match="one tenant"):
        two.import_(path, as_user="carol")
    assert dump(db_path) == before


@pytest.mark.model  # `memlens import` embeds the records with the real model, in its own process
def test_cli_as_user_and_audit_show_imported_history(two, tmp_path):
    two.forget(user_id="alice", session_id="s", actor="dpo@example.com")
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])
    target = tmp_path / "target.db"
    run = [sys.executable, "-m", "inspector.cli"]
    done = subprocess.run(
        [*run, "import", "--db", str(target), "--create", str(path), "--as-user", "carol"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "into carol" in done.stdout
    audit = subprocess.run([*run, "audit", "--db", str(target), "--user", "carol"], capture_output=True, text=True).stdout
    forget_line = next(line for line in audit.splitlines() if " forget " in line)
    import_line = next(line for line in audit.splitlines() if " import " in line)
    assert "imported history" in forget_line and "dpo@example.com" in forget_line
    assert "imported history" not in import_line


# --- imported audit history -----------------------------------------------------------------


def test_imported_audit_entries_are_history_not_local_events(two, tmp_path):
    two.forget(user_id="alice", session_id="s", actor="dpo@example.com")
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])
    with MemoryStore.open(tmp_path / "target.db", embedder=FakeEmbedder()) as target:
        target.import_(path)
        everything = target.audit_log(user_id="alice")
        assert {(e.action, e.origin) for e in everything} == {("forget", "imported"), ("import", "local")}
        assert [e.action for e in target.audit_log(user_id="alice", origin="local")] == ["import"]
        assert [e.action for e in target.audit_log(all_tenants=True, origin="imported")] == ["forget"]
        exported = target.export(user_id="alice")["audit"]
        assert {(a["action"], a["origin"]) for a in exported} >= {("forget", "imported"), ("import", "local")}


# --- every record meets the API's rules --------------------------------------------------------


def _deep(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def _bad_snapshot_task(record):
    record["snapshot"]["task_state"] = json.dumps({"current_step": -1})


def _vector(values) -> str:
    import numpy as np

    return base64.b64encode(np.asarray(values, dtype=np.float32).tobytes()).decode()


# (record type, how to spoil it, the field named in the error); each spoiled record is new
# (a fresh id where it has one), so without the rule it would be written.
HOSTILE = {
    "short embedding": ("episode", lambda r: r.update(embedding=_vector([0.1, 0.2])), "episode.embedding"),
    "NaN in an embedding": ("episode", lambda r: r.update(embedding=_vector([math.nan] * 64)), "episode.embedding"),
    "embedding not base64": ("fact", lambda r: r.update(embedding="***"), "fact.embedding"),
    "year 10000 once in UTC": ("episode", lambda r: r.update(occurred_at="9999-12-31T23:00:00-05:00"), "episode.occurred_at"),
    "time as a number": ("fact", lambda r: r.update(recorded_at=253402300800), "fact.recorded_at"),
    "time without zone": ("note", lambda r: r.update(created_at="2026-01-01T00:00:00"), "note.created_at"),
    "empty checkpoint snapshot": ("checkpoint", lambda r: r.update(snapshot={}), "checkpoint.snapshot"),
    "snapshot expiry out of range": ("checkpoint", lambda r: r["snapshot"]["kv"]["k"].update(expires_at=10**20), "checkpoint.snapshot"),
    "snapshot task state malformed": ("checkpoint", _bad_snapshot_task, "checkpoint.snapshot"),
    "task step as text": ("task_state", lambda r: r["state"].update(current_step="x"), "task_state.state"),
    "task with unknown field": ("task_state", lambda r: r["state"].update(owner="mallory"), "task_state.state"),
    "task progress over 100": ("task_state", lambda r: r["state"].update(progress_percent=1e9), "task_state.state"),
    "task steps beyond 64 bits": ("task_state", lambda r: r["state"].update(total_steps=2**70), "task_state.state"),
    "value nested 150 deep": ("kv", lambda r: r.update(value=_deep(150)), "kv.value"),
    # json itself cannot read this deep; the line is spliced in after sealing (see below)
    "metadata nested 5000 deep": ("episode", lambda r: r.update(metadata={"x": "@DEEP@"}), "metadata"),
    "NaN in metadata": ("episode", lambda r: r.update(metadata={"x": math.nan}), "episode.metadata"),
    "pinned order beyond 64 bits": ("block", lambda r: r.update(pinned_order=2**70), "block.pinned_order"),
    "boolean pinned order": ("block", lambda r: r.update(pinned_order=True), "block.pinned_order"),
    "empty episode": ("episode", lambda r: r.update(input="", output=""), "episode.input"),
    "fact ends before it starts": ("fact", lambda r: r.update(valid_until="2000-01-01T00:00:00+00:00"), "fact.valid_until"),
    "NUL in a note": ("note", lambda r: r.update(content="a\u0000b"), "note.content"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_record_is_refused_by_line_and_field_and_the_tenant_keeps_working(two, db_path, tmp_path, name):
    kind, spoil, field = HOSTILE[name]
    path = tmp_path / "alice.jsonl"
    records, manifest = lines_of(two, path, embeddings=True)
    record = first(records, kind)
    record.update({"id": "new-id"} if "id" in record else {"name": "new"} if kind == "block" else {})
    if kind in ("kv", "task_state", "note"):
        record["session_id"] = "new-session"
    spoil(record)
    reseal(path, records, manifest)
    path.write_text(path.read_text().replace('"@DEEP@"', "[" * 5000 + "1" + "]" * 5000))
    before = dump(db_path)
    with pytest.raises(ImportValidationError) as info:
        two.import_(path)
    assert info.value.line == records.index(record) + 1
    assert info.value.field == field, str(info.value)
    assert dump(db_path) == before
    still_works(two, "alice")


def test_an_id_twice_in_one_file_for_one_tenant_is_refused(two, db_path, tmp_path):
    path = tmp_path / "alice.jsonl"
    records, manifest = lines_of(two, path)
    again = {**first(records, "episode"), "input": "the same id, other content"}
    records.insert(records.index(first(records, "episode")) + 1, again)
    for record in records:
        if record["type"] == "episode":
            record["id"] = "new-" + record["id"]
    reseal(path, records, manifest)
    before = dump(db_path)
    with pytest.raises(ImportValidationError, match="twice") as info:
        two.import_(path)
    assert (info.value.line, info.value.field) == (records.index(again) + 1, "id")
    assert dump(db_path) == before


def test_a_hostile_dict_source_is_refused_the_same_way(two, db_path):
    document = two.export(user_id="alice")
    before = dump(db_path)
    document["kv_entries"][0]["value"] = _deep(5000)  # json.dumps of it would overflow the stack
    with pytest.raises(ImportValidationError) as info:
        two.import_(document)
    assert info.value.field.endswith("kv.value")
    assert dump(db_path) == before


def test_import_refuses_a_store_whose_vectors_came_from_another_model(two, db_path, tmp_path):
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])
    before = dump(db_path)
    # The CLI opens stores with check_model=False; the import must still not mix two models.
    with MemoryStore.open(db_path, embedder=FakeEmbedder(dim=16), check_model=False) as other, pytest.raises(ModelMismatchError):
        other.import_(path, as_user="carol")
    assert dump(db_path) == before


def test_an_episode_erased_between_embedding_and_writing_is_embedded_in_the_write(two, tmp_path, monkeypatch):
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])
    prepare = import_writer.vectors_needed

    def erased_in_between(backend, indexer, checked):
        prepared = prepare(backend, indexer, checked)  # alice holds e0-e2 now, so none of them gets a vector
        two.forget(user_id="alice", session_id="s")  # as another process might, before the write
        return prepared

    monkeypatch.setattr(import_writer, "vectors_needed", erased_in_between)
    assert two.import_(path).counts["episodes"] == 3
    hits = two.recall("question 2 of alice answer 2", user_id="alice", mode="vector", kind="episodic")
    assert hits[0].id == "e2" and hits[0].scores.vector == pytest.approx(1.0, abs=1e-5)


def test_a_new_block_whose_slot_is_taken_goes_last(tmp_path):
    with MemoryStore.open(tmp_path / "a.db", embedder=FakeEmbedder()) as source:
        source.update_block("persona", "from the file", user_id="alice")
        source.export_to(tmp_path / "alice.jsonl", user_ids=["alice"])
    with MemoryStore.open(tmp_path / "b.db", embedder=FakeEmbedder()) as target:
        target.update_block("goals", "already here", user_id="alice")
        target.import_(tmp_path / "alice.jsonl")
        assert [(b.name, b.pinned_order) for b in target.working(user_id="alice")] == [("goals", 0), ("persona", 1)]


# --- ids are per tenant -----------------------------------------------------------------------


def test_an_id_another_tenant_uses_imports_normally_and_reveals_nothing(two, tmp_path):
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])
    with MemoryStore.open(tmp_path / "target.db", embedder=FakeEmbedder()) as target:
        target.remember_many([{"id": "e0", "input": "bob's e0"}], user_id="bob")
        report = target.import_(path)
        assert report.counts["episodes"] == 3
        assert target.get_episode("e0", user_id="alice").input == "question 0 of alice"
        assert target.get_episode("e0", user_id="bob").input == "bob's e0"


def test_remember_with_an_id_the_tenant_has_raises_duplicate_id_and_writes_nothing(two, db_path):
    before = dump(db_path)
    with pytest.raises(DuplicateIdError, match="e1"):
        two.remember_many([{"id": "fresh", "input": "new"}, {"id": "e1", "input": "again"}], user_id="alice")
    with pytest.raises(DuplicateIdError):
        two.remember_many([{"id": "e2", "input": "again"}], user_id="alice")
    with pytest.raises(DuplicateIdError, match="twice|more than once"):
        two.remember_many([{"id": "x", "input": "one"}, {"id": "x", "input": "two"}], user_id="alice")
    assert dump(db_path) == before
    two.remember_many([{"id": "e1", "input": "carol's e1"}], user_id="carol")
    assert two.get_episode("e1", user_id="carol").input == "carol's e1"


# --- re-importing: newest wins, nothing re-embedded for nothing ----------------------------------


def test_reimporting_an_older_export_keeps_newer_blocks_keys_and_task(two, tmp_path, clock):
    old = tmp_path / "old.jsonl"
    two.export_to(old, user_ids=["alice"])
    clock[0] = T0 + timedelta(days=1)
    two.update_block("persona", "newer persona", user_id="alice")
    mem = two.session("s", user_id="alice")
    mem.set("k", "newer value")
    mem.update_task_progress(3)
    report = two.import_(old)
    assert two.get_block("persona", user_id="alice").content == "newer persona"
    assert mem.get("k") == "newer value" and mem.get_task_state().current_step == 3
    assert report.kept_existing["blocks"] == 1 and report.kept_existing["kv_entries"] == 1
    assert report.kept_existing["task_states"] == 1 and sum(report.counts.values()) == 0
    new = tmp_path / "new.jsonl"
    two.export_to(new, user_ids=["alice"])
    with MemoryStore.open(tmp_path / "behind.db", embedder=FakeEmbedder()) as behind:
        behind.import_(old)
        report = behind.import_(new)  # the newer export does replace older state
        assert behind.get_block("persona", user_id="alice").content == "newer persona"
        assert behind.session("s", user_id="alice").get("k") == "newer value"
        assert report.counts["blocks"] == 1 and report.counts["kv_entries"] == 1 and report.counts["task_states"] == 1


def test_a_fact_superseded_since_the_last_import_is_closed_not_doubled(two, tmp_path, clock):
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    two.export_to(old, user_ids=["alice"])
    two.add_fact("alice", "lives_in", "Rome", user_id="alice", valid_from=T0 + timedelta(days=2))
    two.export_to(new, user_ids=["alice"])
    with MemoryStore.open(tmp_path / "copy.db", embedder=FakeEmbedder()) as copy:
        copy.import_(old)
        copy.import_(new)
        assert [f.object for f in copy.facts(user_id="alice")] == ["Rome"]
        copy.import_(old)  # an older file cannot reopen it
        assert [f.object for f in copy.facts(user_id="alice")] == ["Rome"]


def test_a_reimport_that_changes_nothing_embeds_nothing_and_writes_only_its_audit_entry(two, tmp_path):
    path = tmp_path / "alice.jsonl"
    two.export_to(path, user_ids=["alice"])  # no embeddings in the file: new records would need embedding
    embedder = FakeEmbedder()
    target_path = tmp_path / "target.db"
    with MemoryStore.open(target_path, embedder=embedder) as target:
        target.import_(path)
    before = dump(target_path)
    with MemoryStore.open(target_path, embedder=embedder) as target:
        texts = embedder.texts_embedded
        report = target.import_(path)
        assert report.reembedded == 0 and embedder.texts_embedded == texts
        assert sum(report.counts.values()) == 0 and sum(report.kept_existing.values()) == 0
    added = [line for line in dump(target_path) if line not in before]
    assert len(added) == 1 and 'INSERT INTO "audit_log"' in added[0] and "'import'" in added[0]


# --- tool transcripts meet remember()'s rule -----------------------------------------------------


@pytest.mark.parametrize(
    "transcript",
    ["not a list", [{"role": "user", "content": "hi"}], [{"role": "tool", "content": "x", "bogus": 1}], [{"role": "tool", "content": 3}]],
)
def test_a_malformed_tool_transcript_refuses_the_file(two, tmp_path, transcript):
    # Kept, it would make session_messages fail for the whole session, where remember() refuses it.
    records, manifest = lines_of(two, tmp_path / "a.jsonl")
    first(records, "episode")["metadata"] = {"tool_transcript": transcript}
    reseal(tmp_path / "a.jsonl", records, manifest)
    target = MemoryStore.open(tmp_path / "t.db", embedder=FakeEmbedder())
    before = dump(target.path)
    with pytest.raises(ImportValidationError, match="tool_transcript"):
        target.import_(tmp_path / "a.jsonl")
    assert dump(target.path) == before


# --- expect_counts: verified by counts, inside the transaction -----------------------------------


def test_expect_counts_refuses_an_import_the_store_would_not_hold_as_given(two, tmp_path):
    from store.errors import ImportMismatchError

    records, manifest = lines_of(two, tmp_path / "a.jsonl")
    target = MemoryStore.open(tmp_path / "t.db", embedder=FakeEmbedder())
    target.remember("something else entirely", "ok", user_id="alice", id="e1")  # same id, other content
    before = dump(target.path)
    with pytest.raises(ImportMismatchError, match="episodes: 3 expected, 2 held") as caught:
        target.import_(tmp_path / "a.jsonl", expect_counts={"episodes": 3, "facts": 1, "blocks": 1})
    assert caught.value.mismatches == {"episodes": (3, 2)}
    assert dump(target.path) == before  # the two other episodes, the fact and the block rolled back
    # Without the expectation, import keeps the store's record as before.
    assert target.import_(tmp_path / "a.jsonl").kept_existing["episodes"] == 1


def test_expect_counts_accepts_a_reimport_and_refuses_nonsense(two, tmp_path):
    from store.errors import InvalidInputError

    records, manifest = lines_of(two, tmp_path / "a.jsonl")
    target = MemoryStore.open(tmp_path / "t.db", embedder=FakeEmbedder())
    expect = {"episodes": 3, "facts": 1, "blocks": 1}
    assert target.import_(tmp_path / "a.jsonl", expect_counts=expect).counts["episodes"] == 3
    again = target.import_(tmp_path / "a.jsonl", expect_counts=expect)
    assert again.counts["episodes"] == 0 and again.unchanged["episodes"] == 3
    before = dump(target.path)
    for bad in ({"episode": 3}, {"episodes": -1}, {"episodes": True}, ["episodes"]):
        with pytest.raises(InvalidInputError):
            target.import_(tmp_path / "a.jsonl", expect_counts=bad)
    assert dump(target.path) == before


@pytest.mark.parametrize("field", ["fact_id", "caused_by"])
def test_a_fact_change_naming_a_fact_the_file_does_not_hold_is_refused(tmp_path, field):
    """The facts tier's rule across a file's records: a change names facts of its tenant in the
    same file. A file naming another fact is refused, naming the record's field, and nothing is
    written."""
    with MemoryStore.open(tmp_path / "source.db", embedder=None) as source:
        source.add_fact("alice", "lives_in", "Lisbon", user_id="alice", valid_from=T0)
        source.add_fact("alice", "lives_in", "Porto", user_id="alice", valid_from=T0 + timedelta(days=3))
        exported = source.export(user_id="alice")
    assert exported["fact_changes"], "the second fact closes the first: one change"
    exported["fact_changes"][0][field] = "no-such-fact"
    with MemoryStore.open(tmp_path / "target.db", embedder=None) as target:
        with pytest.raises(ImportValidationError, match="names fact 'no-such-fact'") as refused:
            target.import_(exported)
        assert refused.value.field.endswith(f"fact_change.{field}")
        assert target.tenants() == []
