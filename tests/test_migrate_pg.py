"""SQLite -> PostgreSQL -> SQLite: what arrives back equals what left, checked through the public
API (not the migration's own digests), with the vectors copied as bytes both ways."""

from __future__ import annotations

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import MigrationTargetError

from .migrate_support import assert_same, build


def test_sqlite_to_postgres_and_back_loses_nothing(tmp_path, pg_url, clock):
    with MemoryStore.open(tmp_path / "source.db", embedder=FakeEmbedder()) as source:
        build(source, clock)
        with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as server:
            report = server.migrate_from(source)
            assert report.vectors == "copied" and "erased" in report.tenants
            assert report.destination.startswith("postgresql://") and report.source.endswith("source.db")
            assert_same(source, server)
            with MemoryStore.open(tmp_path / "back.db", embedder=FakeEmbedder()) as back:
                back.migrate_from(server)
                assert_same(source, back)
                assert_same(server, back)
            with pytest.raises(MigrationTargetError):
                server.migrate_from(source)


def test_a_postgres_source_is_copied_a_group_of_tenants_at_a_time_from_one_snapshot(tmp_path, pg_url, clock, monkeypatch):
    """Each group of tenants is read in a transaction of its own (a PostgreSQL source locks each
    tenant's partitions until its transaction ends), yet all of them see the moment the copy
    began: a write to a later group's tenant meanwhile is not copied, as with one transaction."""
    from store.backend.postgres.backend import PostgresBackend

    monkeypatch.setattr(PostgresBackend, "tenants_per_read", 2)
    with MemoryStore.open(tmp_path / "built.db", embedder=FakeEmbedder()) as built:
        build(built, clock)
        for i in range(5):
            built.remember(f"memory of user {i}", user_id=f"user-{i}")
        with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as server:
            server.migrate_from(built)
            with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as writer:
                written = []

                def write_to_the_last_tenant(done: int, total: int) -> None:
                    if done == 1:
                        written.append(writer.remember("written during the copy", user_id="user-4"))

                with MemoryStore.open(tmp_path / "copy.db", embedder=FakeEmbedder()) as copy:
                    report = copy.migrate_from(server, progress=write_to_the_last_tenant)
                    assert written and len(report.tenants) > 2 * 2  # more groups than one
                    assert "written during the copy" not in [e.input for e in copy.episodes(user_id="user-4").items]
                    assert [e.input for e in copy.episodes(user_id="user-4").items] == ["memory of user 4"]
                    assert_same(built, copy)
