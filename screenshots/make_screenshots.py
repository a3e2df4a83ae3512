"""Regenerate the screenshots of the README and the docs from the real app on the demo store.

    python screenshots/make_screenshots.py

Uses the real embedding model; the clock and ids are frozen so regenerating without a UI
change gives the same files.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from textual.widgets import Input  # noqa: E402

from inspector.app import make_app  # noqa: E402
from inspector.screens.dialogs import DiffScreen, ExportScreen, ForgetScreen, StoreAuditScreen  # noqa: E402
from inspector.screens.help_screen import HelpScreen  # noqa: E402
from inspector.screens.timeline import TimelineScreen  # noqa: E402
from inspector.widgets.overview import TenantOverview  # noqa: E402
from inspector.widgets.results import ResultsTable  # noqa: E402
from inspector.widgets.views import RecordTable  # noqa: E402
from store.demo import DEMO_NOW, build_demo_store  # noqa: E402
from store.embedding import cache_dir  # noqa: E402
from store.tiers.common import set_id_source  # noqa: E402
from store.validation import set_clock  # noqa: E402

SIZE = (150, 46)


async def wait(pilot, condition, timeout=60.0):  # noqa: ASYNC109 (a deadline for the whole wait, polled)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the app never reached the state to screenshot")
        await pilot.pause(0.05)
    await pilot.pause(0.3)


def idle(app) -> bool:
    from inspector.app import is_idle

    return is_idle(app)


def painted(app) -> bool:
    """Nothing left to lay out or repaint, and the footer's keys there: it rebuilds them when the
    focus moves, and a shot taken in between had none."""
    screen = app.screen
    if screen._layout_required or screen._repaint_required or screen._dirty_widgets:
        return False
    return not app.query("KeysFooter") or bool(app.query("FooterKey"))


def status(app) -> str:
    return str(app.query_one("#search-status").render())


async def shoot(store_path: Path) -> None:
    app = make_app(store_path, poll_seconds=0, show_timings=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.store is not None and app.store.model_ready and app.main_screen.tenants and idle(app))

        async def save(name: str) -> None:
            for field in app.screen.query(Input):
                field.cursor_blink = False
            await wait(pilot, lambda: idle(app) and painted(app))
            app.save_screenshot(str(HERE / f"{name}.svg"))
            print(f"screenshots/{name}.svg")

        # At start the tenant list has the focus: the detail pane shows alice at a glance.
        await wait(pilot, lambda: app.query_one(TenantOverview).display and idle(app))
        await save("tenant")
        app.query_one("#query").value = "where does she live now and what does she eat"
        results = app.query_one("#results", ResultsTable)
        # The results of the empty query (most recent first) are on screen already: wait for the query's own.
        await wait(pilot, lambda: status(app).startswith("HYBRID") and "most recent" not in status(app) and idle(app))
        results.focus()
        await pilot.pause(0.3)
        await save("search")
        await pilot.press("m", "m")  # compare mode: the same query, keyword only
        await wait(pilot, lambda: status(app).startswith("KEYWORD") and idle(app))
        await save("search-keyword")
        for view in ("blocks", "episodes", "facts", "audit"):
            app.main_screen.action_show_view(view)
            if view == "facts":
                app.query_one("#facts-history").value = True
            await wait(pilot, lambda: idle(app))
            table = app.query(RecordTable).filter(f"#{view}-table").first()
            table.focus()
            if view == "episodes":
                table.move_cursor(row=3)
            await pilot.pause(0.3)
            await save(view)
        # Why not: the superseded fact, asked why the search typed above does not bring it back.
        app.main_screen.action_show_view("facts")
        facts = app.query_one("#facts-table", RecordTable)
        facts.focus()
        facts.move_cursor(row=next(i for i, f in enumerate(facts.records.values()) if f.valid_until is not None))
        await pilot.press("w")
        await wait(pilot, lambda: isinstance(app.screen, DiffScreen) and idle(app))
        await save("why-not")
        await pilot.press("escape")
        # The recalls alice's agent made (tracing on), and one replayed now beside what it returned.
        await pilot.press("R")
        await wait(pilot, lambda: app.screen.query("#recalls-table") and app.screen.query_one("#recalls-table").row_count == 3)
        app.screen.query_one("#recalls-table", RecordTable).move_cursor(row=1)
        await pilot.pause(0.3)
        await save("recalls")
        await pilot.press("r")
        await wait(pilot, lambda: isinstance(app.screen, DiffScreen) and idle(app))
        await save("replay")
        await pilot.press("escape", "escape")
        app.main_screen.action_show_view("sessions")
        sessions = app.query_one("#sessions-table", RecordTable)
        sessions.focus()
        sessions.move_cursor(row=sessions.get_row_index("trip-lisbon"))
        checkpoints = app.query_one("#checkpoints-table", RecordTable)
        await wait(pilot, lambda: checkpoints.row_count == 2 and idle(app))
        checkpoints.focus()
        await pilot.pause(0.3)
        await save("sessions")
        await pilot.press("d")
        await wait(pilot, lambda: isinstance(app.screen, DiffScreen))
        await save("checkpoint-diff")
        await pilot.press("escape")
        await pilot.press("e")
        await wait(pilot, lambda: isinstance(app.screen, ExportScreen))
        app.screen.query_one("#export-path", Input).value = "./memlens-export-alice.jsonl"
        await save("export")
        await pilot.press("escape")
        await pilot.press("f")
        await wait(pilot, lambda: isinstance(app.screen, ForgetScreen) and not app.screen.query_one("#erase").disabled)
        await save("forget")
        await pilot.press("escape")
        await pilot.press("question_mark")
        await wait(pilot, lambda: isinstance(app.screen, HelpScreen))
        await save("help")
        await pilot.press("escape")
        # Time travel: one change back, the blocks as they read then; the timeline; the diff with now.
        app.main_screen.action_show_view("blocks")
        app.query_one("#blocks-table", RecordTable).focus()
        await pilot.press("left_square_bracket")
        await wait(pilot, lambda: app.main_screen.as_of is not None and idle(app))
        await pilot.pause(0.3)
        await save("past")
        await pilot.press("T")
        await wait(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.query_one(RecordTable).row_count > 1)
        await save("timeline")
        await pilot.press("escape")
        await pilot.press("D")
        await wait(pilot, lambda: isinstance(app.screen, DiffScreen))
        await save("diff-with-now")
        await pilot.press("escape", "n")
        await wait(pilot, lambda: app.main_screen.as_of is None and idle(app))
        # The DPO's view after an erasure: the store-wide audit log keeps the erased tenant's entry.
        app.store.forget(user_id="carol", actor="dpo@example.com")
        app.main_screen.action_reload()
        await wait(pilot, lambda: all(t.user_id != "carol" for t in app.main_screen.tenants) and idle(app))
        app.query_one("#tenants").focus()
        await pilot.press("a")
        await wait(pilot, lambda: isinstance(app.screen, StoreAuditScreen) and app.screen.query_one(RecordTable).row_count > 0)
        await save("audit-all")


def main() -> None:
    counter = iter(range(1, 1 << 30))
    os.environ["MEMLENS_CONFIG_DIR"] = tempfile.mkdtemp()  # the default theme, whatever this user chose
    set_clock(lambda: DEMO_NOW)
    set_id_source(lambda: f"{next(counter):08x}" + "c0ffee" * 4)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memlens-demo.db"
        build_demo_store(path, vector_cache=cache_dir() / "demo").close()
        trace_recalls(path)
        asyncio.run(shoot(path))


def trace_recalls(path: Path) -> None:
    """Three recalls alice's agent made with tracing on, a few minutes apart."""
    import sqlite3
    from datetime import timedelta

    from store import MemoryStore

    with MemoryStore.open(path, trace=True) as store:
        for minutes, query, session, label in (
            (50, "where does alice live", None, "planner"),
            (30, "lisbon trip bookings", "trip-lisbon", "planner"),
            (10, "running plan", None, "coach"),
        ):
            set_clock(lambda m=minutes: DEMO_NOW - timedelta(minutes=m))
            store.recall(query, user_id="alice", session_id=session, label=label, kind="all")
    set_clock(lambda: DEMO_NOW)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE recall_traces SET took_ms = 6.4")  # the one part a run cannot repeat
    conn.commit()
    conn.close()


if __name__ == "__main__":
    main()
