"""The tenant at a glance: while no record is shown, the detail pane shows the selected tenant's
episodes per day (a Sparkline) and its tier sizes (bars), loaded in a worker, readable at 80
columns and without colour."""

from __future__ import annotations

import threading

from rich.console import Console
from textual.widgets import Sparkline

from inspector.formatting import activity_caption, sliver_bar, tier_bars
from inspector.widgets.overview import ACTIVITY_DAYS, DetailPane, TenantOverview
from inspector.widgets.views import RecordTable

from .inspector_support import FROZEN, app_for, frozen, notes, open_tenant, screen_text, settle, wait_for  # noqa: F401


def rendered(renderable, width: int = 48) -> list[str]:
    console = Console(width=width, color_system=None, record=True)
    console.print(renderable)
    return console.export_text().splitlines()


def test_tier_bars_fit_48_cells_and_a_tier_with_records_never_reads_as_empty():
    counts = [("blocks", 3), ("episodes", 210), ("facts", 12), ("sessions", 55), ("keys", 0), ("notes", 4), ("ckpts", 2)]
    lines = rendered(tier_bars(counts))
    assert len(lines) == 4 and max(len(line) for line in lines) <= 48
    by_label = {line.split()[0]: line for line in lines} | {line.split()[3]: line for line in lines if len(line.split()) > 3}
    assert "████████" in by_label["episodes"]  # the largest tier fills its bar
    assert "▏" in by_label["blocks"] and "░░░░░░░░" in by_label["keys"]  # 3 of 210: a sliver; 0: none
    assert sliver_bar(1, 10_000, 8) == "▏░░░░░░░" and sliver_bar(0, 10, 8) == "░░░░░░░░"


def test_the_caption_names_the_days_the_time_zone_and_the_peak_in_48_cells():
    from datetime import date, timedelta

    days = [date(2026, 10, 10) + timedelta(days=i) for i in range(ACTIVITY_DAYS)]
    caption = activity_caption(days, [0] * 41 + [7])
    assert caption == "episodes per day (UTC), 10-10 to 11-20, peak 7" and len(caption) <= 48


async def test_the_selected_tenant_is_shown_at_a_glance_from_a_worker(demo):
    app = app_for(demo)
    threads: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.store is not None, what="store")
        real = app.store.activity

        def activity(**kwargs):
            threads.append(threading.current_thread().name)
            return real(**kwargs)

        app.store.activity = activity
        await open_tenant(pilot, app, "bob")
        pane = app.query_one(DetailPane)
        await wait_for(pilot, lambda: pane.query_one(TenantOverview).display, what="overview")
        expected = real(user_id="bob", days=ACTIVITY_DAYS, until=FROZEN)
        assert app.query_one(Sparkline).data == expected.episodes and sum(expected.episodes) > 0
        assert pane.border_title == "bob at a glance"
        text = screen_text(app)
        counts = app.store.profile(user_id="bob").counts
        assert f"episodes {counts.episodes}" in " ".join(text.split()) and "peak" in text
        assert threads and threading.main_thread().name not in threads  # never on the event loop

        # Another tenant: bob's pictures go at once, never shown under carol's name.
        await open_tenant(pilot, app, "carol")
        await wait_for(pilot, lambda: pane.border_title == "carol at a glance", what="carol")
        assert app.query_one(Sparkline).data == real(user_id="carol", days=ACTIVITY_DAYS, until=FROZEN).episodes


async def test_a_record_replaces_the_overview_and_going_back_to_the_tenants_brings_it_back(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tenant(pilot, app, "alice")
        overview = app.query_one(TenantOverview)
        await wait_for(pilot, lambda: overview.display, what="overview")
        app.main_screen.action_show_view("episodes")
        await settle(pilot, app)
        app.query_one("#episodes-table", RecordTable).focus()
        await wait_for(pilot, lambda: not overview.display and "episode" in app.query_one(DetailPane).border_title, what="record")
        await pilot.press("t")
        await wait_for(pilot, lambda: overview.display, what="overview again")
        assert app.query_one(DetailPane).border_title == "alice at a glance"


async def test_a_failed_activity_load_is_shown_and_the_pane_keeps_its_hint(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.store is not None, what="store")

        def broken(**kwargs):
            raise RuntimeError("disk on fire")

        app.store.activity = broken
        await open_tenant(pilot, app, "bob")  # alice was selected, and loaded, at start
        await wait_for(pilot, lambda: any("disk on fire" in str(n) for n in notes(app)), what="the failure")
        assert not app.query_one(TenantOverview).display
        assert "Select a record" in screen_text(app)


async def test_the_sparkline_ends_on_the_tenants_last_activity(tmp_path):
    """A tenant idle for a month shows the weeks up to its last write, not a month of zeros."""
    from datetime import timedelta

    from store import MemoryStore
    from store.embedding import FakeEmbedder
    from store.validation import set_clock

    from .inspector_support import frozen_clock

    month_ago = FROZEN - timedelta(days=30)
    set_clock(lambda: month_ago)
    try:
        with MemoryStore.open(tmp_path / "idle.db", embedder=FakeEmbedder()) as s:
            s.remember("the last thing it did", "noted", user_id="idle", occurred_at=month_ago)
    finally:
        set_clock(frozen_clock)
    app = app_for(tmp_path / "idle.db")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tenant(pilot, app, "idle")
        await wait_for(pilot, lambda: app.query_one(TenantOverview).display, what="overview")
        assert app.query_one(Sparkline).data[-1] == 1
        assert f"to {month_ago:%m-%d}," in screen_text(app)
