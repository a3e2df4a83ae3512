"""On PostgreSQL, every committed write moves the change counter of every listening process,
at once; a rolled-back one moves nothing; a lost listening connection counts as a change."""

import time
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text

from store.tenancy import Tenant

pytest.importorskip("psycopg")
from store.backend.postgres.changes import APPLICATION_NAME, ChangeCounter  # noqa: E402

from .pg_support import migrated_engine  # noqa: E402

ALICE = Tenant("alice")


@pytest.fixture
def store_db(pg_url):
    e = migrated_engine(pg_url, 8, [ALICE])
    libpq = pg_url.replace("postgresql+psycopg://", "postgresql://")
    counter = ChangeCounter(libpq)
    yield e, counter, libpq
    counter.close()
    e.dispose()


def write(e, n: int = 1) -> None:
    with e.begin() as conn:
        for i in range(n):
            conn.execute(
                text(
                    "INSERT INTO blocks (user_id, name, content, pinned_order, updated_at) VALUES ('alice', :n, 'x', 0, 1) "
                    "ON CONFLICT (user_id, name) DO UPDATE SET content = excluded.content"
                ),
                {"n": f"b{i}"},
            )


def settled(counter: ChangeCounter, seconds: float = 2.0) -> int:
    """The counter once notifications stop arriving (delivery is asynchronous, if fast)."""
    deadline, last = time.monotonic() + seconds, counter.version()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = counter.version()
        if now == last:
            return now
        last = now
    return last


def moved(counter: ChangeCounter, since: int, hang: float = 30.0) -> int:
    """The counter once it has moved past ``since``. ``hang`` only stops a test that would wait
    forever; a loaded machine may take long, and that is not what these tests judge."""
    deadline = time.monotonic() + hang
    while (now := counter.version()) == since:
        assert time.monotonic() < deadline, f"the counter never moved in {hang:.0f} s"
        time.sleep(0.01)
    return now


def test_a_commit_in_another_connection_moves_the_counter(store_db):
    e, counter, _ = store_db
    before = settled(counter)
    write(e)
    # version() makes a round trip, so a commit that returned before it is already counted.
    assert counter.version() > before


def test_a_rolled_back_write_moves_nothing(store_db):
    e, counter, _ = store_db
    before = settled(counter)
    conn = e.connect()
    with conn.begin() as tx:
        conn.execute(text("INSERT INTO blocks (user_id, name, content, pinned_order, updated_at) VALUES ('alice', 'r', 'x', 0, 1)"))
        tx.rollback()
    conn.close()
    assert settled(counter) == before


def test_reads_move_nothing_and_a_transaction_counts_once(store_db):
    e, counter, _ = store_db
    before = settled(counter)
    with e.begin() as conn:
        conn.execute(text("SELECT * FROM blocks")).all()
    assert settled(counter) == before
    write(e, n=20)  # twenty statements, one transaction: identical notifications fold into one
    moved(counter, before)
    assert settled(counter) == before + 1


def test_losing_the_listening_connection_counts_as_a_change(store_db, pg_server):
    _, counter, libpq = store_db
    before = settled(counter)
    database = urlsplit(libpq).path.lstrip("/")
    with pg_server.admin() as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
            (database, APPLICATION_NAME),
        ).fetchall()
    assert killed == [(True,)]
    moved(counter, before)  # pg_terminate_backend only signals; the connection ends soon after
    e_version = counter.version()
    assert settled(counter) == e_version  # listening again, nothing new
