"""q in every dialog: it closes the dialog (the footer says "q", and in the forget dialog it did
nothing), except where the focus is in a text field, where it is a letter. A dialog whose body is
longer than itself scrolls with the arrows and PageDown at once (the help did not until shift+tab)."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Input

from inspector.screens.dialogs import ConfirmScreen, ExportScreen, ForgetScreen
from inspector.screens.help_screen import HelpScreen
from inspector.widgets.views import RecordTable

from .inspector_support import app_for, frozen, open_session, open_tenant, settle, showing, wait_for  # noqa: F401 (frozen is a fixture)


async def test_q_closes_the_forget_and_restore_dialogs_and_is_a_letter_in_the_export_path(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen), what="the forget dialog")
        await pilot.press("q")
        await wait_for(pilot, lambda: not showing(app, ForgetScreen), what="q to close the forget dialog")
        assert app.is_running
        await open_session(pilot, app, "trip-lisbon")
        checkpoints = app.query_one("#checkpoints-table", RecordTable)
        checkpoints.focus()
        await pilot.press("r")
        await wait_for(pilot, lambda: showing(app, ConfirmScreen), what="the restore question")
        await pilot.press("q")
        await wait_for(pilot, lambda: not showing(app, ConfirmScreen), what="q to answer no")
        assert app.is_running
        app.query_one("#tenants").focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: showing(app, ExportScreen), what="the export dialog")
        path = app.screen.query_one("#export-path", Input)
        await pilot.press("q")
        assert showing(app, ExportScreen) and path.value.endswith("q")  # typed: the focus is in the path
        await pilot.press("escape")
        await wait_for(pilot, lambda: not showing(app, ExportScreen), what="the export dialog to close")
        assert app.is_running


async def test_the_help_scrolls_with_the_keyboard_at_80x24_and_q_closes_it(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: showing(app, HelpScreen), what="the help")
        body = app.screen.query_one(".dialog-body", VerticalScroll)
        await wait_for(pilot, lambda: app.focused is body, what="the body to take the focus")
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: body.scroll_y > 0, what="PageDown to scroll")
        top = body.scroll_y
        await pilot.press("down")
        await wait_for(pilot, lambda: body.scroll_y > top or body.scroll_y == body.max_scroll_y, what="down to scroll")
        await pilot.press("q")
        await wait_for(pilot, lambda: not showing(app, HelpScreen), what="q to close the help")
        assert app.is_running
