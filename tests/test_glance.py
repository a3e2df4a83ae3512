"""store.glance: tenant names without SQLAlchemy, for the inspector's first seconds."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import timedelta

import pytest

from store import MemoryStore
from store.glance import ANONYMOUS_KEY, APPLICATION_ID, tenant_names

from .conftest import T0


def test_names_come_in_the_order_the_store_lists_its_tenants(db_path, clock, quiet_isolation):
    with MemoryStore.open(db_path) as store:
        for user in ["carol", "alice", None, "bob", "Émile", "Zoë"]:  # one moment: ties by name, anonymous last
            store.remember("hello", user_id=user)
        clock[0] = T0 + timedelta(hours=1)
        store.remember("later", user_id="bob")
        clock[0] = T0 - timedelta(hours=1)
        store.update_block("b", "x", user_id="dave")  # never touched since
        expected = [t.user_id for t in store.tenants()]
    assert expected[0] == "bob" and None in expected and expected[-1] == "dave"
    assert tenant_names(db_path) == expected


def test_a_store_without_tenants_has_no_names(db_path):
    MemoryStore.open(db_path).close()
    assert tenant_names(db_path) == []


def test_the_copied_constants_agree_with_the_store():
    from store.backend.sqlite.migrations import APPLICATION_ID as stored_id
    from store.tenancy import ANONYMOUS_KEY as stored_key

    assert (stored_id, stored_key) == (APPLICATION_ID, ANONYMOUS_KEY)


def test_a_tenant_being_erased_is_not_named(db_path):
    from store.tenancy import erasing_key

    with MemoryStore.open(db_path) as store:
        store.remember("hello", user_id="alice")
        store.remember("hello", user_id="bob")
    conn = sqlite3.connect(db_path)  # what a process that died between erasure steps leaves
    conn.execute("INSERT INTO memlens_meta (key, value) VALUES (?, 'digest')", (erasing_key("alice"),))
    conn.commit()
    conn.close()
    assert tenant_names(db_path) == ["bob"]


def other_application(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE tenants (user_id TEXT, last_activity INTEGER)")
    conn.execute("INSERT INTO tenants VALUES ('stranger', 1)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(None, id="missing"),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(lambda p: p.write_text("name,owner\nalice,1\n"), id="text"),
        pytest.param(other_application, id="another-application"),
        pytest.param(lambda p: p.mkdir(), id="directory"),
    ],
)
def test_anything_but_a_memlens_store_gets_none_and_stays_as_it_was(tmp_path, make):
    path = tmp_path / "thing.db"
    if make is not None:
        make(path)
    before = sorted((p.name, p.read_bytes() if p.is_file() else None) for p in tmp_path.iterdir())
    assert tenant_names(path) is None
    assert sorted((p.name, p.read_bytes() if p.is_file() else None) for p in tmp_path.iterdir()) == before


def test_a_store_held_by_a_writer_is_still_read(db_path):
    with MemoryStore.open(db_path) as store:
        store.remember("hello", user_id="alice")
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE tenants SET last_activity = last_activity + 1")
    try:
        assert tenant_names(db_path, busy_timeout=0.1) == ["alice"]  # WAL: a reader never waits for a writer
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_reading_names_imports_neither_sqlalchemy_nor_pydantic(db_path):
    MemoryStore.open(db_path).close()
    probe = (
        f"import sys, json\nfrom store.glance import tenant_names\ntenant_names({str(db_path)!r})\n"
        "print(json.dumps([m for m in ('sqlalchemy', 'pydantic', 'numpy') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize(
    "address", ["postgresql://role@localhost/agents", "postgresql+psycopg://role:secret@/agents?host=/tmp", "loomflow-sqlite:bot.db"]
)
def test_an_address_that_is_not_a_memlens_file_gets_none_and_no_file_is_touched(tmp_path, monkeypatch, address):
    monkeypatch.chdir(tmp_path)
    assert tenant_names(address) is None
    assert list(tmp_path.iterdir()) == []
