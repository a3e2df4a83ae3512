"""On PostgreSQL, forgetting a whole tenant drops its partitions (0.02 s each where rewriting
one took 2.5 s), and the store stays consistent around it: a process that wrote the tenant
before (and so believes its partitions exist) writes it again, a kill between the drop and the
audit entry is finished by the next open, and expired session keys leave the data directory as
an erasure's rows do."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import make_url

from store import MemoryStore, testing
from store.backend.postgres import partitions, tables
from store.embedding import FakeEmbedder
from store.tenancy import Tenant
from store.validation import set_clock, utcnow

from .pg_support import data_directory_bytes
from .test_forget import plant

ROOT = str(Path(__file__).resolve().parent.parent)


def tables_of(url: str, user: str) -> set[str]:
    """The tenant's partitions that exist in the database, attached or not."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        rows = conn.execute("SELECT relname FROM pg_class WHERE relname = ANY(%s)", (list(partitions.names(Tenant(user)).values()),))
        return {name for (name,) in rows}


def scan(pg_server, pg_url: str) -> bytes:
    if pg_server.data_dir is None:
        pytest.skip("a byte scan needs the embedded server's data directory (MEMLENS_PG_URL is set)")
    return data_directory_bytes(pg_server, make_url(pg_url).database)


def test_forgetting_a_whole_tenant_drops_its_partitions_and_a_session_keeps_them(pg_url):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        plant(s, "alice", n=5)
        plant(s, "bob", n=5)
        s.remember("carol's other session", user_id="carol", session_id="keep")
        s.remember("carol's session to forget", user_id="carol", session_id="gone")
        assert len(tables_of(pg_url, "alice")) == len(tables.PARTITIONED)
        receipt = s.forget(user_id="alice")
        assert receipt.disk_scrubbed and receipt.counts["episodes"] == 5
        assert tables_of(pg_url, "alice") == set()
        assert len(tables_of(pg_url, "bob")) == len(tables.PARTITIONED)
        assert s.forget(user_id="carol", session_id="gone").disk_scrubbed
        assert len(tables_of(pg_url, "carol")) == len(tables.PARTITIONED)  # the tenant lives on
        assert [e.input for e in s.episodes(user_id="carol").items] == ["carol's other session"]
        assert s.forget(user_id="alice", missing_ok=True).counts["episodes"] == 0
        assert tables_of(pg_url, "alice") == set()  # forgetting an absent tenant makes it no storage


def test_a_process_that_wrote_the_tenant_before_the_drop_writes_it_again(pg_url):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as eraser, MemoryStore.open(pg_url, embedder=FakeEmbedder()) as agent:
        agent.remember("before", user_id="alice")  # this store object now believes alice's partitions exist
        agent.session("s", user_id="alice").set("k", "v")
        assert eraser.forget(user_id="alice").disk_scrubbed
        assert tables_of(pg_url, "alice") == set()
        agent.remember("after", user_id="alice")
        agent.session("s", user_id="alice").set("k2", "v2")
        assert [e.input for e in eraser.episodes(user_id="alice").items] == ["after"]
        assert eraser.session("s", user_id="alice").get_all() == {"k2": "v2"}
        assert len(tables_of(pg_url, "alice")) == len(tables.PARTITIONED)


KILL_AFTER_DROP = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    import store.backend.postgres.partitions as partitions
    from store import MemoryStore
    real = partitions.drop_locked

    def drop_then_die(conn, tenant):
        real(conn, tenant)                      # the partitions are gone...
        os.kill(os.getpid(), signal.SIGKILL)    # ...and the process dies before the audit entry says so

    partitions.drop_locked = drop_then_die
    s = MemoryStore.open({url!r}, embedder=None)
    s.forget(user_id="alice", actor="dpo")
    """
)


def test_a_kill_between_the_drop_and_the_audit_entry_is_finished_by_the_next_open(pg_server, pg_url):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        mine = plant(s, "alice")
        theirs = plant(s, "bob")
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_DROP.format(root=ROOT, url=pg_url)])
    assert proc.returncode == -signal.SIGKILL
    assert tables_of(pg_url, "alice") == set()
    with MemoryStore.open(pg_url, read_only=True, embedder=None, check_model=False) as s:
        assert s.profile(user_id="alice").counts.episodes == 0
        pending = s.pending_scrub()
        [entry] = s.audit_log(user_id="alice")
        assert entry.disk_scrubbed is False and pending is not None and pending.digests == [entry.digest]
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:  # a read-write open finishes it
        assert s.pending_scrub() is None
        assert s.audit_log(user_id="alice")[0].disk_scrubbed is True
        raw = scan(pg_server, pg_url)
        assert [t for t in mine if t.encode() in raw] == []
        assert all(t.encode() in raw for t in theirs[:2])
        s.remember("alice comes back", user_id="alice")
        assert [e.input for e in s.episodes(user_id="alice").items] == ["alice comes back"]
        assert len(s.episodes(user_id="bob", limit=100).items) == 40


def test_purged_expired_keys_leave_the_data_directory(pg_server, pg_url):
    clock = [utcnow()]
    set_clock(lambda: clock[0])
    try:
        with MemoryStore.open(pg_url, embedder=None) as s:
            memory = s.session("s", user_id="u")
            memory.set("short", "zqexpiredvalue1", ttl=60)
            s.session("quiet", user_id="u").set("idle", "zqexpiredvalue2", ttl=60)
            memory.set("long", "zqkeptvalue")
            s.session("o", user_id="other").set("theirs", "zqotherkeptvalue", ttl=3600)
            with testing.backend(s).write() as conn:
                conn.exec_driver_sql("ANALYZE")  # as autovacuum would: statistics copy values too
            assert b"zqexpiredvalue2" in scan(pg_server, pg_url)
            clock[0] += timedelta(minutes=5)
            assert s.purge_expired() == 2
            assert s.pending_scrub() is None
            raw = scan(pg_server, pg_url)
            assert [v for v in (b"zqexpiredvalue1", b"zqexpiredvalue2") if v in raw] == []
            assert b"zqkeptvalue" in raw and b"zqotherkeptvalue" in raw
            assert s.session("s", user_id="u").get_all() == {"long": "zqkeptvalue"}
    finally:
        set_clock(None)
