"""The inspector on a PostgreSQL store: it opens from a URL (no file to glance at, so the store
lists the tenants) and refreshes when another connection writes, through the LISTEN/NOTIFY
change counter."""

from __future__ import annotations

import pytest

from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import app_for, frozen, open_tenant, settle, wait_for  # noqa: F401 (frozen is a fixture)

pytest.importorskip("psycopg")

SIZE = (150, 48)


def with_password(url: str) -> str:
    # The embedded server trusts local connections, so any password is accepted and none may show.
    return url.replace("postgres:@", "postgres:hunter2@", 1).replace("postgres@", "postgres:hunter2@", 1)


async def test_the_inspector_on_postgres_shows_another_connections_write(pg_url):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as agent:
        for i in range(3):
            agent.remember(f"turn {i}", user_id="carol", session_id="s1")
    url = with_password(pg_url)
    assert "hunter2" in url
    app = app_for(url, poll_seconds=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await wait_for(pilot, lambda: app.store is not None or app.failed, what="the open")
        assert not app.failed, app.failed
        await wait_for(pilot, lambda: [t.user_id for t in app.main_screen.tenants] == ["carol"], what="tenants from the store")
        assert "hunter2" not in app.sub_title and "hunter2" not in str(app.store.path)
        await open_tenant(pilot, app, "carol")
        app.main_screen.action_show_view("episodes")
        episodes = app.query_one("#episodes-table", RecordTable)
        await wait_for(pilot, lambda: episodes.row_count == 3, what="the three episodes")
        with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as agent:
            agent.remember("new turn from the agent", user_id="carol", session_id="s1")
        await wait_for(pilot, lambda: episodes.row_count == 4, what="refresh after another connection's write")


def test_every_store_command_takes_a_postgres_url(pg_url, tmp_path, capsys):
    from inspector.cli.main import main

    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as agent:
        agent.remember("a turn about lisbon", user_id="carol", session_id="s1")
    url = with_password(pg_url)
    assert main(["stats", url]) == 0
    assert main(["export", "--db", url, "--user", "carol", "-o", str(tmp_path / "carol.jsonl")]) == 0
    assert main(["forget", "--db", url, "--user", "carol", "--yes"]) == 0
    assert main(["import", "--db", url, str(tmp_path / "carol.jsonl")]) == 0
    assert main(["audit", "--db", url]) == 0
    assert main(["scrub", url]) == 0
    printed = capsys.readouterr()
    assert "hunter2" not in printed.out + printed.err
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as s:
        assert [e.input for e in s.episodes(user_id="carol").items] == ["a turn about lisbon"]
        assert [e.action for e in s.audit_log(all_tenants=True)] == ["import", "forget", "export"]


def test_a_wrong_database_is_named_without_the_password(pg_url, capsys):
    from urllib.parse import urlsplit, urlunsplit

    from inspector.cli.main import main

    parts = urlsplit(pg_url)
    missing = with_password(urlunsplit(parts._replace(path="/no_such_database")))
    assert main(["stats", missing]) != 0
    err = capsys.readouterr().err
    assert "no_such_database" in err and "does not exist" in err and "hunter2" not in err
