"""PostgreSQL writers lock per tenant: two tenants' writers run together, two writers of one
tenant take turns, a store-wide writer holds everyone off, and what the services read, then
write across tenants (the erasure counter, the pending-scrub record, the model's name) is never
lost when writers of two tenants reach it at once: a second process stops at the exact point
between its read and its write, and the test writes another tenant meanwhile."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from store import MemoryStore, testing
from store.backend.postgres import errors as pg_errors
from store.backend.postgres import locks
from store.embedding import FakeEmbedder
from store.errors import ModelMismatchError, StoreBusyError
from store.rights import erasure
from store.tenancy import Tenant
from store.validation import set_clock, utcnow

ROOT = str(Path(__file__).resolve().parent.parent)


def libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture
def short_lock_timeout(monkeypatch):
    # A writer that must wait gives up after 1 s instead of 10: a refusal the test can see.
    monkeypatch.setattr(pg_errors, "LOCK_TIMEOUT_S", 1)


def hold_write(s: MemoryStore, tenant: str, started: threading.Event, release: threading.Event) -> threading.Thread:
    """A writer of ``tenant`` that has written a row and keeps its transaction open."""
    from store.tiers.common import touch_tenant

    def run():
        with testing.backend(s).write(Tenant(tenant)) as conn:
            touch_tenant(conn, Tenant(tenant), utcnow())
            started.set()
            release.wait(30)

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(30)
    return thread


def test_another_tenants_write_commits_while_a_tenants_writer_holds_its_transaction(pg_url, short_lock_timeout):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as a, MemoryStore.open(pg_url, embedder=FakeEmbedder()) as b:
        a.remember("alice was here first", user_id="alice")
        b.remember("bob was here first", user_id="bob")
        started, release = threading.Event(), threading.Event()
        holder = hold_write(a, "alice", started, release)
        try:
            b.remember("bob writes while alice's writer is open", user_id="bob")  # did not wait
            b.session("s", user_id="bob").set("k", "v")
            with pytest.raises(StoreBusyError, match="nothing was changed"):
                b.remember("a second writer of alice waits, then gives up", user_id="alice")
        finally:
            release.set()
            holder.join()
        assert [e.input for e in b.episodes(user_id="alice").items] == ["alice was here first"]
        assert len(b.episodes(user_id="bob").items) == 2


def test_a_store_wide_writer_holds_off_every_tenant_and_waits_for_them(pg_url, short_lock_timeout):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        s.remember("first", user_id="alice")
        with psycopg.connect(libpq(pg_url), autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock_shared(%s)", (locks.STORE_LOCK,))  # a tenant writer, mid-transaction
            with pytest.raises(StoreBusyError):
                with testing.backend(s).write() as conn:  # a store-wide write (re-embedding, a migration) waits for it
                    conn.exec_driver_sql("SELECT 1")
            s.remember("tenant writers share the store lock", user_id="bob")
        assert len(s.episodes(user_id="bob").items) == 1


def test_writers_locking_the_same_tenants_in_opposite_orders_never_deadlock(pg_url):
    """Two imports of {a, b} and {b, a} at once, many times: each takes the tenants' locks in
    key order, so neither holds one the other waits for (a deadlock would be StoreBusyError)."""
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        s.remember("x", user_id="a")
        s.remember("y", user_id="b")
        errors: list[BaseException] = []

        def write(order: list[str], rounds: int) -> None:
            try:
                for _ in range(rounds):
                    with testing.backend(s).write(*(Tenant(k) for k in order)) as conn:
                        for key in order:
                            conn.exec_driver_sql("SELECT pg_sleep(0.005)")
                            conn.exec_driver_sql("UPDATE tenants SET last_activity = last_activity + 1 WHERE user_id = %s", (key,))
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=write, args=(order, 20)) for order in (["a", "b"], ["b", "a"])]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []


# --- what is read, then written, across tenants -----------------------------------------------

PAUSE_IN_FORGET = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    import store.rights.erasure as erasure
    from store.backend.postgres.backend import PostgresBackend
    from store import MemoryStore

    ready, go = Path({ready!r}), Path({go!r})
    real_mark, real_read = erasure.mark_pending, erasure.read_pending
    armed = [False]

    def mark_pending(*args, **kwargs):
        armed[0] = True
        return real_mark(*args, **kwargs)

    def read_pending(conn):
        value = real_read(conn)
        if armed[0]:  # inside the erasure's transaction: the counter and the record are read
            armed[0] = False
            ready.touch()
            while not go.exists():
                time.sleep(0.01)
        return value

    erasure.mark_pending, erasure.read_pending = mark_pending, read_pending
    PostgresBackend.flush_erased_pages = lambda self, *args: (False, "held back by the test")
    with MemoryStore.open({url!r}, embedder=None) as s:
        s.forget(user_id="alice")
    """
)


