"""On PostgreSQL, erased content leaves the data directory: a byte scan of every file the
server keeps (tables, indexes, statistics, WAL, logs) finds none of it after the scrub."""

import struct
import threading
import time
import uuid
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text

from store.tenancy import Tenant

pytest.importorskip("psycopg")
import psycopg  # noqa: E402

from store.backend.postgres import ddl, partitions, scrub, tables  # noqa: E402
from store.backend.postgres import engine as pg_engine

from .pg_support import data_directory_bytes, migrated_engine  # noqa: E402

ALICE, BOB = Tenant("alice"), Tenant("bob")
DIM = 8
TOUCHED = ["kv_entries", "task_states", "scratchpad", "checkpoints", "facts", "episodes", "sessions", "blocks", "vectors"]


def secret() -> str:
    return "zq" + uuid.uuid4().hex[:12]  # one token, unmistakable in a byte scan


def vector_of(seed: int) -> list[float]:
    return [seed + i / 7 + 0.123 for i in range(DIM)]


def vector_bytes(values: list[float]) -> bytes:
    return struct.pack(f"<{DIM}f", *values)  # float4 as pgvector keeps it in pages (this machine: little-endian)


def plant(conn, tenant: Tenant, seed: int, rows: int = 30) -> list[bytes]:
    """Every tier of ``tenant`` holding unique tokens, repeated so that ANALYZE keeps them as
    most common values; returns what a byte scan should look for."""
    tokens = [secret() for _ in range(7)]
    k = tenant.key
    session = conn.execute(
        text("INSERT INTO sessions (user_id, session_id, created_at, updated_at) VALUES (:u, 's1', 1, 1) RETURNING pk"), {"u": k}
    ).scalar()
    for i in range(rows):
        pk = conn.execute(
            text(
                "INSERT INTO episodes (id, user_id, session_id, occurred_at, input, output, tool_calls, metadata, content_hash) "
                "VALUES (:id, :u, 's1', :t, :i, :o, '[]', :m, 'h') RETURNING pk"
            ),
            {"id": f"e{i}", "u": k, "t": i, "i": f"{tokens[0]} question", "o": f"{tokens[1]} answer", "m": f'{{"m": "{tokens[2]}"}}'},
        ).scalar()
        conn.execute(text("INSERT INTO vectors VALUES ('episode', :pk, :u, 'h', :v)"), {"pk": pk, "u": k, "v": str(vector_of(seed))})
    conn.execute(
        text("INSERT INTO blocks (user_id, name, content, pinned_order, updated_at) VALUES (:u, 'persona', :c, 0, 1)"),
        {"u": k, "c": f"{tokens[3]} persona"},
    )
    conn.execute(
        text(
            "INSERT INTO facts (id, user_id, subject, predicate, object, confidence, valid_from, recorded_at, source_episode_ids) "
            "VALUES ('f1', :u, :s, 'likes', 'tea', 1.0, 1, 1, '[\"e0\"]')"
        ),
        {"u": k, "s": tokens[4]},
    )
    conn.execute(
        text("INSERT INTO kv_entries (session_pk, user_id, key, value, updated_at) VALUES (:s, :u, 'k', :v, 1)"),
        {"s": session, "u": k, "v": f'"{tokens[5]}"'},
    )
    conn.execute(
        text("INSERT INTO scratchpad (session_pk, user_id, created_at, content) VALUES (:s, :u, 1, :c)"),
        {"s": session, "u": k, "c": f"{tokens[6]} note"},
    )
    conn.execute(text("INSERT INTO task_states VALUES (:s, :u, '{}', 1)"), {"s": session, "u": k})
    conn.execute(
        text("INSERT INTO checkpoints (id, session_pk, user_id, description, created_at, snapshot) VALUES ('c1', :s, :u, 'cp', 1, :snap)"),
        {"s": session, "u": k, "snap": f'{{"scratchpad": ["{tokens[6]} note"]}}'},
    )
    return [t.encode() for t in tokens] + [vector_bytes(vector_of(seed))]


