"""One name, one tenant, whatever its Unicode form: "zoë" stored as NFD (e + combining diaeresis)
and erased as NFC (what terminals send) was "no tenant ... nothing was done", and the data stayed.
Names are kept in NFC; schema version 6 moves the names an older store holds, merging two forms
of one name without losing or overwriting anything."""

from __future__ import annotations

import sqlite3
import unicodedata

import pytest
from sqlalchemy import create_engine, text

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import UnknownTenantError
from store.tenancy import Tenant, close_matches

NFC = unicodedata.normalize("NFC", "zoë")
NFD = unicodedata.normalize("NFD", "zoë")


def test_both_forms_are_one_tenant(db_path):
    assert NFC != NFD and Tenant.of(NFD) == Tenant.of(NFC) == Tenant(NFC)
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.remember("written under the decomposed form", user_id=NFD)
        assert [t.user_id for t in s.tenants()] == [NFC]
        assert len(s.episodes(user_id=NFC).items) == 1
        receipt = s.forget(user_id=NFC, actor="dpo")
        assert receipt.counts["episodes"] == 1 and s.tenants() == []


def test_did_you_mean_sees_through_forms():
    """A store this process may only read can still hold a name in another form."""
    assert close_matches(NFC, [NFD, "zoe"])[0] == NFD


def write_as_before_version_6(url: str, monkeypatch) -> None:
    """What memlens before version 6 left: names stored in the form they came in, both forms of
    one name side by side, using one block name and one session id."""
    with monkeypatch.context() as old:
        old.setattr(unicodedata, "normalize", lambda form, name: name)
        with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
            for user, said in ((NFC, "composed"), (NFD, "decomposed")):
                s.remember(f"{said} memory", "ok", user_id=user, session_id="s1", id="same-id")
                s.update_block("persona", f"{said} persona", user_id=user)
                s.session("s1", user_id=user).set("k", said)
                s.add_fact(said, "is", "kept", user_id=user)
            s.remember("only the decomposed form", user_id=NFD)
            s.export(user_id=NFD, actor="dpo")  # an audit entry under the old form
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE memlens_meta SET value = '5' WHERE key = 'schema_version'"))
        conn.execute(text("DROP TABLE block_versions"))  # made by version 8
        conn.execute(text("DROP TABLE fact_changes"))
        conn.execute(text("DROP TABLE recall_traces"))  # made by version 10
        on_table = "" if url.startswith("sqlite") else " ON kv_entries"
        conn.execute(text(f"DROP TRIGGER kv_entries_vectors_ad{on_table}"))  # made by version 9
        for column in ("created_at", "ttl_seconds", "search_text"):
            conn.execute(text(f"ALTER TABLE kv_entries DROP COLUMN {column}"))
        if url.startswith("sqlite"):
            conn.exec_driver_sql("PRAGMA user_version = 5")
    engine.dispose()


def test_an_older_store_merges_the_forms_of_a_name_and_loses_nothing(backend_url, monkeypatch):
    write_as_before_version_6(backend_url, monkeypatch)
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as s:
        assert [t.user_id for t in s.tenants()] == [NFC]
        episodes = s.episodes(user_id=NFC).items
        assert sorted(e.input for e in episodes) == ["composed memory", "decomposed memory", "only the decomposed form"]
        assert sorted(e.id for e in episodes if e.input != "only the decomposed form") == ["same-id", "same-id (merged)"]
        blocks = {b.name: b.content for b in s.working(user_id=NFC)}
        assert blocks == {"persona": "composed persona", "persona (merged)": "decomposed persona"}
        assert s.session("s1", user_id=NFC).get("k") == "composed"
        assert s.session("s1 (merged)", user_id=NFC).get("k") == "decomposed"
        assert sorted(f.subject for f in s.facts(user_id=NFC)) == ["composed", "decomposed"]
        assert [e.action for e in s.audit_log(user_id=NFC)] == ["export"]
        hits = s.recall("decomposed memory", user_id=NFC, mode="vector")
        assert hits and hits[0].text.startswith("decomposed memory")
        receipt = s.forget(user_id=NFD, actor="dpo")  # typed in either form, it is the one tenant
        assert receipt.counts["episodes"] == 3
        assert s.tenants() == []
        assert s.episodes(user_id=NFD).items == []
        with pytest.raises(UnknownTenantError):
            s.export(user_id=NFD)


def test_an_older_file_keeps_no_row_under_the_old_form(db_path, monkeypatch):
    write_as_before_version_6(f"sqlite:///{db_path}", monkeypatch)
    MemoryStore.open(db_path, embedder=FakeEmbedder()).close()
    with sqlite3.connect(db_path) as raw:
        tables = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%user_id%'")]
        left = {t: raw.execute(f"SELECT count(*) FROM {t} WHERE user_id = ?", (NFD,)).fetchone()[0] for t in tables}
    assert tables and not any(left.values()), left