def someone_waits_for_a_lock(url: str) -> bool:
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        return conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')"
        ).fetchone()[0]


def interleave(url: str, tmp_path: Path, meanwhile) -> None:
    """A second process erases alice and stops between reading the store-wide records and
    writing them; ``meanwhile`` runs here until it commits or waits for a lock; then the
    process goes on."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", PAUSE_IN_FORGET.format(root=ROOT, url=url, ready=str(ready), go=str(go))])
    try:
        while not ready.exists():
            assert proc.poll() is None, "the erasing process died before its pause"
            time.sleep(0.01)
        errors: list[BaseException] = []

        def run():
            try:
                meanwhile()
            except BaseException as error:
                errors.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        while thread.is_alive() and not someone_waits_for_a_lock(url):
            time.sleep(0.01)
        go.touch()
        thread.join(60)
        assert proc.wait(60) == 0
        assert errors == []
    finally:
        if proc.poll() is None:
            proc.kill()


def pending_record(url: str) -> tuple[int, dict]:
    with MemoryStore.open(url, embedder=None, read_only=True, check_model=False) as s, testing.backend(s).read() as conn:
        return erasure.erasure_count(conn), erasure.read_pending(conn)


def test_two_tenants_erased_at_once_both_count_and_both_stay_pending(pg_url, tmp_path, monkeypatch):
    with MemoryStore.open(pg_url, embedder=None) as s:
        s.remember("alice's", user_id="alice")
        s.remember("bob's", user_id="bob")
    with MemoryStore.open(pg_url, embedder=None) as s:
        monkeypatch.setattr(testing.backend(s), "flush_erased_pages", lambda *args: (False, "held back by the test"))
        interleave(pg_url, tmp_path, lambda: s.forget(user_id="bob"))
    erasures, pending = pending_record(pg_url)
    assert erasures == 2, "an erasure went uncounted: caches would keep its vectors"
    assert sorted(key for key, _ in pending["erasures"]) == ["alice", "bob"]


def test_expired_keys_purged_during_an_erasure_stay_pending_beside_it(pg_url, tmp_path, monkeypatch):
    with MemoryStore.open(pg_url, embedder=None) as s:
        s.remember("alice's", user_id="alice")
        s.session("s", user_id="carol").set("k", "zqexpiring", ttl=60)
    clock = [utcnow() + timedelta(minutes=5)]
    set_clock(lambda: clock[0])
    try:
        with MemoryStore.open(pg_url, embedder=None) as s:
            pass  # the open purges carol's key and scrubs; nothing is pending after it
        with MemoryStore.open(pg_url, embedder=None) as s:
            s.session("s", user_id="carol").set("k2", "zqexpiring2", ttl=60)
            clock[0] += timedelta(minutes=5)
            monkeypatch.setattr(testing.backend(s), "flush_erased_pages", lambda *args: (False, "held back by the test"))
            interleave(pg_url, tmp_path, s.purge_expired)
    finally:
        set_clock(None)
    _, pending = pending_record(pg_url)
    assert [key for key, _ in pending["erasures"]] == ["alice"]
    assert pending.get("expired") == ["carol"], "the purge's pending scrub was overwritten"


PAUSE_IN_MODEL_RECORD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    import store.recall.indexing as indexing
    from store import MemoryStore
    from store.embedding import FakeEmbedder

    ready, go = Path({ready!r}), Path({go!r})
    real = indexing.record_model

    def record_model(conn, embedder):
        ready.touch()  # it has read that no model is recorded yet
        while not go.exists():
            time.sleep(0.01)
        real(conn, embedder)

    indexing.record_model = record_model
    with MemoryStore.open({url!r}, embedder=FakeEmbedder(dim=384, name="model-one")) as s:
        s.remember("alice's first", user_id="alice")
    """
)


