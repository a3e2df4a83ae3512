"""Forget finishes what it starts (a kill between commit and scrub, a reader in the way), does
not stall the agents writing meanwhile, and no other process keeps using what it erased."""

import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

import store.backend.sqlite.database
import store.backend.sqlite.keyword_rewrite
import store.backend.sqlite.maintenance
import store.rights.service
from inspector.cli.main import main as cli_main
from store import MemoryStore, testing
from store.embedding import FakeEmbedder
from store.errors import StoreBusyError
from store.validation import set_clock

from .conftest import T0, dump
from .test_forget import file_bytes, plant

ROOT = str(Path(__file__).resolve().parent.parent)

KILL_AT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    import store.backend.sqlite.{module} as module
    from store import MemoryStore

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(module, {step!r}, die)   # the delete has committed; the process dies before this step
    s = MemoryStore.open({path!r}, embedder=None)
    s.forget(user_id="alice", actor="dpo")
    """
)


@pytest.mark.parametrize(("module", "step"), [("keyword_rewrite", "rewrite_keyword_indexes"), ("maintenance", "truncate_wal")])
def test_a_kill_between_commit_and_scrub_is_finished_by_the_next_open(db_path, module, step, capsys):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        mine = plant(s, "alice")
        theirs = plant(s, "bob")
    proc = subprocess.run([sys.executable, "-c", KILL_AT.format(root=ROOT, path=str(db_path), module=module, step=step)])
    assert proc.returncode == -signal.SIGKILL
    # The rows are gone but their bytes are not, and the file says so.
    assert any(t.encode() in file_bytes(db_path) for t in mine)
    with MemoryStore.open(db_path, read_only=True, embedder=None, check_model=False) as s:
        assert s.profile(user_id="alice").counts.episodes == 0
        pending = s.pending_scrub()
        assert pending is not None and pending.erasures == 1 and pending.indexes_rewritten == (step == "truncate_wal")
        [entry] = s.audit_log(user_id="alice")
        assert entry.disk_scrubbed is False and pending.digests == [entry.digest]
    assert cli_main(["stats", str(db_path)]) == 0
    assert "scrub pending: 1 erasure" in capsys.readouterr().out
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:  # a read-write open finishes it
        raw = file_bytes(db_path)
        assert [t for t in mine if t.encode() in raw] == []
        assert all(t.encode() in raw for t in theirs[:2])
        assert s.pending_scrub() is None
        assert s.audit_log(user_id="alice")[0].disk_scrubbed is True
    assert cli_main(["stats", str(db_path)]) == 0
    assert "scrub pending" not in capsys.readouterr().out


READER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect({path!r}, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM episodes").fetchone()   # holds this snapshot
    print("ready", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
    """
)


