"""SVG snapshots of the main views and dialogs, at 80x24 (the smallest terminal the inspector
promises to be usable in) and 200x55. Deterministic: fixed size, frozen clock, fake embedder, no
cursor blink, no notifications. Update on purpose with `pytest --snapshot-update`."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from inspector.app import make_app
from inspector.screens.dialogs import ConfirmScreen, DiffScreen, ExportScreen, ForgetScreen, StoreAuditScreen
from inspector.screens.help_screen import HelpScreen
from inspector.widgets.overview import TenantOverview
from inspector.widgets.results import ResultsTable
from inspector.widgets.views import RecordTable
from store.embedding import FakeEmbedder
from store.tiers.common import set_id_source
from store.validation import set_clock

from .inspector_support import (
    add_traced_recalls,
    counting_ids,
    frozen_clock,
    go_to,
    make_demo,
    open_recalls,
    open_session,
    open_tenant,
    settle,
    showing,
    wait_for,
)

SMALL, LARGE = (80, 24), (200, 55)
SIZES = pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x55"])


@pytest.fixture
def demo(tmp_path):
    set_clock(frozen_clock)
    set_id_source(counting_ids())
    path = make_demo(tmp_path / "demo.db")
    yield path
    set_clock(None)
    set_id_source(None)


def app_for(path):
    return make_app(path, embedder=FakeEmbedder(), poll_seconds=0, show_timings=False)


def still(app) -> None:
    for field in app.screen.query(Input):
        field.cursor_blink = False


def compare_mode(snap_compare, demo, size, *, presses: int, mode: str) -> bool:
    """The search for "vegetarian restaurant" after ``m`` pressed ``presses`` times in the results."""
    app = app_for(demo)

    async def run_before(pilot):
        await open_tenant(pilot, app, "alice")
        app.query_one("#query").value = "vegetarian restaurant"
        results = app.query_one("#results", ResultsTable)
        await wait_for(pilot, lambda: "HYBRID" in str(app.query_one("#search-status").render()))
        results.focus()
        await pilot.press(*["m"] * presses)
        await wait_for(pilot, lambda: mode in str(app.query_one("#search-status").render()))
        await settle(pilot, app)
        await pilot.pause(0.2)
        still(app)

    return snap_compare(app, terminal_size=size, run_before=run_before)


class TestMainViews:
    @SIZES
    def test_search(self, snap_compare, demo, size):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            app.query_one("#query").value = "vegetarian restaurant"
            results = app.query_one("#results", ResultsTable)
            await wait_for(
                pilot,
                lambda: results.row_count > 0 and "vegetarian" in str(app.query_one("#search-status").render()) or results.row_count > 3,
            )
            await settle(pilot, app)
            results.focus()
            await pilot.pause(0.2)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_search_keyword_mode(self, snap_compare, demo, size):
        """Compare mode: the same query after ``m`` twice (hybrid → vector → keyword)."""
        assert compare_mode(snap_compare, demo, size, presses=2, mode="KEYWORD")

    @SIZES
    def test_search_vector_mode(self, snap_compare, demo, size):
        """Compare mode: the same query after ``m`` once (hybrid → vector): the keyword bars show ``-``."""
        assert compare_mode(snap_compare, demo, size, presses=1, mode="VECTOR")

    @SIZES
    @pytest.mark.parametrize("view", ["blocks", "episodes", "facts", "audit"])
    def test_tier_view(self, snap_compare, demo, view, size):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            app.main_screen.action_show_view(view)
            if view == "facts":
                app.query_one("#facts-history").value = True
            await settle(pilot, app)
            table = app.query(RecordTable).filter(f"#{view}-table").first()
            table.focus()
            await pilot.pause(0.2)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_sessions(self, snap_compare, demo, size):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await open_session(pilot, app, "trip-lisbon")
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)


class TestTenantOverview:
    @SIZES
    def test_tenant_at_a_glance(self, snap_compare, demo, size):
        """The tenant list has the focus: the detail pane shows bob's activity sparkline and tier bars."""
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "bob")
            await wait_for(pilot, lambda: app.query_one(TenantOverview).display, what="overview")
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)


