"""History that arrived in an import file is marked "(imported)" in both audit tables: the
tenant's Audit view had the mark, the store-wide audit log (a) did not, so an export done in
another store read as one done here."""

from __future__ import annotations

from inspector.screens.dialogs import StoreAuditScreen
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import app_for, frozen, open_tenant, screen_text, settle, showing, wait_for  # noqa: F401 (frozen is a fixture)


async def test_both_audit_tables_mark_imported_history(tmp_path):
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with MemoryStore.open(source, embedder=FakeEmbedder()) as s:
        s.remember("hello", "hi", user_id="alice")
        s.export(user_id="alice", actor="dpo")  # an entry the next export carries
        s.export_to(tmp_path / "alice.jsonl", user_ids=["alice"], actor="dpo")
    with MemoryStore.open(target, embedder=FakeEmbedder()) as t:
        t.import_(tmp_path / "alice.jsonl", actor="dpo")
        assert [e.origin for e in t.audit_log(user_id="alice")] == ["local", "imported"]
    app = app_for(target)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("audit")
        await settle(pilot, app)
        assert "export (imported)" in screen_text(app)
        app.query_one("#tenants").focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: showing(app, StoreAuditScreen), what="the store-wide audit log")
        await wait_for(pilot, lambda: "export (imported)" in screen_text(app), what="the mark in the store-wide log")
        assert "import " in screen_text(app)
