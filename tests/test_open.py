"""Opening files: persistence, migration, and every kind of file that is not ours."""

import sqlite3

import pytest

from store import MemoryStore, testing
from store.backend.sqlite.migrations import CURRENT_VERSION, MIGRATIONS
from store.errors import (
    DamagedStoreError,
    ForeignDatabaseError,
    NotADatabaseError,
    ReadOnlyStoreError,
    SchemaTooNewError,
    StoreOpenError,
)

from .conftest import dump


def test_everything_persists_across_reopen(db_path):
    with MemoryStore.open(db_path) as s:
        s.update_block("b", "content", user_id="u")
        e = s.remember("q", "a", user_id="u", session_id="s")
        s.add_fact("x", "y", "z", user_id="u")
        mem = s.session("s", user_id="u")
        mem.set("k", [1])
        cp = mem.create_checkpoint("c")
    with MemoryStore.open(f"sqlite:///{db_path}") as s:
        assert s.working(user_id="u")[0].content == "content"
        assert s.get_episode(e.id, user_id="u") == e
        assert s.facts(user_id="u")[0].object == "z"
        assert s.session("s", user_id="u").get("k") == [1]
        assert [c.id for c in s.session("s", user_id="u").list_checkpoints()] == [cp]


@pytest.mark.sqlite_only(reason="SQLite's PRAGMAs")
def test_pragmas_are_set(store):
    with testing.backend(store).raw() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0


def test_read_only_store_reads_and_refuses_writes(db_path):
    with MemoryStore.open(db_path) as s:
        s.update_block("b", "v", user_id="u")
    before = dump(db_path)
    with MemoryStore.open(db_path, read_only=True) as ro:
        assert ro.working(user_id="u")[0].content == "v"
        with pytest.raises(ReadOnlyStoreError):
            ro.update_block("b", "w", user_id="u")
    assert dump(db_path) == before


def test_read_only_of_missing_file_is_refused(tmp_path):
    with pytest.raises(StoreOpenError):
        MemoryStore.open(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()


def test_a_text_file_is_not_a_database(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n" * 100)
    with pytest.raises(NotADatabaseError):
        MemoryStore.open(path)
    assert path.read_text() == "just some notes\n" * 100


def test_another_applications_database_is_left_alone(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (9.5)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ForeignDatabaseError, match="invoices"):
        MemoryStore.open(path)
    assert path.read_bytes() == before


def test_a_newer_schema_is_refused_and_untouched(db_path):
    with MemoryStore.open(db_path) as s:
        s.update_block("b", "v", user_id="u")
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE memlens_meta SET value = ? WHERE key = 'schema_version'", (str(CURRENT_VERSION + 1),))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(SchemaTooNewError, match="upgrade memlens"):
        MemoryStore.open(db_path)
    assert db_path.read_bytes() == before


def test_an_older_schema_is_migrated(db_path):
    """A store made by the first migration alone opens at the current version with its data,
    which joins the indexes that later migrations add."""
    from sqlalchemy import create_engine

    import store.backend.sqlite.migrations as migrations

    engine = create_engine(f"sqlite:///{db_path}")
    with engine.begin() as c:
        MIGRATIONS[0](c)
        c.exec_driver_sql("INSERT INTO memlens_meta (key, value) VALUES ('schema_version', '1')")
        c.exec_driver_sql("INSERT INTO blocks (user_id, name, content, pinned_order, updated_at) VALUES ('u', 'b', 'old', 0, 0)")
        c.exec_driver_sql(
            "INSERT INTO episodes (id, user_id, occurred_at, input, output, tool_calls, metadata, content_hash) "
            "VALUES ('e1', 'u', 0, 'zebra crossing', '', '[]', '{}', 'h')"
        )
    engine.dispose()
    assert CURRENT_VERSION > 1
    with MemoryStore.open(db_path) as s:
        assert s.working(user_id="u")[0].content == "old"
        assert s.stats().schema_version == migrations.CURRENT_VERSION
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == CURRENT_VERSION
    assert conn.execute("SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH 'zebra'").fetchall() == [(1,)]
    conn.close()


def test_a_damaged_database_gives_a_clear_error(db_path):
    with MemoryStore.open(db_path) as s:
        s.remember_many([{"input": f"episode number {i} " * 20} for i in range(400)], user_id="u")
        with testing.backend(s).raw() as raw:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db_path.read_bytes())
    page = 4096
    for offset in range(3 * page, len(data) - page, page):  # scribble over every page header but the schema's
        data[offset : offset + 16] = b"\xff" * 16
    db_path.write_bytes(bytes(data))
    with pytest.raises(DamagedStoreError, match="damaged"), MemoryStore.open(db_path) as s:
        s.episodes(user_id="u", limit=500)
        s.tenants()


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(StoreOpenError):
        MemoryStore.open(tmp_path)


def test_urls_of_engines_memlens_lacks_are_refused(tmp_path):
    with pytest.raises(StoreOpenError, match="SQLite files .* or PostgreSQL"):
        MemoryStore.open("mysql://localhost/db")


def test_a_postgres_url_without_the_server_is_a_typed_error_naming_it():
    pytest.importorskip("psycopg")
    with pytest.raises(StoreOpenError, match="cannot reach the PostgreSQL server of postgresql://memlens@127.0.0.1:9/db") as caught:
        MemoryStore.open("postgresql://memlens:hunter2@127.0.0.1:9/db")
    assert "hunter2" not in str(caught.value)
