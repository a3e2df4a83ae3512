"""A PostgreSQL password never leaves the connection: in whichever form the URL carries it (the
userinfo, libpq's ``?password=`` or ``?sslpassword=``, an unencoded ``@``), it shows in no
error, no ``store.path``, no command's output, no export manifest, no audit entry and no screen."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import make_url

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import StoreNotFoundError, StoreOpenError

from .cli_process import run_cli
from .inspector_support import app_for, frozen, screen_text, settle  # noqa: F401 (frozen is a fixture)

pytest.importorskip("psycopg")

SECRET = "hunter2sekrit"


def carrying_the_password(url: str, form: str) -> str:
    """``url`` (the test server's, which trusts local connections: any password is accepted)
    with the password in ``form``."""
    if form == "userinfo":
        return url.replace("postgres:@", f"postgres:{SECRET}@", 1).replace("postgres@", f"postgres:{SECRET}@", 1)
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}{form}={SECRET}"


def elsewhere(url: str) -> str:
    """The URL of a database the test server does not have."""
    return make_url(url).set(database="no_such_database").render_as_string(hide_password=False)


@pytest.mark.parametrize("form", ["userinfo", "password", "sslpassword"])
def test_no_rendering_of_the_store_shows_its_password(pg_url, tmp_path, form):
    url = carrying_the_password(pg_url, form)
    assert SECRET in url
    with MemoryStore.open(url, embedder=None) as s:  # no vectors: the migration's copy needs no model
        s.remember("an ordinary turn", user_id="carol")
        assert SECRET not in str(s.path)
        s.export_to(tmp_path / "carol.jsonl", user_ids=["carol"], actor="dpo")
        entries = s.audit_log(all_tenants=True)
    manifest = (tmp_path / "carol.jsonl").read_text().splitlines()[0]
    assert SECRET not in manifest and json.loads(manifest)  # the manifest names the store, without it
    assert entries and not any(SECRET in entry.model_dump_json() for entry in entries)
    # A migration names its source in its report (what `memlens migrate` prints) and in the
    # destination's audit log, kept for good and exported with the tenant.
    with MemoryStore.open(url, read_only=True, embedder=None) as source, MemoryStore.open(tmp_path / "copy.db", embedder=None) as copy:
        report = copy.migrate_from(source, actor="dpo")
        copied_audit = [entry.model_dump_json() for entry in copy.audit_log(all_tenants=True)]
    assert "memlens_test_" in report.source and SECRET not in report.source
    assert copied_audit and not any(SECRET in entry for entry in copied_audit)
    stats = run_cli("stats", url)
    assert stats.returncode == 0, stats.stderr
    for result in (stats, run_cli("audit", "--db", url), run_cli("export", "--db", url, "--user", "nobody", "-o", tmp_path / "x")):
        assert SECRET not in result.stdout + result.stderr, result.args


@pytest.mark.parametrize("form", ["userinfo", "password"])
def test_errors_opening_a_missing_database_do_not_show_the_password(pg_url, form):
    url = carrying_the_password(elsewhere(pg_url), form)
    with pytest.raises(StoreNotFoundError) as caught:
        MemoryStore.open(url, create=False)
    assert "no_such_database" in str(caught.value) and SECRET not in str(caught.value)
    failed = run_cli("stats", url)
    assert failed.returncode == 2 and SECRET not in failed.stdout + failed.stderr


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://bob:{SECRET[:4]}@{SECRET[4:]}@localhost/db",  # an '@' in the password, not encoded
        f"postgresql://bob:{SECRET}@localhost:notaport/db",
        f"postgresql://bob:{SECRET}@[localhost/db",
        f"postgresql+asyncpg://bob:{SECRET}@localhost/db",
    ],
    ids=["unencoded @", "bad port", "bad host", "other driver"],
)
def test_a_malformed_url_is_refused_without_echoing_it(url):
    with pytest.raises(StoreOpenError) as caught:
        MemoryStore.open(url)
    message = str(caught.value)
    assert SECRET not in message and SECRET[4:] not in message, message
    assert message.count("\n") == 0
    failed = run_cli("stats", url)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert SECRET not in failed.stderr and SECRET[4:] not in failed.stderr, failed.stderr


async def test_the_inspector_shows_no_password_from_the_query(pg_url):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as agent:
        agent.remember("a turn", user_id="carol")
    missing = carrying_the_password(elsewhere(pg_url), "password")
    for url in (carrying_the_password(pg_url, "password"), missing):
        app = app_for(url)
        async with app.run_test(size=(120, 40)) as pilot:
            if url == missing:
                while not app.failed:
                    await pilot.pause(0.05)
            else:
                await settle(pilot, app)
            await pilot.pause(0.1)
            assert SECRET not in app.sub_title and SECRET not in screen_text(app), screen_text(app)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql+psycopg://bob:{SECRET}@db.example:5432/agents", "postgresql://bob@db.example:5432/agents"),
        (f"postgresql://bob@h/agents?sslmode=require&password={SECRET}", "postgresql://bob@h/agents?sslmode=require"),
        (f"postgresql://bob@h/agents?SSLPassword={SECRET}&host=%2Ftmp%2Fpg", "postgresql://bob@h/agents?host=%2Ftmp%2Fpg"),
        (f"postgresql://bob:{SECRET}@[localhost/db", "postgresql://bob@[localhost/db"),  # the driver refuses it later
        ("postgresql://h/agents", "postgresql://h/agents"),
    ],
)
def test_a_server_url_is_shown_without_its_password(url, shown):
    from store.locations import shown_url

    assert shown_url(url) == shown