def delete_tenant_rows(conn, tenant: Tenant) -> None:
    """What the backend's forget does in its one transaction, children before parents."""
    for table in TOUCHED:
        conn.execute(text(f"DELETE FROM {table} WHERE user_id = :u"), {"u": tenant.key})


@pytest.fixture
def planted(pg_server, pg_url):
    if pg_server.data_dir is None:
        pytest.skip("a byte scan needs the embedded server's data directory")
    e = migrated_engine(pg_url, DIM, (ALICE, BOB))
    with e.begin() as conn:
        mine, theirs = plant(conn, ALICE, 1), plant(conn, BOB, 2)
    with e.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        # The way it really breaks: autovacuum analyses tables on its own, copying values into
        # pg_statistic; an ANALYZE of a parent samples every tenant. Do both now, then flush.
        conn.exec_driver_sql("ANALYZE")
        for parent in tables.PARTITIONED:
            conn.exec_driver_sql(f"ANALYZE {parent}")
        conn.exec_driver_sql("CHECKPOINT")
    raw = data_directory_bytes(pg_server, e.url.database)
    assert all(m in raw for m in mine + theirs)  # the scan sees what it looks for
    yield e, mine, theirs
    e.dispose()


def test_delete_and_scrub_leave_no_byte_of_the_tenant_in_the_data_directory(pg_server, planted):
    e, mine, theirs = planted
    with e.begin() as conn:
        delete_tenant_rows(conn, ALICE)
    result = scrub.scrub(e, ALICE, TOUCHED)
    assert result.done and result.reason is None
    raw = data_directory_bytes(pg_server, e.url.database)
    assert [m for m in mine if m in raw] == []
    assert all(m in raw for m in theirs)


def test_dropping_the_tenants_partitions_then_scrubbing_leaves_nothing(pg_server, planted):
    e, mine, theirs = planted
    with e.begin() as conn:
        delete_tenant_rows(conn, ALICE)
    assert len(partitions.drop(e, ALICE)) == len(tables.PARTITIONED)
    assert scrub.scrub(e, ALICE, TOUCHED).done
    raw = data_directory_bytes(pg_server, e.url.database)
    assert [m for m in mine if m in raw] == []
    assert all(m in raw for m in theirs)


def test_without_the_scrub_the_erased_bytes_stay(pg_server, planted):
    """Why the scrub exists: DELETE, a plain VACUUM and a CHECKPOINT leave erased content in
    table pages, the keyword index, statistics and the WAL."""
    e, mine, _ = planted
    with e.begin() as conn:
        delete_tenant_rows(conn, ALICE)
    with e.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM")
        conn.exec_driver_sql("CHECKPOINT")
    raw = data_directory_bytes(pg_server, e.url.database)
    assert all(m in raw for m in mine)