def test_two_tenants_first_vectors_of_two_models_are_never_mixed(pg_url, tmp_path):
    MemoryStore.open(pg_url, embedder=None).close()  # a store with no model recorded yet
    ready, go = tmp_path / "ready", tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", PAUSE_IN_MODEL_RECORD.format(root=ROOT, url=pg_url, ready=str(ready), go=str(go))])
    try:
        while not ready.exists():
            assert proc.poll() is None
            time.sleep(0.01)
        outcome: list[object] = []
        with MemoryStore.open(pg_url, embedder=FakeEmbedder(dim=384, name="model-two")) as s:

            def run():
                try:
                    outcome.append(s.remember("bob's first", user_id="bob"))
                except BaseException as error:
                    outcome.append(error)

            thread = threading.Thread(target=run)
            thread.start()
            while thread.is_alive() and not someone_waits_for_a_lock(pg_url):
                time.sleep(0.01)
            go.touch()
            thread.join(60)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert isinstance(outcome[0], ModelMismatchError), outcome
    with MemoryStore.open(pg_url, embedder=FakeEmbedder(dim=384, name="model-one")) as s:
        assert s.episodes(user_id="bob").items == []
        assert len(s.episodes(user_id="alice").items) == 1


def test_tenants_made_and_dropped_meanwhile_never_hold_up_another_tenant(pg_url, short_lock_timeout):
    """Making a new tenant's partitions, or dropping an erased tenant's, used to lock every
    tenant's sessions (their session tables' foreign keys pointed at the partitioned parent):
    other tenants' writes and reads, and the new tenants' own first writes, failed busy.

    Each existing tenant has one writer: two writers of one tenant take turns on its lock by
    design, and under a loaded CI machine one of them waited out the test's 1 s timeout."""
    for tenant in ("alice", "bob"):
        with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
            s.remember(f"{tenant}'s first", user_id=tenant, session_id="x")
    busy: list[str] = []
    written: dict[str, list[int]] = {"alice": [], "bob": []}
    stop = threading.Event()

    def works(tenant: str) -> None:
        with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
            n = 0
            while not stop.is_set():
                n += 1
                for what, call in (
                    ("set", lambda: s.session("x", user_id=tenant).set("k", n)),
                    ("read", lambda: s.session("x", user_id=tenant).get_all()),
                    ("remember", lambda: s.remember(f"{tenant} {n}", user_id=tenant, session_id="x")),
                ):
                    try:
                        call()
                        if what == "remember":
                            written[tenant].append(n)
                    except StoreBusyError as error:
                        busy.append(f"{tenant} {what}: {error}")

    workers = [threading.Thread(target=works, args=(tenant,)) for tenant in written]
    for worker in workers:
        worker.start()
    try:
        with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
            for i in range(24):
                try:
                    s.session("y", user_id=f"new-{i}").set("k", i)  # the tenant's partitions are made here
                except StoreBusyError as error:
                    busy.append(f"new-{i} first write: {error}")
            for i in range(0, 24, 2):
                try:
                    s.forget(user_id=f"new-{i}", actor="dpo", missing_ok=True)  # and dropped here
                except StoreBusyError as error:
                    busy.append(f"forget new-{i}: {error}")
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    assert busy == []
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        for tenant, numbers in written.items():
            assert len(s.episodes(user_id=tenant, limit=10_000).items) == 1 + len(numbers)  # no write lost
        assert sorted(t.user_id for t in s.tenants()) == sorted(["alice", "bob", *(f"new-{i}" for i in range(1, 24, 2))])
