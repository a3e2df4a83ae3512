"""The PostgreSQL schema: frozen, 64-bit, the same tables and columns as SQLite, one partition
per tenant that cannot be crossed, and keyword search that tokenizes like the SQLite index."""

import threading

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from store import MemoryStore
from store.schema import episodes_t, sessions_t
from store.tenancy import Tenant

from .conftest import T0
from .pg_support import migrated_engine

pytest.importorskip("psycopg")
from store.backend.postgres import ddl, partitions, tables  # noqa: E402
from store.backend.postgres import engine as pg_engine

ALICE, BOB = Tenant("alice"), Tenant("bob")


def insert(conn, table: str, tenant: Tenant, returning: str | None = None, **values):
    """A row of ``tenant`` in ``table``, by plain SQL: these tests check the DDL, not the ORM types."""
    values = tenant.stamp(values)
    sql = f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join(':' + k for k in values)})"
    return conn.execute(text(sql + (f" RETURNING {returning}" if returning else "")), values)


def migrated(url: str, *tenants: Tenant, dim: int = 8):
    return migrated_engine(url, dim, tenants)


def test_fresh_database_migrates_once_and_records_its_version(pg_url):
    e = pg_engine.create(pg_url)
    with e.begin() as conn:
        assert ddl.migrate(conn, dim=8) == 0
    with e.begin() as conn:
        assert ddl.migrate(conn, dim=384) == ddl.CURRENT_VERSION  # already there: nothing runs
        meta = dict(conn.execute(text("SELECT key, value FROM memlens_meta")).all())
    assert meta == {"schema_version": str(ddl.CURRENT_VERSION), "vector_dim": "8"}


def test_two_processes_opening_a_fresh_database_at_once_both_succeed(pg_url):
    e = pg_engine.create(pg_url, pool_size=4)
    results, errors = [], []

    def open_one():
        try:
            with e.begin() as conn:
                results.append(ddl.migrate(conn, dim=8))
        except Exception as error:  # noqa: BLE001 - the assertion below shows which
            errors.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == [] and sorted(results) == [0, *[ddl.CURRENT_VERSION] * 3]


def test_times_and_keys_hold_64_bit_values(backend, backend_url, quiet_isolation):
    """32-bit INTEGER columns create fine on PostgreSQL and fail on the first real write."""
    if backend == "sqlite":
        MemoryStore.open(backend_url.removeprefix("sqlite:///")).close()
        e = create_engine(backend_url)
    else:
        e = migrated(backend_url, ALICE)
    big = 1_767_225_600_000_000  # 2026-01-01 in microseconds, far past 2**31
    with e.begin() as conn:
        insert(conn, "sessions", ALICE, pk=2**40, session_id="s", created_at=big, updated_at=big)
        insert(conn, "kv_entries", ALICE, session_pk=2**40, key="k", value="1", expires_at=big, updated_at=big)
        insert(
            conn,
            "episodes",
            ALICE,
            id="e1",
            session_id="s",
            occurred_at=big,
            input="i",
            output="o",
            tool_calls="[]",
            metadata="{}",
            content_hash="h",
        )
    with e.connect() as conn:
        assert conn.execute(text("SELECT session_pk, expires_at FROM kv_entries")).one() == (2**40, big)
        assert conn.execute(text("SELECT occurred_at FROM episodes")).scalar() == big


def test_the_store_tables_bind_64_bit_values_on_postgres(pg_url):
    """The ORM tables the store builds its queries from, not only the DDL, hold 64-bit values."""
    e = migrated(pg_url, ALICE)
    with e.begin() as conn:
        conn.execute(sessions_t.insert().values(ALICE.stamp({"session_id": "s", "created_at": T0, "updated_at": T0})))
        assert conn.execute(ALICE.select(sessions_t, sessions_t.c.created_at)).scalar() == T0


def test_every_sqlite_table_and_column_exists_on_postgres(pg_url, db_path):
    MemoryStore.open(db_path).close()
    lite = inspect(create_engine(f"sqlite:///{db_path}"))
    pg = inspect(migrated(pg_url))
    keyword_index_tables = {n for n in lite.get_table_names() if "_fts" in n}  # FTS5 and its shadow tables
    for table in set(lite.get_table_names()) - keyword_index_tables:
        lite_columns = {c["name"] for c in lite.get_columns(table)}
        pg_columns = {c["name"] for c in pg.get_columns(table)}
        assert lite_columns <= pg_columns, table
        assert pg_columns - lite_columns <= {"search", "search_length"}, table


def test_a_row_for_a_tenant_without_partitions_is_refused(pg_url):
    e = migrated(pg_url, ALICE)
    with pytest.raises(IntegrityError, match="no partition"), e.begin() as conn:
        insert(conn, "sessions", BOB, session_id="s", created_at=1, updated_at=1)


