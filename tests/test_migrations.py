"""Migrations are frozen DDL: what they build matches the ORM tables, and an older file
migrates with its rows, keyword index and vectors intact."""

import sqlite3

from sqlalchemy import create_engine, inspect

from store import MemoryStore
from store.backend.sqlite.migrations import CURRENT_VERSION, MIGRATIONS, split_statements
from store.schema import Base

from .conftest import T0


def _shape(url: str) -> dict[str, tuple]:
    inspector = inspect(create_engine(url))
    shape = {}
    for table in inspector.get_table_names():
        if "_fts" in table:
            continue
        columns = tuple(sorted((c["name"], str(c["type"]).split("(")[0], c["nullable"]) for c in inspector.get_columns(table)))
        uniques = tuple(sorted(tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)))
        indexes = tuple(sorted(tuple(i["column_names"]) for i in inspector.get_indexes(table)))
        shape[table] = (columns, uniques, indexes)
    return shape


def test_migrations_build_what_the_orm_tables_describe(tmp_path):
    migrated = tmp_path / "migrated.db"
    MemoryStore.open(migrated, embedder=None).close()
    orm = tmp_path / "orm.db"
    engine = create_engine(f"sqlite:///{orm}")
    Base.metadata.create_all(engine)
    engine.dispose()
    assert _shape(f"sqlite:///{migrated}") == _shape(f"sqlite:///{orm}")


def _version_3_store(path) -> None:
    """A store exactly as memlens 0.1 wrote it: migrations 1-3, then rows written by hand."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        for step in MIGRATIONS[:3]:
            step(conn)
        conn.exec_driver_sql("INSERT INTO memlens_meta VALUES ('schema_version', '3')")
    engine.dispose()


def test_a_version_3_store_migrates_with_its_rows_and_keyword_indexes(tmp_path):
    # Rows are written by hand, as 0.1 wrote them; the migration keeps row keys, so the
    # keyword indexes still point at the right rows.
    path2 = tmp_path / "old.db"
    _version_3_store(path2)
    raw = sqlite3.connect(path2)
    raw.execute("INSERT INTO tenants VALUES ('alice', 0, 0)")
    raw.execute(
        "INSERT INTO episodes (pk, id, user_id, session_id, occurred_at, input, output, tool_calls, metadata, content_hash) "
        "VALUES (7, 'e1', 'alice', NULL, 0, 'the zebra crossing', '', '[]', '{}', 'h')"
    )
    raw.execute("INSERT INTO facts VALUES (3, 'f1', 'alice', 'alice', 'likes', 'zebras', 1.0, 0, NULL, 0, '[]')")
    raw.commit()
    raw.close()
    with MemoryStore.open(path2) as s:
        assert s.get_episode("e1", user_id="alice").input == "the zebra crossing"
        assert [h.id for h in s.recall("zebra", user_id="alice", mode="keyword")] == ["e1"]
        assert [h.id for h in s.recall_facts("zebras", user_id="alice", mode="keyword")] == ["f1"]
        # Ids are per tenant now: bob may use alice's ids.
        s.remember_many([{"id": "e1", "input": "bob's e1", "occurred_at": T0}], user_id="bob")
        assert s.get_episode("e1", user_id="bob").input == "bob's e1"
    conn = sqlite3.connect(path2)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO episodes_fts(episodes_fts) VALUES ('integrity-check')")
    conn.close()


def test_split_keeps_trigger_bodies_whole():
    statements = split_statements("CREATE TABLE a (x);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\n  SELECT 2;\nEND;\n")
    assert len(statements) == 2 and statements[1].endswith("END;")
