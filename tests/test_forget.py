"""Forget leaves nothing behind, in rows or in bytes, and touches no one else."""

import signal
import subprocess
import sys
import textwrap
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from store import MemoryStore, testing
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError, UnknownSessionError

from .conftest import T0


def secret() -> str:
    return "zq" + uuid.uuid4().hex[:12]  # one FTS token, unmistakable in a byte scan


def file_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")) if p.exists())


def plant(s: MemoryStore, user, n: int = 40) -> list[str]:
    """Fill every tier of ``user`` with unique tokens; return them."""
    tokens = [secret() for _ in range(8)]
    eps = s.remember_many(
        [
            {
                "input": f"{tokens[0]} question {i} " + "padding " * 50,
                "output": f"{tokens[1]} answer {i}",
                "session_id": "s1",
                "occurred_at": T0 + timedelta(minutes=i),
                "metadata": {"m": tokens[2]},
            }
            for i in range(n)
        ],
        user_id=user,
    )
    s.update_block("persona", f"{tokens[3]} persona", user_id=user)
    s.add_fact(tokens[4], "likes", "tea", user_id=user, source_episode_ids=[eps[0].id])
    mem = s.session("s1", user_id=user)
    mem.set("k", tokens[5])
    mem.append_scratchpad(f"{tokens[6]} note")
    mem.create_checkpoint(f"{tokens[7]} checkpoint")
    s.recall(tokens[3], user_id=user, kind="all")  # embeds blocks and notes too
    return tokens


def vector_blobs(s: MemoryStore, user) -> list[bytes]:
    """The tenant's vectors as float32 bytes: what an SQLite page and a pgvector page both hold."""
    from store.schema import vectors_t
    from store.tenancy import Tenant

    with testing.backend(s).read() as conn:
        return list(conn.execute(Tenant.of(user).select(vectors_t, vectors_t.c.vector)).scalars())


def stored_bytes(request, backend: str, db_path: Path) -> bytes:
    """Every byte the store's storage holds: the SQLite file and its side files, or every file
    of the PostgreSQL server's data directory (tables, indexes, statistics, WAL, logs)."""
    if backend == "sqlite":
        return file_bytes(db_path)
    from sqlalchemy import make_url

    from .pg_support import data_directory_bytes

    server = request.getfixturevalue("pg_server")
    if server.data_dir is None:
        pytest.skip("a byte scan needs the embedded server's data directory (MEMLENS_PG_URL is set)")
    return data_directory_bytes(server, make_url(request.getfixturevalue("pg_url")).database)


@pytest.fixture
def two_tenants(backend_url):
    s = MemoryStore.open(backend_url, embedder=FakeEmbedder(dim=96))
    mine, theirs = plant(s, "alice"), plant(s, "bob")
    yield s, mine, theirs
    s.close()


def test_forget_leaves_no_byte_of_the_tenant_on_disk(two_tenants, request, backend, db_path):
    s, mine, theirs = two_tenants
    # The fake embedder hashes words into 96 buckets, so one of alice's vectors can equal one of
    # bob's byte for byte; bob's copy rightly stays, so only alice's own blobs are looked for.
    blobs = [b for b in vector_blobs(s, "alice") if b not in set(vector_blobs(s, "bob"))]
    assert blobs and all(t.encode() in stored_bytes(request, backend, db_path) for t in mine)
    bob_before = s.export(user_id="bob")
    receipt = s.forget(user_id="alice", actor="dpo")
    assert receipt.disk_scrubbed and receipt.out_of_reach
    raw = stored_bytes(request, backend, db_path)
    leaked = [t for t in mine if t.encode() in raw]
    assert leaked == []
    assert not any(blob in raw for blob in blobs)
    assert all(t.encode() in raw for t in theirs[:2])
    bob_after = s.export(user_id="bob")
    sections = ["blocks", "episodes", "facts", "sessions", "kv_entries", "task_states", "scratchpad", "checkpoints"]
    assert {k: bob_after[k] for k in sections} == {k: bob_before[k] for k in sections}