def test_each_tenant_has_its_own_partitions_and_rows_land_only_there(pg_url):
    e = migrated(pg_url, ALICE, BOB)
    assert not partitions.ensure(e, ALICE)  # already made: nothing to do
    with e.begin() as conn:
        for t in (ALICE, BOB):
            insert(conn, "sessions", t, session_id="s", created_at=1, updated_at=1)
        alice_part, bob_part = partitions.names(ALICE)["sessions"], partitions.names(BOB)["sessions"]
        assert conn.execute(text(f'SELECT user_id FROM "{alice_part}"')).scalars().all() == ["alice"]
        assert conn.execute(text(f'SELECT user_id FROM "{bob_part}"')).scalars().all() == ["bob"]
        assert set(partitions.attached_tables(conn, ALICE)) == set(partitions.names(ALICE).values())


def test_a_key_cannot_point_into_another_tenants_session(pg_url):
    e = migrated(pg_url, ALICE, BOB)
    with e.begin() as conn:
        bob_session = insert(conn, "sessions", BOB, "pk", session_id="s", created_at=1, updated_at=1).scalar()
    with pytest.raises(IntegrityError, match="foreign key"), e.begin() as conn:
        insert(conn, "kv_entries", ALICE, session_pk=bob_session, key="k", value="1", updated_at=1)


def test_making_a_tenant_does_not_wait_for_other_tenants_readers(pg_url):
    """CREATE TABLE ... PARTITION OF would queue behind this open reader (and every query behind
    it); ATTACH does not."""
    e = migrated(pg_url, ALICE)
    reader = e.connect()
    reader.execute(ALICE.select(episodes_t)).all()  # holds its lock on the parent until rollback
    try:
        fast = pg_engine.create(pg_url, connect_args={"options": "-c lock_timeout=2000"})
        assert partitions.ensure(fast, BOB)
    finally:
        reader.rollback()
        reader.close()


def test_dropping_a_tenant_keeps_rows_written_after_its_erasure(pg_url):
    e = migrated(pg_url, ALICE, BOB)
    with e.begin() as conn:
        insert(conn, "sessions", ALICE, session_id="late", created_at=1, updated_at=1)
    dropped = partitions.drop(e, ALICE)
    assert partitions.names(ALICE)["sessions"] not in dropped and len(dropped) == len(tables.PARTITIONED) - 1
    with e.connect() as conn:
        assert conn.execute(text("SELECT session_id FROM sessions")).scalars().all() == ["late"]
        assert partitions.attached_tables(conn, ALICE) == [partitions.names(ALICE)["sessions"]]
    assert partitions.ensure(e, ALICE)  # the tenant writes again: its partitions come back
    with e.begin() as conn:
        conn.execute(text("DELETE FROM sessions WHERE session_id = 'late'"))
    assert len(partitions.drop(e, ALICE)) == len(tables.PARTITIONED)
    with e.connect() as conn:
        assert partitions.attached_tables(conn, ALICE) == []
        assert len(partitions.attached_tables(conn, BOB)) == len(tables.PARTITIONED)


def test_keyword_search_stems_keeps_stop_words_and_folds_diacritics_like_fts5(pg_url):
    e = migrated(pg_url, ALICE)
    with e.begin() as conn:
        insert(
            conn,
            "episodes",
            ALICE,
            id="e1",
            session_id=None,
            occurred_at=1,
            input="The Café served résumés",
            output="while running",
            tool_calls="[]",
            metadata="{}",
            content_hash="h",
        )
        match = text("SELECT count(*) FROM episodes WHERE search @@ plainto_tsquery('memlens', memlens_fold(:q))")
        for query in ["cafe", "CAFÉ", "resume", "run", "the", "served"]:
            assert conn.execute(match, {"q": query}).scalar() == 1, query
        assert conn.execute(match, {"q": "tea"}).scalar() == 0


def test_deleting_an_item_deletes_its_vector(pg_url):
    e = migrated(pg_url, ALICE)
    with e.begin() as conn:
        pk = insert(
            conn,
            "episodes",
            ALICE,
            "pk",
            id="e1",
            session_id=None,
            occurred_at=1,
            input="a",
            output="b",
            tool_calls="[]",
            metadata="{}",
            content_hash="h",
        ).scalar()
        conn.execute(text("INSERT INTO vectors VALUES ('episode', :pk, 'alice', 'h', '[1,2,3,4,5,6,7,8]')"), {"pk": pk})
        conn.execute(text("UPDATE episodes SET input = 'changed' WHERE pk = :pk"), {"pk": pk})
        assert conn.execute(text("SELECT count(*) FROM vectors")).scalar() == 0  # stale: re-embedded later
        conn.execute(text("INSERT INTO vectors VALUES ('episode', :pk, 'alice', 'h', '[1,2,3,4,5,6,7,8]')"), {"pk": pk})
        conn.execute(text("DELETE FROM episodes"))
        assert conn.execute(text("SELECT count(*) FROM vectors")).scalar() == 0


