"""A LangGraph ``PostgresStore`` database, written with LangGraph's own store on the test server,
shown where it lives (read-only and live), imported, never changed, its password never shown."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.store.postgres", reason="langgraph-checkpoint-postgres comes with the compat extra")

from langgraph.store.postgres import PostgresStore  # noqa: E402

import store  # noqa: E402
from store.compat.langgraph_postgres import import_langgraph_postgres, read_langgraph_postgres  # noqa: E402
from store.errors import ReadOnlyStoreError, SourceNotFoundError, SourceSchemaTooNewError, UnrecognizedSourceError  # noqa: E402
from store.memory import MemoryStore  # noqa: E402
from tests.cli_process import run_cli  # noqa: E402

SECRET = "s3cret-langgraph-pw"


def libpq(url: str) -> str:
    return "postgresql://" + url.split("://", 1)[1]


def rows(url: str) -> list[tuple]:
    """Every item with its row version (xmin): a write of any kind changes them."""
    import psycopg

    with psycopg.connect(libpq(url)) as conn:
        return conn.execute(
            "SELECT prefix, key, value::text, created_at, updated_at, expires_at, xmin::text FROM store ORDER BY prefix, key"
        ).fetchall()


@pytest.fixture
def agent_db(pg_url) -> str:
    """LangGraph's memory of two users (one item with a time to live), in its own database."""
    with PostgresStore.from_conn_string(libpq(pg_url)) as lg:
        lg.setup()
        lg.put(("memories", "alice"), "food", {"text": "loves pizza in Lisbon"})
        lg.put(("memories", "alice"), "pet", {"text": "a dog called Rex"})
        lg.put(("memories", "bob"), "food", {"text": "prefers sushi"}, ttl=60)
        lg.put(("shared",), "motd", {"text": "hello"})
    return pg_url


def with_password(url: str) -> str:
    # The test server trusts local connections: a password in the query is accepted and unused.
    return url + ("&" if "?" in url else "?") + f"password={SECRET}"


def test_a_postgres_store_is_imported_as_its_sqlite_store_is_and_never_changed(agent_db, tmp_path):
    before = rows(agent_db)
    source = read_langgraph_postgres(agent_db)
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as memlens:
        report = import_langgraph_postgres(memlens, source)
        assert report.tiers["kv_entries"].written == 4
        assert set(memlens.tenant_names()) == {"alice", "bob", None}
        alice = memlens.session("langgraph:memories.alice", user_id="alice")
        assert alice.get("food") == {"text": "loves pizza in Lisbon"}
        entry = memlens.session("langgraph:memories.bob", user_id="bob").entry("food")
        assert entry.ttl_seconds == 3600 and entry.expires_at is not None
        assert [h.entry.key for h in memlens.search_keys("pizza", user_id="alice", mode="keyword")] == ["food"]
    assert rows(agent_db) == before


def test_the_view_is_live_read_only_and_never_writes(agent_db):
    before = rows(agent_db)
    with store.open(f"langgraph-postgres:{agent_db}", embedder=None) as view:
        assert set(view.tenant_names()) == {"alice", "bob", None}
        assert [h.entry.key for h in view.search_keys("pizza", user_id="alice", mode="keyword")] == ["food"]
        generation = view.data_version()
        assert view.data_version() == generation  # nothing changed: not read again
        with PostgresStore.from_conn_string(libpq(agent_db)) as lg:
            lg.put(("memories", "carol"), "city", {"text": "moved to Porto"})
            lg.delete(("memories", "alice"), "pet")
        assert view.data_version() != generation
        assert "carol" in view.tenant_names()
        assert view.session("langgraph:memories.alice", user_id="alice").get("pet") is None
        after_writes = rows(agent_db)
        for write in (
            lambda: view.remember("x", user_id="alice"),
            lambda: view.session("langgraph:memories.alice", user_id="alice").set("k", 1),
            lambda: view.forget(user_id="alice"),
        ):
            with pytest.raises(ReadOnlyStoreError, match="PostgresStore"):
                write()
        assert rows(agent_db) == after_writes
    assert len(before) == 4


def test_no_message_title_or_output_shows_the_password(agent_db, tmp_path):
    url = with_password(agent_db)
    with store.open(f"langgraph-postgres:{url}", embedder=None) as view:
        assert SECRET not in view.path and SECRET not in repr(view)
        assert view.tenant_names()
    missing = url.replace("/memlens_test", "/no_such_db_memlens_test", 1)
    with pytest.raises(SourceNotFoundError) as caught:
        read_langgraph_postgres(missing)
    assert SECRET not in str(caught.value)
    result = run_cli("import", "--db", str(tmp_path / "m.db"), "--create", "--from", "langgraph-postgres", url)
    assert result.returncode == 0, result.stderr
    assert "LangGraph PostgresStore" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    result = run_cli("stats", f"langgraph-postgres:{url}")
    assert result.returncode == 0, result.stderr
    assert "alice" in result.stdout and SECRET not in result.stdout + result.stderr


def test_a_database_that_is_not_langgraphs_or_is_newer_is_refused_naming_why(agent_db, pg_server):
    import psycopg

    with pytest.raises(UnrecognizedSourceError, match="not a LangGraph PostgresStore"):
        read_langgraph_postgres(pg_server.fresh_database())
    with psycopg.connect(libpq(agent_db), autocommit=True) as conn:
        conn.execute("INSERT INTO store_migrations (v) VALUES (99)")
    with pytest.raises(SourceSchemaTooNewError, match="99"):
        read_langgraph_postgres(agent_db)
