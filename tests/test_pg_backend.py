"""What opening and using a store means on a server as on a file: the same typed errors for the
same mistakes, read-only opens that refuse writes, and caches that see another store object's
write at once."""

from __future__ import annotations

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import ForeignDatabaseError, ModelMismatchError, ReadOnlyStoreError, StoreNotFoundError


def test_a_read_only_open_refuses_every_write_with_the_same_error(backend_url):
    MemoryStore.open(backend_url, embedder=FakeEmbedder()).close()
    with MemoryStore.open(backend_url, read_only=True, embedder=FakeEmbedder()) as s:
        with pytest.raises(ReadOnlyStoreError):
            s.remember("hello", user_id="u")
        with pytest.raises(ReadOnlyStoreError):
            s.session("s", user_id="u").set("k", "v")
        assert s.tenants() == []


def test_a_second_store_object_sees_a_new_vector_at_once(backend_url):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as reader, MemoryStore.open(backend_url, embedder=FakeEmbedder()) as writer:
        writer.remember("tea in the morning", user_id="u")
        assert [h.text for h in reader.recall("tea in the morning", user_id="u", mode="vector")] == ["tea in the morning"]  # cache warm
        writer.remember("zebra crossings at noon", user_id="u")
        hits = reader.recall("zebra crossings at noon", user_id="u", mode="vector", limit=1)
        assert [h.text for h in hits] == ["zebra crossings at noon"]


def test_create_false_on_an_empty_location_creates_nothing(backend_url):
    with pytest.raises(StoreNotFoundError):
        MemoryStore.open(backend_url, create=False)
    with pytest.raises(StoreNotFoundError):
        MemoryStore.open(backend_url, read_only=True)


def test_a_database_of_another_application_is_refused_untouched(pg_url):
    import psycopg

    libpq = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(ForeignDatabaseError, match="invoices"):
        MemoryStore.open(pg_url)
    with psycopg.connect(libpq, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    assert tables == ["invoices"]


def test_an_embedder_of_another_width_is_refused_on_open(pg_url):
    MemoryStore.open(pg_url, embedder=FakeEmbedder(dim=32)).close()
    with pytest.raises(ModelMismatchError, match="32 dimensions"):
        MemoryStore.open(pg_url, embedder=FakeEmbedder(dim=48))
    with MemoryStore.open(pg_url, embedder=FakeEmbedder(dim=32)) as s:
        s.remember("fits", user_id="u")


def test_a_writer_kept_waiting_gets_store_busy_and_nothing_is_written(pg_url, monkeypatch):
    import psycopg

    from store.backend.postgres import errors as pg_errors
    from store.backend.postgres import locks
    from store.errors import StoreBusyError

    monkeypatch.setattr(pg_errors, "LOCK_TIMEOUT_S", 1)
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        s.remember("first", user_id="u")
        with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock(%s)", (locks.STORE_LOCK,))  # a store-wide writer, mid-transaction
            with pytest.raises(StoreBusyError, match="nothing was changed"):
                s.remember("second", user_id="u")
        assert [e.input for e in s.episodes(user_id="u").items] == ["first"]
        s.remember("third", user_id="u")
