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