def start_reader(path: Path) -> subprocess.Popen:
    reader = subprocess.Popen(
        [sys.executable, "-c", READER.format(path=str(path))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert reader.stdout.readline().strip() == "ready"
    return reader


def stop_reader(reader: subprocess.Popen) -> None:
    reader.stdin.write("\n")
    reader.stdin.flush()
    assert reader.wait(10) == 0


class WriteInThePause:
    """The clock of ``maintenance``: at the scrub's first pause between checkpoint attempts, an
    agent in another thread writes, and the pause waits for that write to finish. Were the scrub
    holding the write lock while it waits for the reader, the write would fail with
    StoreBusyError after the store's busy timeout (or never finish)."""

    def __init__(self, db_path: Path):
        self.db_path, self.outcome = db_path, None
        self.monotonic = time.monotonic

    def sleep(self, seconds: float) -> None:
        if self.outcome is None:
            self.outcome = "not finished"

            def agent_write():
                with MemoryStore.open(self.db_path, embedder=None) as agent_store:
                    try:
                        agent_store.remember("written while the scrub waits", user_id="bob", session_id="live")
                        self.outcome = "written"
                    except Exception as error:  # reported by the test
                        self.outcome = error

            writer = threading.Thread(target=agent_write)
            writer.start()
            writer.join(120)  # only a bound on a hang; a loaded machine may be slow
        time.sleep(seconds)


def test_a_reader_in_another_process_leaves_the_scrub_pending_without_stalling_writers(db_path, monkeypatch):
    monkeypatch.setattr(store.rights.service, "SCRUB_RETRY_INTERVAL", 0.0)
    clock = WriteInThePause(db_path)
    monkeypatch.setattr(store.backend.sqlite.maintenance, "time", clock)
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        mine = plant(s, "alice")
        plant(s, "bob")
        reader = start_reader(db_path)
        errors, stop = [], threading.Event()

        def agent():
            with MemoryStore.open(db_path, embedder=None) as agent_store:
                while not stop.is_set():
                    try:
                        agent_store.remember("agent turn", user_id="bob", session_id="live")
                    except Exception as error:  # reported below
                        errors.append(error)
                    time.sleep(0.01)

        writer = threading.Thread(target=agent)
        writer.start()
        try:
            receipt = s.forget(user_id="alice")
        finally:
            stop.set()
            writer.join()
        # Before: twenty 10 s checkpoint waits holding the write lock; writers failed with
        # "database is locked". Now the forget gives up after its short budget and says why,
        # and a write made while it waits for the reader goes through.
        assert clock.outcome == "written"
        assert errors == []
        assert not receipt.disk_scrubbed and "snapshot" in receipt.scrub_pending_reason
        assert s.pending_scrub().erasures == 1
        assert s.audit_log(user_id="alice")[0].disk_scrubbed is False
        stop_reader(reader)
        s.remember("the next write", user_id="bob")  # retries the scrub once the reader is gone
        assert s.pending_scrub() is None
        assert s.audit_log(user_id="alice")[0].disk_scrubbed is True
        raw = file_bytes(db_path)
        assert [t for t in mine if t.encode() in raw] == []


def test_memlens_scrub_reports_and_finishes_pending_work(db_path, capsys):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        plant(s, "alice")
        reader = start_reader(db_path)
        try:
            assert not s.forget(user_id="alice").disk_scrubbed
            assert cli_main(["scrub", str(db_path)]) == 1
            out = capsys.readouterr().out
            assert "scrub pending: 1 erasure" in out and "still holds an old snapshot" in out
        finally:
            stop_reader(reader)
    assert cli_main(["scrub", str(db_path)]) == 0
    assert "scrubbed" in capsys.readouterr().out
    with MemoryStore.open(db_path, read_only=True, embedder=None, check_model=False) as s:
        assert s.pending_scrub() is None


def test_a_write_that_waits_past_the_busy_timeout_raises_store_busy(db_path, monkeypatch):
    monkeypatch.setattr(store.backend.sqlite.database, "BUSY_TIMEOUT_MS", 200)
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember("first", user_id="u")
        holder = sqlite3.connect(db_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            before = s.episodes(user_id="u").items
            with pytest.raises(StoreBusyError, match="busy"):
                s.remember("second", user_id="u")
            with pytest.raises(StoreBusyError):
                s.session("x", user_id="u").set("k", 1)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert s.episodes(user_id="u").items == before


FORGET_AND_REFILL = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from store import MemoryStore
    from store.embedding import FakeEmbedder
    with MemoryStore.open({path!r}, embedder=FakeEmbedder()) as s:
        s.forget(user_id="alice")
        # New rows take the erased row keys again (SQLite reuses max(key) + 1).
        s.remember("brand new one", "x", user_id="alice")
        s.remember("brand new two", "y", user_id="alice")
    """
)


def test_another_process_never_ranks_with_erased_vectors(db_path):
    query = "zebra giraffe secret"
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as warm:  # the inspector, say
        warm.remember("zebra giraffe secret words", "answer", user_id="alice")
        warm.remember("other stuff entirely", "answer", user_id="alice")
        assert warm.recall(query, user_id="alice", mode="vector")[0].scores.vector > 0.7
        subprocess.run([sys.executable, "-c", FORGET_AND_REFILL.format(root=ROOT, path=str(db_path))], check=True)
        seen = {h.text: h.scores.vector for h in warm.recall(query, user_id="alice", mode="vector")}
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as fresh:
        expected = {h.text: h.scores.vector for h in fresh.recall(query, user_id="alice", mode="vector")}
    assert seen == expected and max(seen.values()) == 0.0


def test_an_erasure_between_snapshot_and_version_check_is_still_noticed(db_path):
    """The erasure counter is read in the search's own snapshot, so a forget that commits while
    a search runs cannot leave a matrix from before it marked as current."""
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.remember("zebra giraffe secret words", user_id="alice")
        s.warm_vectors(user_id="alice")
        cache = testing.vector_cache(s)
        with testing.backend(s).read() as conn:
            conn.exec_driver_sql("SELECT 1 FROM episodes").all()  # the snapshot starts before the forget
            subprocess.run([sys.executable, "-c", FORGET_AND_REFILL.format(root=ROOT, path=str(db_path))], check=True)
            cache.get(conn, testing.tenant(s, "alice"), "episode", 64)
        hits = s.recall("zebra giraffe secret", user_id="alice", mode="vector")
        assert [h.scores.vector for h in hits] == [0.0, 0.0]


# --- key-value entries past their TTL ----------------------------------------------------------


def test_expired_entries_are_not_exported_and_leave_the_disk(db_path):
    clock = [T0]
    set_clock(lambda: clock[0])
    try:
        with MemoryStore.open(db_path, embedder=None) as s:
            memory = s.session("s", user_id="u")
            memory.set("short", "zqexpiredvalue1", ttl=60)
            memory.set("other", "zqexpiredvalue2", ttl=60)
            s.session("quiet", user_id="u").set("idle", "zqexpiredvalue3", ttl=60)
            memory.set("long", "kept")
            clock[0] = T0 + timedelta(minutes=5)
            exported = s.export(user_id="u")
            assert [e["key"] for e in exported["kv_entries"]] == ["long"]
            assert "zqexpired" not in str(exported)
            memory.set("new", 1)  # a write to the session deletes its expired rows
            with testing.backend(s).read() as conn:
                keys = {k for (k,) in conn.exec_driver_sql("SELECT key FROM kv_entries")}
            assert keys == {"long", "new", "idle"}
        assert b"zqexpiredvalue3" in file_bytes(db_path)  # its session was not written to
        with MemoryStore.open(db_path, embedder=None) as s:  # the next open purges and scrubs
            raw = file_bytes(db_path)
            assert [v for v in (b"zqexpiredvalue1", b"zqexpiredvalue2", b"zqexpiredvalue3") if v in raw] == []
            assert s.session("s", user_id="u").get_all() == {"long": "kept", "new": 1}
    finally:
        set_clock(None)


def test_an_open_with_nothing_pending_writes_nothing(db_path):
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember("hello", user_id="u")
    before = dump(db_path)
    MemoryStore.open(db_path, embedder=None).close()
    assert dump(db_path) == before


def test_an_erasure_committed_during_a_scrub_stays_pending(db_path, monkeypatch):
    from store.rights import audit, erasure
    from store.tenancy import Tenant
    from store.validation import utcnow

    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        plant(s, "alice")
        theirs = plant(s, "bob")
        real = testing.backend(s).rewrite_keyword_indexes

        def rewrite_then_another_erasure(**kwargs):
            done = real(**kwargs)
            # Another process erases bob now, and dies before its own scrub.
            with testing.backend(s).write() as conn:
                counts = erasure.delete(conn, erasure.Scope(Tenant("bob"), None, None))
                digest = audit.record(
                    conn,
                    Tenant("bob"),
                    action="forget",
                    actor="other",
                    scope={},
                    counts=counts,
                    at=utcnow(),
                    status={"disk_scrubbed": False},
                )
                erasure.count_erasure(conn)
                erasure.mark_pending(conn, Tenant("bob"), digest, utcnow())
            return done

        monkeypatch.setattr(testing.backend(s), "rewrite_keyword_indexes", rewrite_then_another_erasure)
        assert s.forget(user_id="alice").disk_scrubbed
        pending = s.pending_scrub()
        assert pending.erasures == 1 and not pending.indexes_rewritten  # bob's merge is still owed
        assert s.audit_log(user_id="bob")[0].disk_scrubbed is False
        monkeypatch.undo()
        assert s.scrub() and s.pending_scrub() is None
        assert s.audit_log(user_id="bob")[0].disk_scrubbed is True
        raw = file_bytes(db_path)
        assert [t for t in theirs if t.encode() in raw] == []


@pytest.mark.parametrize("writing", [False, True], ids=["alone", "beside an agent writing"])
def test_the_scrub_leaves_no_segment_that_held_an_erased_term(db_path, monkeypatch, writing):
    """The keyword index is rewritten until the segments that held the erased terms are gone; the
    segments an agent writes meanwhile are neither waited for nor taken in, and hold nothing erased."""
    with MemoryStore.open(db_path, embedder=None) as s:
        words = random.Random(5)
        for _ in range(30):  # many segments, merged into larger ones as they come
            s.remember_many(
                [{"input": " ".join(f"w{words.randrange(20000)}" for _ in range(12)), "output": "ok"} for _ in range(500)], user_id="bob"
            )
        s.remember_many([{"input": f"alice says xylophonequartz {i}", "output": "ok"} for i in range(50)], user_id="alice")
        for start in range(0, 1000, 100):
            s.remember_many([{"input": f"bob later {start + i}", "output": "ok"} for i in range(100)], user_id="bob")
        assert b"ylophonequartz" in file_bytes(db_path)  # the term, as the index stores it after its first letter
        before = segments(db_path)
        # Steps of four pages: this index takes as many steps as one of 750,000 episodes in 100-page steps.
        monkeypatch.setattr(store.backend.sqlite.keyword_rewrite, "MERGE_PAGES", 4)
        stop = threading.Event()

        def agent() -> None:
            with MemoryStore.open(db_path, embedder=None) as writer:
                n = 0
                while not stop.is_set():
                    writer.remember(f"bob meanwhile {n}", "ok", user_id="bob")
                    n += 1
                    time.sleep(0.0005)

        thread = threading.Thread(target=agent)
        if writing:
            thread.start()
        try:
            time.sleep(0.3)
            receipt = s.forget(user_id="alice", actor="dpo")
        finally:
            stop.set()
            if writing:
                thread.join(60)
        assert receipt.disk_scrubbed, receipt.scrub_pending_reason
        assert not before & segments(db_path)  # every segment that could hold an erased term is gone
    assert b"ylophonequartz" not in file_bytes(db_path)


def segments(db_path: Path) -> set[tuple[int, bytes]]:
    """The keyword index's segments, each by its number and its first page (FTS5 reuses numbers;
    a page is keyed segid << 37 | page number)."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
        return set(
            conn.execute(
                "SELECT segid, (SELECT block FROM episodes_fts_data WHERE id = (segid << 37) + 1) FROM (SELECT DISTINCT segid FROM episodes_fts_idx)"
            )
        )