class TestDialogs:
    def test_forget(self, snap_compare, demo):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "bob")
            await pilot.press("f")
            await wait_for(
                pilot, lambda: showing(app, ForgetScreen) and app.screen.query("#erase") and not app.screen.query_one("#erase").disabled
            )
            still(app)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)

    def test_export(self, snap_compare, demo):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await pilot.press("e")
            await wait_for(pilot, lambda: showing(app, ExportScreen) and app.screen.query("#export-path"))  # composed
            app.screen.query_one("#export-path").value = "/exports/alice.jsonl"
            still(app)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)

    def test_checkpoint_diff(self, snap_compare, demo):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await open_session(pilot, app, "trip-lisbon")
            checkpoints = app.query_one("#checkpoints-table", RecordTable)
            checkpoints.focus()
            checkpoints.move_cursor(row=0)
            await pilot.press("d")
            await wait_for(pilot, lambda: showing(app, DiffScreen))
            still(app)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)

    @SIZES
    def test_block_history(self, snap_compare, demo, size):
        from .test_inspector import give_goals_a_history

        give_goals_a_history(demo)
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            app.main_screen.action_show_view("blocks")
            await settle(pilot, app)
            blocks = app.query_one("#blocks-table", RecordTable)
            blocks.focus()
            blocks.move_cursor(row=[b.name for b in blocks.records.values()].index("goals"))
            await pilot.press("h")
            await wait_for(pilot, lambda: showing(app, DiffScreen))
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_why_not(self, snap_compare, demo, size):
        """A superseded fact picked in the facts' history, asked why the search for it misses it."""
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            app.query_one("#query").value = "where does alice live"
            app.main_screen.action_show_view("facts")
            app.query_one("#facts-history").value = True
            facts = app.query_one("#facts-table", RecordTable)
            await wait_for(pilot, lambda: any(f.valid_until is not None for f in facts.records.values()), what="the facts' history")
            await settle(pilot, app)
            facts.focus()
            facts.move_cursor(row=next(i for i, f in enumerate(facts.records.values()) if f.valid_until is not None))
            await pilot.press("w")
            await wait_for(pilot, lambda: showing(app, DiffScreen), what="the why-not panel")
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_recalls(self, snap_compare, demo, size):
        """The recalls alice's agent made, the middle one under the cursor and shown below the list."""
        add_traced_recalls(demo)
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            recalls = await open_recalls(pilot, app)
            recalls.move_cursor(row=1)
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_replay(self, snap_compare, demo, size):
        add_traced_recalls(demo)
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await open_recalls(pilot, app)
            await pilot.press("r")
            await wait_for(pilot, lambda: showing(app, DiffScreen), what="the replay")
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    def test_restore(self, snap_compare, demo):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await open_session(pilot, app, "trip-lisbon")
            app.query_one("#checkpoints-table", RecordTable).focus()
            await pilot.press("r")
            await wait_for(pilot, lambda: showing(app, ConfirmScreen))
            await pilot.pause(0.2)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)

    def test_store_audit_log(self, snap_compare, demo):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "bob")
            app.store.forget(user_id="bob", actor="dpo@example.com")
            app.main_screen.action_reload()
            await wait_for(pilot, lambda: all(t.user_id != "bob" for t in app.main_screen.tenants))
            await settle(pilot, app)
            app.query_one("#tenants").focus()
            await pilot.press("a")
            await wait_for(pilot, lambda: showing(app, StoreAuditScreen) and app.screen.query_one(RecordTable).row_count == 1)
            await pilot.pause(0.2)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)

    def test_help(self, snap_compare, demo):
        app = app_for(demo)

        async def run_before(pilot):
            await settle(pilot, app)
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: showing(app, HelpScreen) and app.screen.query("MarkdownTable") and app.screen.query("#close"))
            await pilot.pause(0.3)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


class TestTimeTravel:
    """(go_to types the moment into the timeline, as a user would.)"""

    @SIZES
    def test_the_past(self, snap_compare, demo, size):
        """Blocks one change back: the header and the line above the tabs say AS OF and read-only."""
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            app.main_screen.action_show_view("blocks")
            await go_to(pilot, app, "2026-11-03 18:30")
            app.query_one("#blocks-table").focus()
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_timeline(self, snap_compare, demo, size):
        from inspector.screens.timeline import TimelineScreen

        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await pilot.press("T")
            await wait_for(pilot, lambda: showing(app, TimelineScreen))
            table = app.screen.query_one("#timeline-table", RecordTable)
            await wait_for(pilot, lambda: table.row_count > 1, what="the changes")
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @SIZES
    def test_diff_with_now(self, snap_compare, demo, size):
        app = app_for(demo)

        async def run_before(pilot):
            await open_tenant(pilot, app, "alice")
            await go_to(pilot, app, "2026-11-03 18:30")
            await pilot.press("D")
            await wait_for(pilot, lambda: showing(app, DiffScreen))
            await settle(pilot, app)
            still(app)

        assert snap_compare(app, terminal_size=size, run_before=run_before)
