"""Agent-written text is shown as text in every view and dialog of the inspector, never read as
markup: "[/]" in a memory crashed the app (MarkupError), "[bold]" restyled the screen and an
action link ("[@click=app.quit]") became live. Every tier of one tenant, and the tenant's name,
hold such text here; the test walks every view, every detail, every dialog and a search."""

from __future__ import annotations

import pytest

from inspector.screens.dialogs import ConfirmScreen, DiffScreen, ExportScreen, ForgetScreen, StoreAuditScreen
from inspector.screens.main import VIEWS
from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import (  # noqa: F401 (frozen is a fixture)
    app_for,
    frozen,
    open_session,
    open_tenant,
    screen_text,
    settle,
    showing,
    wait_for,
)

MARKUP = "[/]x[@click=app.quit]q[/][bold]"
USER = "[/]mal[bold]"
SESSION = "s[/]1"
TABLES = {
    "blocks": "#blocks-table",
    "episodes": "#episodes-table",
    "facts": "#facts-table",
    "sessions": "#sessions-table",
    "audit": "#audit-table",
}


@pytest.fixture
def hostile(tmp_path):
    db = tmp_path / "hostile.db"
    with MemoryStore.open(db, embedder=FakeEmbedder()) as s:
        s.update_block(f"b{MARKUP}", MARKUP, user_id=USER)
        s.remember(MARKUP, MARKUP, user_id=USER, session_id=SESSION, metadata={MARKUP: MARKUP}, tool_calls=[{"name": MARKUP}])
        s.add_fact(MARKUP, f"p{MARKUP}", MARKUP, user_id=USER)
        session = s.session(SESSION, user_id=USER)
        session.set(f"k{MARKUP}", MARKUP)
        session.set_task_state(MARKUP, data={MARKUP: MARKUP})
        session.append_scratchpad(MARKUP)
        session.create_checkpoint(MARKUP)
        session.set(f"k{MARKUP}", f"changed {MARKUP}")  # so the diff has a changed key to show
        s.export(user_id=USER, actor=MARKUP)  # an audit entry with a hostile actor
    return db


def still_running(app) -> bool:
    return app.is_running and app.return_code is None


async def walk_rows(pilot, app, selector: str) -> None:
    """Put the cursor on every row of a table: each shows its record in the detail pane."""
    table = app.query_one(selector, RecordTable)
    table.focus()
    for row in range(table.row_count):
        table.move_cursor(row=row)
        await pilot.pause(0.05)
        assert still_running(app)


async def test_hostile_markup_is_text_in_every_view_detail_and_dialog(hostile):
    app = app_for(hostile)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_tenant(pilot, app, USER)
        assert USER in screen_text(app)
        for view in VIEWS:
            app.main_screen.action_show_view(view)
            await settle(pilot, app)
            if view in TABLES:
                await walk_rows(pilot, app, TABLES[view])
                await settle(pilot, app)
                assert MARKUP in screen_text(app) or view == "sessions", view
        # A session's key-value entries, notes and checkpoints, each in the detail pane.
        await open_session(pilot, app, SESSION)
        for selector in ("#kv-table", "#notes-table", "#checkpoints-table"):
            await walk_rows(pilot, app, selector)
            await settle(pilot, app)
            assert MARKUP in screen_text(app), selector
        # The checkpoint's dialogs: its diff against now, and the restore question.
        await pilot.press("d")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the diff")
        await settle(pilot, app)
        assert MARKUP in screen_text(app) and f"k{MARKUP}" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not showing(app, DiffScreen), what="the diff to close")
        app.query_one("#checkpoints-table", RecordTable).focus()
        await pilot.press("r")
        await wait_for(pilot, lambda: showing(app, ConfirmScreen), what="the restore question")
        await settle(pilot, app)
        assert MARKUP in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not showing(app, ConfirmScreen), what="the question to close")
        # The tenant's dialogs, and the store-wide audit log.
        for key, screen in (("f", ForgetScreen), ("e", ExportScreen)):
            app.query_one("#tenants").focus()
            await pilot.press(key)
            await wait_for(pilot, lambda screen=screen: showing(app, screen), what=f"the {screen.__name__}")
            await settle(pilot, app)
            assert USER in screen_text(app)
            if screen is ForgetScreen:  # erase one session, picked by its hostile name
                app.screen.query_one("#scope-session").value = True
                await settle(pilot, app)
                app.screen.query_one("#forget-session").value = SESSION
                await settle(pilot, app)
                assert SESSION in screen_text(app)
            await pilot.press("escape")
            await wait_for(pilot, lambda screen=screen: not showing(app, screen), what=f"the {screen.__name__} to close")
        app.query_one("#tenants").focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: showing(app, StoreAuditScreen), what="the audit log")
        await wait_for(pilot, lambda: MARKUP in screen_text(app), what="the hostile actor in the audit log")
        await pilot.press("escape")
        # A search that finds the hostile memory, and one for the markup itself.
        for query in ("x q", MARKUP):
            app.main_screen.action_show_view("search")
            await pilot.press("slash")
            app.query_one("#query").value = query
            await settle(pilot, app)
            assert still_running(app), query
        assert MARKUP in screen_text(app)
        assert still_running(app)