def test_a_vector_of_the_wrong_width_is_refused(pg_url):
    e = migrated(pg_url, ALICE, dim=8)
    with pytest.raises(DBAPIError, match="expected 8 dimensions"), e.begin() as conn:
        conn.execute(text("INSERT INTO vectors VALUES ('episode', 1, 'alice', 'h', '[1,2,3]')"))


def test_a_version_4_store_moves_its_session_keys_into_each_tenant(pg_url, monkeypatch):
    """Version 5 replaces the session tables' foreign keys into the partitioned sessions table
    (whose triggers sat on every tenant's sessions) by one per tenant partition, for the
    tenants a version 4 store already holds; a session's rows still go with it."""
    with monkeypatch.context() as old:  # memlens as it was at version 4
        old.setattr(ddl, "MIGRATIONS", {4: ddl.MIGRATIONS[4]})
        old.setattr(ddl, "CURRENT_VERSION", 4)
        old.setattr(partitions, "SESSION_CHILDREN", ())
        with MemoryStore.open(pg_url) as s:
            s.session("trip", user_id="alice").append_scratchpad("a note")
    e = pg_engine.create(pg_url)
    with e.begin() as conn:  # a key as version 4 wrote it (today's write fills columns it had not)
        conn.execute(
            text(
                "INSERT INTO kv_entries (session_pk, user_id, key, value, updated_at) "
                "SELECT pk, user_id, 'k', '\"v\"', updated_at FROM sessions WHERE session_id = 'trip'"
            )
        )

    def session_keys(conn) -> set[tuple[str, str]]:
        rows = conn.execute(
            text(
                "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c "
                "WHERE c.contype = 'f' AND c.conname LIKE 'fk_%session%'"
            )
        )
        return {(child.strip('"'), parent.strip('"')) for child, parent in rows}

    alice = partitions.names(ALICE)
    with e.connect() as conn:
        assert ("kv_entries", "sessions") in session_keys(conn)  # version 4: on the parents
    with MemoryStore.open(pg_url) as s:
        with e.connect() as conn:
            keys = session_keys(conn)
            assert conn.execute(text("SELECT value FROM memlens_meta WHERE key = 'schema_version'")).scalar() == str(ddl.CURRENT_VERSION)
        assert keys == {(alice[child], alice["sessions"]) for child in tables.SESSION_CHILDREN}
        s.forget(user_id="alice", session_id="trip", actor="test")
        with e.connect() as conn:
            assert conn.execute(text(f'SELECT count(*) FROM "{alice["kv_entries"]}"')).scalar() == 0
            assert conn.execute(text(f'SELECT count(*) FROM "{alice["scratchpad"]}"')).scalar() == 0
        s.session("trip", user_id="bob").set("k", "v")  # a new tenant gets its own keys too
        with e.connect() as conn:
            bob = partitions.names(BOB)
            assert (bob["kv_entries"], bob["sessions"]) in session_keys(conn)
    e.dispose()


def test_a_version_6_store_splits_dotted_numbers_as_sqlite_does(pg_url, monkeypatch):
    """Version 7 folds "2.14.3" into 2 / 14 / 3 (FTS5's tokens), and computes again the stored
    documents of the rows a version 6 store wrote with the number as one token."""
    with monkeypatch.context() as old:  # memlens as it was at version 6
        old.setattr(ddl, "MIGRATIONS", {n: ddl.MIGRATIONS[n] for n in (4, 5, 6)})
        old.setattr(ddl, "CURRENT_VERSION", 6)
        with MemoryStore.open(pg_url, embedder=None) as s:
            s.remember("payments-api 2.14.3 broke the retry header", "rolled back", user_id="alice")
            s.remember("no numbers here", "none", user_id="alice")
            s.add_fact("payments-api", "runs", "version 3.5", user_id="alice")
    e = pg_engine.create(pg_url)
    phrase = "phraseto_tsquery('memlens', memlens_fold('2 14 3'))"
    length = text("SELECT search_length FROM episodes WHERE input LIKE 'payments%'")
    with e.connect() as conn:
        assert conn.execute(text(f"SELECT count(*) FROM episodes WHERE search @@ {phrase}")).scalar() == 0
        assert conn.execute(length).scalar() == 10  # payments-api, payments, api, 2.14.3, broke, ...
    with MemoryStore.open(pg_url, embedder=None) as s:
        with e.connect() as conn:
            assert conn.execute(text("SELECT value FROM memlens_meta WHERE key = 'schema_version'")).scalar() == str(ddl.CURRENT_VERSION)
            assert conn.execute(text(f"SELECT count(*) FROM episodes WHERE search @@ {phrase}")).scalar() == 1
            assert conn.execute(length).scalar() == 12  # 2, 14 and 3 where 2.14.3 was
            assert conn.execute(text("SELECT count(*) FROM facts WHERE search @@ phraseto_tsquery('memlens', '3 5')")).scalar() == 1
        assert s.recall("2.14.3", user_id="alice", mode="keyword")[0].text.startswith("payments-api 2.14.3")
    e.dispose()
