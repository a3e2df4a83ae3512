"""Database files are untrusted input: a schema or metadata memlens did not write is refused,
and the file is left exactly as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from store import MemoryStore, testing
from store.backend.sqlite.migrations import MIGRATIONS
from store.errors import DamagedStoreError, InvalidMetadataError, StoreOpenError, UntrustedSchemaError


def files(folder: Path) -> dict[str, bytes]:
    """The bytes of the database and of every file beside it, except the -shm index SQLite
    creates when it opens a WAL database, even read-only; a -wal it creates must be empty."""
    found = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.endswith("-shm")}
    return {name: data for name, data in found.items() if not (name.endswith("-wal") and data == b"")}


def run_sql(path: Path, script: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()


@pytest.fixture
def saved_store(tmp_path: Path) -> Path:
    """A closed store with something in every tier that matters here (its WAL folded in)."""
    path = tmp_path / "memory.db"
    with MemoryStore.open(path) as s:
        s.remember("my card number is 4111 1111 1111 1111", "noted", user_id="alice", session_id="s")
        s.add_fact("alice", "pays_with", "visa", user_id="alice")
        s.update_block("persona", "careful", user_id="alice")
        s.session("s", user_id="alice").set("k", 1)
    assert {p.name for p in tmp_path.iterdir()} == {"memory.db"}
    return path


PLANTED = {
    # The attack from the issue: every erased episode is copied somewhere forget does not look.
    "trigger": """
        CREATE TABLE keep (input TEXT);
        CREATE TRIGGER keep_erased AFTER DELETE ON episodes BEGIN INSERT INTO keep VALUES (old.input); END;""",
    "trigger alone": "CREATE TRIGGER keep_erased AFTER DELETE ON episodes BEGIN INSERT INTO blocks "
    "(user_id, name, content, pinned_order, updated_at) VALUES ('x', old.id, old.input, 0, 0); END;",
    "view": "CREATE VIEW everything AS SELECT input FROM episodes;",
    "table": "CREATE TABLE notes (body TEXT);",
    "index": "CREATE INDEX ix_sneaky ON episodes (lower(input));",
    "tampered trigger body": """
        DROP TRIGGER episodes_fts_ad;
        CREATE TRIGGER episodes_fts_ad AFTER DELETE ON episodes BEGIN
            DELETE FROM vectors WHERE kind = 'episode' AND item_pk = old.pk;
        END;""",
    "missing trigger": "DROP TRIGGER episodes_fts_ad;",
    "changed table": "ALTER TABLE blocks ADD COLUMN extra TEXT DEFAULT 'x';",
    "changed index": "DROP INDEX ix_blocks_user_id_pinned_order; CREATE INDEX ix_blocks_user_id_pinned_order ON blocks (name);",
    "table replaced by view": """
        ALTER TABLE audit_log RENAME TO audit_old;
        CREATE VIEW audit_log AS SELECT * FROM audit_old;""",
}


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("name", list(PLANTED))
def test_a_schema_memlens_did_not_make_is_refused_untouched(saved_store, name, read_only):
    run_sql(saved_store, PLANTED[name])
    before = files(saved_store.parent)
    with pytest.raises(UntrustedSchemaError, match="memlens did not|memlens needs") as info:
        MemoryStore.open(saved_store, read_only=read_only)
    assert "was not changed" in str(info.value)
    assert files(saved_store.parent) == before


def test_the_planted_copy_trigger_never_gets_to_run(saved_store):
    """The issue's attack end to end: opening is refused, so no forget can run past the trigger."""
    run_sql(saved_store, PLANTED["trigger"])
    with pytest.raises(UntrustedSchemaError, match="keep_erased"):
        MemoryStore.open(saved_store)
    conn = sqlite3.connect(saved_store)
    assert conn.execute("SELECT count(*) FROM keep").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 1
    conn.close()