def test_scrubbing_one_tenant_does_not_make_another_tenant_wait(pg_server, pg_url):
    """The rewrite locks only the erased tenant's partitions. Bob's queries run as prepared
    statements, the case where a generic plan would lock every partition."""
    if pg_server.data_dir is None:
        pytest.skip("times a rewrite on the embedded server; a shared server's load would decide it")
    e = migrated_engine(pg_url, DIM, (ALICE, BOB))
    with e.begin() as conn:
        for tenant, rows in ((ALICE, 8_000), (BOB, 500)):
            conn.execute(
                text(
                    "INSERT INTO episodes (id, user_id, occurred_at, input, output, tool_calls, metadata, content_hash) "
                    "SELECT 'e' || g, :u, g, 'question ' || g || repeat(' padding', 40), 'answer', '[]', '{}', 'h' "
                    "FROM generate_series(1, :n) g"
                ),
                {"u": tenant.key, "n": rows},
            )
        conn.execute(text("DELETE FROM episodes WHERE user_id = 'alice' AND occurred_at <= 4000"))
    # Lock waits, not wall time: on a loaded machine a query can take 100 ms of CPU scheduling
    # alone, but it only ever waits on a lock if the rewrite locked bob's partition. The rewrite
    # holds its locks for the whole scrub (0.6-2.7 s here), so a 100 ms lock timeout catches it.
    done, blocked, stop = [], [], threading.Event()

    def bob_reads():
        with e.connect() as conn:
            raw = conn.connection.driver_connection
            raw.autocommit = True
            raw.execute("SET lock_timeout = '100ms'")
            while not stop.is_set():
                try:
                    raw.execute(
                        "SELECT count(*) FROM episodes WHERE user_id = %s AND occurred_at > %s", ("bob", 5), prepare=True
                    ).fetchone()
                    done.append(time.perf_counter())
                except psycopg.errors.LockNotAvailable as error:
                    blocked.append(str(error))
                time.sleep(0.002)

    reader = threading.Thread(target=bob_reads)
    reader.start()
    time.sleep(0.2)
    started = time.perf_counter()
    # Whether it may promise the bytes are gone depends on the server (wal_recycle); the
    # rewrite of alice's partitions runs either way, and that is what must not stall bob.
    assert partitions.names(ALICE)["episodes"] in scrub.scrub(e, ALICE, ["episodes", "vectors"]).rewritten
    finished = time.perf_counter()
    stop.set()
    reader.join()
    # Target from the issue: no other tenant blocked for more than 100 ms. With generic plans
    # bob waited as long as the rewrite (756 ms), which this lock timeout turns into an error.
    assert blocked == []
    assert any(started < t < finished for t in done), "bob ran no query while the scrub ran"


def test_a_server_that_recycles_wal_gets_no_promise(pg_server, planted):
    """PostgreSQL's default renames old WAL segments for reuse, old records inside: the scrub
    runs but says the bytes may remain."""
    e, mine, _ = planted
    with pg_server.admin() as conn:
        conn.execute("ALTER SYSTEM SET wal_recycle = on")
        conn.execute("SELECT pg_reload_conf()")
    try:
        with e.begin() as conn:
            delete_tenant_rows(conn, ALICE)
        result = scrub.scrub(e, ALICE, TOUCHED)
    finally:
        with pg_server.admin() as conn:
            conn.execute("ALTER SYSTEM SET wal_recycle = off")
            conn.execute("SELECT pg_reload_conf()")
    assert not result.done and "wal_recycle" in result.reason


def test_a_role_that_may_not_maintain_the_statistics_gets_no_promise(pg_server, pg_url):
    """VACUUM without the right to a table warns and skips it instead of failing: an unprivileged
    role's scrub must say so, not report the statistics' bytes gone."""
    with pg_server.admin() as admin:
        admin.execute("DO $$ BEGIN CREATE ROLE memlens_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        admin.execute("GRANT pg_checkpoint TO memlens_app")
    database = urlsplit(pg_url).path.lstrip("/")
    with pg_server.admin() as admin:
        admin.execute(f'ALTER DATABASE "{database}" OWNER TO memlens_app')
    owner = pg_engine.create(pg_url)
    with owner.begin() as conn:
        conn.exec_driver_sql("ALTER SCHEMA public OWNER TO memlens_app")
    owner.dispose()
    app = pg_engine.create(pg_url, connect_args={"options": "-c role=memlens_app"})
    with app.begin() as conn:
        ddl.migrate(conn, dim=DIM)
    partitions.ensure(app, ALICE)
    with app.begin() as conn:
        plant(conn, ALICE, 1, rows=3)
        delete_tenant_rows(conn, ALICE)
    result = scrub.scrub(app, ALICE, TOUCHED)
    app.dispose()
    # Without the check, VACUUM skipped pg_statistic with a warning and the scrub went on (it then
    # stopped at pg_switch_wal, which this role may not run either, and named that instead).
    assert not result.done and "pg_statistic" in result.reason and result.rewritten == ()
