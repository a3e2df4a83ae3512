"""Listing tenants with their counts on PostgreSQL: a statement locks every partition it reads
until its transaction ends, and the server's lock table is shared and small at default settings
(1,000 tenants listed in one transaction failed with "out of shared memory"). The listing reads
a group of tenants per transaction, so the locks it holds at once stay the same however many
tenants the store has, and what it returns is what one snapshot would have returned."""

from __future__ import annotations

import io
import time

import pytest
from sqlalchemy import Engine, event

from store import MemoryStore
from store.backend.postgres.backend import PostgresBackend
from store.embedding import FakeEmbedder


def _fill(s: MemoryStore, first: int, count: int) -> None:
    for i in range(first, first + count):
        user = f"user-{i:03d}"
        for n in range(i % 3 + 1):  # tenants of different sizes, so counts tell them apart
            s.remember(f"memory {n} of {user}", user_id=user, session_id=f"s{n}")
        if i % 2:
            s.add_fact("user", "number", str(i), user_id=user)
        if i % 4 == 0:
            s.session("s0", user_id=user).set("k", "v")


@pytest.fixture
def pg_store(pg_url):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        yield s


def test_a_listing_read_in_groups_is_the_listing_read_at_once(pg_store, monkeypatch):
    _fill(pg_store, 0, 7)
    pg_store.forget(user_id="user-005", actor="test")
    at_once = pg_store.tenants()
    asked = ["user-006", "user-001", "nobody", "user-001", "user-004"]
    asked_at_once = pg_store.tenants(user_ids=asked)
    stats_at_once = pg_store.stats()
    monkeypatch.setattr(PostgresBackend, "tenants_per_read", 2)
    assert pg_store.tenants() == at_once
    assert [t.user_id for t in at_once] == sorted((f"user-{i:03d}" for i in range(7) if i != 5), reverse=True)
    assert pg_store.tenants(user_ids=asked) == asked_at_once
    assert [t.user_id for t in asked_at_once] == ["user-006", "user-004", "user-001"]
    assert pg_store.stats() == stats_at_once
    assert stats_at_once.tenants == 6 and stats_at_once.counts.episodes == sum(i % 3 + 1 for i in range(7) if i != 5)


def _most_locks_held(s: MemoryStore, call) -> int:
    """The most locks any connection of this process held while ``call`` ran, read after each statement."""
    held = [0]

    def count(conn, cursor, statement, parameters, context, executemany):
        if conn.dialect.name == "postgresql":
            row = cursor.connection.execute("SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()").fetchone()
            held[0] = max(held[0], row[0])

    event.listen(Engine, "after_cursor_execute", count)
    try:
        call()
    finally:
        event.remove(Engine, "after_cursor_execute", count)
    return held[0]


def test_the_locks_a_listing_holds_do_not_grow_with_the_tenants(pg_store, monkeypatch):
    monkeypatch.setattr(PostgresBackend, "tenants_per_read", 3)
    _fill(pg_store, 0, 6)
    grouped_6 = _most_locks_held(pg_store, pg_store.tenants)
    _fill(pg_store, 6, 6)
    grouped_12 = _most_locks_held(pg_store, pg_store.tenants)
    assert len(pg_store.tenants()) == 12
    monkeypatch.setattr(PostgresBackend, "tenants_per_read", None)
    at_once_12 = _most_locks_held(pg_store, pg_store.tenants)
    # Held in one transaction, every tenant's partitions add up: twelve tenants' many times three's.
    assert at_once_12 > 3 * grouped_12, (at_once_12, grouped_12)
    # In groups, twice the tenants hold no more at once (the listing of tenant rows adds none per tenant).
    assert grouped_12 == grouped_6, (grouped_6, grouped_12)


def test_erasure_purging_and_exporting_hold_no_more_locks_for_more_tenants(pg_store, monkeypatch):
    """A forget (its scrub looks for expired keys in every tenant), a purge and an export of
    every tenant read every tenant's rows: in groups, like the listing."""
    monkeypatch.setattr(PostgresBackend, "tenants_per_read", 3)

    def most_locks(round: str) -> dict[str, int]:
        pg_store.remember("to be erased", user_id=f"gone-{round}")
        pg_store.session("s0", user_id="user-000").set(f"brief-{round}", "v", ttl=0.001)
        time.sleep(0.01)
        return {
            "forget": _most_locks_held(pg_store, lambda: pg_store.forget(user_id=f"gone-{round}", actor="test")),
            "purge": _most_locks_held(pg_store, pg_store.purge_expired),
            "export": _most_locks_held(pg_store, lambda: pg_store.export_to(io.StringIO())),
        }

    _fill(pg_store, 0, 6)
    with_6 = most_locks("6")
    for i in range(6, 36):  # enough tenants that reading all their keys at once outgrows a forget's own locks
        pg_store.session("s0", user_id=f"user-{i:03d}").set("k", "v")
    assert most_locks("36") == with_6
    assert pg_store.session("s0", user_id="user-000").get("brief-36") is None


def test_an_export_of_every_tenant_read_in_groups_is_the_export_read_at_once(pg_store, monkeypatch):
    _fill(pg_store, 0, 7)

    def exported() -> tuple[list[str], list]:
        """The records (but the audit entries: each export adds its own) and the tenants named."""
        sink = io.StringIO()
        manifest = pg_store.export_to(sink, include_embeddings=True)
        lines = sink.getvalue().splitlines()[:-1]
        return [line for line in lines if '"type":"audit"' not in line], manifest["tenants"]

    at_once = exported()
    monkeypatch.setattr(PostgresBackend, "tenants_per_read", 2)
    assert exported() == at_once
    assert len(at_once[0]) > 7 * 3
    assert sum(1 for e in pg_store.audit_log(all_tenants=True) if e.action == "export") == 2 * 7