def test_an_older_schema_with_a_planted_trigger_is_refused_before_migrating(tmp_path):
    path = tmp_path / "old.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        for step in MIGRATIONS[:3]:
            step(conn)
        conn.exec_driver_sql("INSERT INTO memlens_meta VALUES ('schema_version', '3')")
        conn.exec_driver_sql("CREATE TABLE keep (t TEXT)")
        conn.exec_driver_sql("CREATE TRIGGER k AFTER DELETE ON episodes BEGIN INSERT INTO keep VALUES (old.input); END")
    engine.dispose()
    before = files(tmp_path)
    with pytest.raises(UntrustedSchemaError):
        MemoryStore.open(path)
    assert files(tmp_path) == before


def test_a_store_someone_ran_analyze_on_still_opens(saved_store):
    """ANALYZE (the sqlite3 shell, PRAGMA optimize) adds planner statistics, not code."""
    run_sql(saved_store, "ANALYZE;")
    with MemoryStore.open(saved_store) as s:
        assert s.recall("card", user_id="alice", mode="keyword")


def test_planner_tables_with_other_columns_are_not_waved_through(saved_store):
    run_sql(
        saved_store,
        "ANALYZE; PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = "
        "'CREATE TABLE sqlite_stat1(tbl,idx,stat,extra)' WHERE name = 'sqlite_stat1';",
    )
    with pytest.raises(UntrustedSchemaError, match="sqlite_stat1"):
        MemoryStore.open(saved_store)


BAD_META = {
    "schema version not a number": "UPDATE memlens_meta SET value = 'four' WHERE key = 'schema_version'",
    "schema version with a decimal point": "UPDATE memlens_meta SET value = '4.0' WHERE key = 'schema_version'",
    "schema version zero": "UPDATE memlens_meta SET value = '0' WHERE key = 'schema_version'",
    "schema version negative": "UPDATE memlens_meta SET value = '-1' WHERE key = 'schema_version'",
    "schema version empty": "UPDATE memlens_meta SET value = '' WHERE key = 'schema_version'",
    "schema version a blob": "UPDATE memlens_meta SET value = x'34' WHERE key = 'schema_version'",
    "schema version missing": "DELETE FROM memlens_meta WHERE key = 'schema_version'",
    "embedding dim garbage": "UPDATE memlens_meta SET value = 'abc' WHERE key = 'embedding_dim'",
    "embedding dim zero": "UPDATE memlens_meta SET value = '0' WHERE key = 'embedding_dim'",
    "embedding dim missing": "DELETE FROM memlens_meta WHERE key = 'embedding_dim'",
    "embedding model missing": "DELETE FROM memlens_meta WHERE key = 'embedding_model'",
}


@pytest.mark.parametrize("name", list(BAD_META))
def test_malformed_metadata_gets_a_typed_error_and_the_file_is_untouched(saved_store, name):
    run_sql(saved_store, BAD_META[name])
    before = files(saved_store.parent)
    with pytest.raises(InvalidMetadataError, match="memlens_meta") as info:
        MemoryStore.open(saved_store)
    assert isinstance(info.value, (DamagedStoreError, StoreOpenError))
    assert files(saved_store.parent) == before


def test_schema_version_huge_but_well_formed_is_too_new_not_a_crash(saved_store):
    from store.errors import SchemaTooNewError

    run_sql(saved_store, "UPDATE memlens_meta SET value = '99999999999999999999999' WHERE key = 'schema_version'")
    with pytest.raises(SchemaTooNewError):
        MemoryStore.open(saved_store)


def test_connections_distrust_the_schema_except_in_memlens_writes(saved_store):
    """trusted_schema is off for everything but memlens's own write transactions, whose FTS5
    triggers need it; the pages of a crafted file are size-checked and never memory-mapped."""
    with MemoryStore.open(saved_store) as s:
        with testing.backend(s).read() as conn:
            assert conn.exec_driver_sql("PRAGMA trusted_schema").scalar() == 0
            assert conn.exec_driver_sql("PRAGMA cell_size_check").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA mmap_size").scalar() == 0
        with testing.backend(s).write() as conn:
            assert conn.exec_driver_sql("PRAGMA trusted_schema").scalar() == 1
        with testing.backend(s).read() as conn:
            assert conn.exec_driver_sql("PRAGMA trusted_schema").scalar() == 0
        s.remember("still writes through the keyword index", user_id="alice")
        assert s.recall("keyword", user_id="alice", mode="keyword")[0].text.startswith("still writes")