def test_nothing_is_left_to_read_or_search(two_tenants):
    s, mine, _ = two_tenants
    s.forget(user_id="alice")
    assert s.profile(user_id="alice").counts.model_dump() == dict.fromkeys(s.profile(user_id="alice").counts.model_dump(), 0)
    for mode in ("hybrid", "keyword", "vector"):
        assert s.recall(mine[0], user_id="alice", mode=mode, kind="all") == []
    assert "alice" not in [t.user_id for t in s.tenants()]
    with testing.backend(s).read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM vectors WHERE user_id = 'alice'").scalar() == 0


def test_receipt_counts_every_tier_and_holds_no_content(two_tenants):
    s, mine, _ = two_tenants
    dry = s.forget(user_id="alice", dry_run=True)
    real = s.forget(user_id="alice")
    assert dry.counts == real.counts
    assert real.counts["episodes"] == 40 and real.counts["blocks"] == 1 and real.counts["checkpoints"] == 1
    assert real.counts["facts"] == 1 and real.counts["scratchpad_entries"] == 1 and real.counts["vectors"] >= 43
    assert not any(t in real.model_dump_json() for t in mine)
    assert len(real.digest) == 64


@pytest.mark.sqlite_only(reason="compares dumps of the SQLite file")
def test_dry_run_changes_nothing(two_tenants, db_path):
    s, _, _ = two_tenants
    from .conftest import dump

    before = dump(db_path)
    s.forget(user_id="alice", dry_run=True)
    assert dump(db_path) == before


def test_anonymous_and_named_tenants_never_touch_each_other(db_path):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        plant(s, "alice")
        anonymous = plant(s, None)
        s.forget(user_id=None)
        raw = file_bytes(db_path)
        assert not any(t.encode() in raw for t in anonymous)
        assert s.profile(user_id="alice").counts.episodes == 40
        s.forget(user_id="alice")
        assert s.tenants() == []


def test_forget_one_session_takes_its_derived_facts_and_checkpoints(backend_url):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as s:
        keep = s.remember("keep me", user_id="u", session_id="other")
        gone = s.remember("forget me", user_id="u", session_id="s1")
        s.add_fact("u", "said", "something", user_id="u", source_episode_ids=[gone.id])
        s.add_fact("u", "kept", "this", user_id="u", source_episode_ids=[keep.id])
        mem = s.session("s1", user_id="u")
        mem.set("k", "v")
        mem.create_checkpoint("c")
        receipt = s.forget(user_id="u", session_id="s1")
        assert (receipt.counts["episodes"], receipt.counts["facts"], receipt.counts["checkpoints"], receipt.counts["sessions"]) == (
            1,
            1,
            1,
            1,
        )
        assert [e.input for e in s.episodes(user_id="u").items] == ["keep me"]
        assert [f.predicate for f in s.facts(user_id="u")] == ["kept"]
        assert s.session("s1", user_id="u").get_all() == {}
        with pytest.raises(UnknownSessionError):
            s.forget(user_id="u", session_id="never")


def test_forget_before_a_date(backend_url):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as s:
        s.remember_many([{"input": f"e{i}", "occurred_at": T0 + timedelta(days=i), "session_id": "s"} for i in range(5)], user_id="u")
        s.update_block("persona", "kept", user_id="u")
        receipt = s.forget(user_id="u", before=T0 + timedelta(days=2))
        assert receipt.counts["episodes"] == 2 and receipt.counts["blocks"] == 0
        assert sorted(e.input for e in s.episodes(user_id="u").items) == ["e2", "e3", "e4"]
        assert s.working(user_id="u")[0].content == "kept"


def test_audit_log_records_the_erasure_and_survives_it(two_tenants):
    s, mine, _ = two_tenants
    receipt = s.forget(user_id="alice", actor="dpo@example.com")
    entries = s.audit_log(user_id="alice")
    assert [(e.action, e.actor, e.digest) for e in entries] == [("forget", "dpo@example.com", receipt.digest)]
    assert entries[0].counts == receipt.counts
    assert not any(t in entries[0].model_dump_json() for t in mine)
    assert any(e.user_id == "alice" for e in s.audit_log(all_tenants=True))


CRASHER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    import store.rights.erasure as erasure
    from store import MemoryStore
    real_begin, real_delete = erasure.begin_tenant_erasure, erasure.delete

    def begin_then_die(*args):
        real_begin(*args)                 # counted, audited, marked inside the transaction...
        os.kill(os.getpid(), signal.SIGKILL)  # ...and the process dies before COMMIT

    def delete_then_die(conn, scope):
        real_delete(conn, scope)          # every row of the session deleted in the transaction...
        os.kill(os.getpid(), signal.SIGKILL)

    erasure.begin_tenant_erasure, erasure.delete = begin_then_die, delete_then_die
    s = MemoryStore.open({path!r}, embedder=None)
    s.forget(user_id="alice", session_id={session!r})
    """
)


@pytest.mark.parametrize("session", [None, "s1"], ids=["tenant", "session"])
def test_a_crash_before_forget_commits_leaves_all_of_it(backend_url, session):
    """Before the commit nothing is erased: a whole tenant's marker, like a session's deletes,
    dies with the transaction (a crash after it rolls forward: test_forget_in_steps.py)."""
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as s:
        plant(s, "alice", n=400)
        before = s.profile(user_id="alice").counts
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run([sys.executable, "-c", CRASHER.format(root=root, path=backend_url, session=session)])
    assert proc.returncode == -signal.SIGKILL
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as s:
        assert s.profile(user_id="alice").counts == before
        assert len(s.recall("question", user_id="alice", mode="keyword", limit=500)) == 400
        s.forget(user_id="alice")
        assert s.profile(user_id="alice").counts.episodes == 0


def test_forget_facts_only_erases_the_facts_recorded_before_and_nothing_else(backend_url, request, backend, db_path, clock):
    """``facts_only`` (loomflow's FactStore.delete): the tenant's facts recorded before
    ``before`` go, to the bytes; its episodes, blocks, sessions and later facts stay."""
    with MemoryStore.open(backend_url, embedder=FakeEmbedder(dim=96)) as s:
        mine, theirs = plant(s, "alice"), plant(s, "bob")
        old, new = secret(), secret()
        clock[0] = T0 + timedelta(days=1)
        s.add_fact("alice", "lives_in", "Porto", user_id="alice")
        clock[0] = T0 + timedelta(days=2)
        s.add_fact("alice", "lives_in", old, user_id="alice")  # closes Porto
        clock[0] = T0 + timedelta(days=4)
        s.add_fact("alice", "owns", new, user_id="alice")
        before = T0 + timedelta(days=3)
        preview = s.forget(user_id="alice", facts_only=True, before=before, dry_run=True)
        episodes_before = s.profile(user_id="alice").counts.episodes
        receipt = s.forget(user_id="alice", facts_only=True, before=before, actor="dpo")
        assert receipt.counts == preview.counts
        assert receipt.counts["facts"] == 3 and receipt.counts["vectors"] == 3  # plant's fact, Porto, old
        assert receipt.counts["episodes"] == 0 and receipt.counts["blocks"] == 0
        assert [(f.object, f.valid_until) for f in s.facts(user_id="alice", include_history=True)] == [(new, None)]
        assert s.profile(user_id="alice").counts.episodes == episodes_before
        assert s.working(user_id="alice") and s.session("s1", user_id="alice").get("k") == mine[5]
        assert len(s.facts(user_id="bob")) == 1
        assert s.audit_log(user_id="alice")[0].scope["facts_only"] is True
        assert receipt.disk_scrubbed
        raw = stored_bytes(request, backend, db_path)
        assert old.encode() not in raw and mine[4].encode() not in raw  # the erased facts' texts
        assert new.encode() in raw and mine[0].encode() in raw and theirs[4].encode() in raw


def test_facts_only_refuses_a_session_and_leaves_the_tenant_able_to_state_facts_again(backend_url, clock):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder(dim=96)) as s:
        s.add_fact("alice", "lives_in", "Porto", user_id="alice")
        clock[0] = T0 + timedelta(days=2)
        s.add_fact("alice", "lives_in", "Lisbon", user_id="alice")
        clock[0] = T0 + timedelta(days=3)
        with pytest.raises(InvalidInputError):
            s.forget(user_id="alice", facts_only=True, session_id="s1")
        receipt = s.forget(user_id="alice", facts_only=True, before=T0 + timedelta(days=3))
        assert receipt.counts["facts"] == 2
        s.add_fact("alice", "lives_in", "Braga", user_id="alice")
        assert [f.object for f in s.facts(user_id="alice")] == ["Braga"]
