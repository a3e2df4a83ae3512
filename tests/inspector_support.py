"""Shared pieces for the inspector tests: a frozen clock, a demo store, and waiting helpers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from store import MemoryStore
from store.demo import DEMO_NOW, build_demo_store
from store.embedding import FakeEmbedder
from store.validation import set_clock

FROZEN = DEMO_NOW + timedelta(hours=1)


def frozen_clock() -> datetime:
    return FROZEN


def counting_ids():
    """Stable ids: 32 hex characters like the real ones, counting up."""
    counter = iter(range(1, 1 << 30))
    return lambda: f"{next(counter):032x}"


@pytest.fixture(autouse=True)
def frozen():
    """Import into a test module to freeze the store's clock for each of its tests."""
    set_clock(frozen_clock)
    yield
    set_clock(None)


def app_for(path, **options):
    """The app as the CLI makes it, on the fake embedder and without the polling timer."""
    from inspector.app import make_app

    options.setdefault("embedder", FakeEmbedder())
    options.setdefault("poll_seconds", 0)
    return make_app(path, **options)


def make_demo(path: Path, embedder=None) -> Path:
    """The compact demo store the snapshot baselines are built on; with the fast fake embedder
    unless told otherwise ("default": the real model)."""
    build_demo_store(path, size="compact", embedder=embedder or FakeEmbedder()).close()
    return path


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Let workers run until ``condition`` holds; fail loudly if it never does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)
    await pilot.pause(0.05)


def showing(app, screen_type) -> bool:
    """A screen of ``screen_type`` is on top, composed and mounted. Pushed is not enough: its
    widgets are not there yet, and a test querying them at once failed now and then (NoMatches)."""
    return isinstance(app.screen, screen_type) and app.screen.is_mounted


def painted(app) -> bool:
    """The screen has no layout, repaint or widget update pending. (The inspector's tables size
    their columns as rows arrive, not when idle as a DataTable does, so there is no more to ask.)"""
    screen = app.screen
    return not (screen._layout_required or screen._repaint_required or screen._dirty_widgets)


async def settle(pilot, app) -> None:
    """Wait until the store is open, a tenant selected, no worker is still running, and the screen
    is painted.

    Idle must hold twice, a pause apart: a worker that has just finished may have posted a
    result the App has not handled yet, and handling it can start more work (a search). Then the
    paint: a dialog opened next freezes the screen below it as last painted, so a pending repaint
    of the results (after a re-search) showed in some snapshots and not in others."""
    from inspector.app import NO_TENANT, is_idle

    # A tenant is selected at start-up; later (after an erasure, a filter) none may be, rightly.
    await wait_for(
        pilot,
        lambda: app.main_screen.tenants and (app.main_screen.user_id is not NO_TENANT or app.main_screen.picked_a_tenant),
        what="tenants",
    )
    while True:
        await wait_for(pilot, lambda: is_idle(app), what="workers")
        await pilot.pause(0.05)
        if is_idle(app):
            break
    await wait_for(pilot, lambda: painted(app), what="paint")


async def open_tenant(pilot, app, user_id) -> None:
    """Select a tenant in the list and wait until its views have loaded."""
    await settle(pilot, app)
    options = app.query_one("#tenants")
    options.focus()
    from inspector.widgets.tenant_list import option_id

    key = option_id(user_id)
    options.highlighted = next(i for i in range(options.option_count) if options.get_option_at_index(i).id == key)
    await wait_for(pilot, lambda: app.main_screen.user_id == user_id, what=f"tenant {user_id}")
    await settle(pilot, app)


async def open_session(pilot, app, session_id: str):
    """Show the Sessions view with ``session_id`` selected and its working memory loaded."""
    from inspector.widgets.views import RecordTable, SessionsView

    app.main_screen.action_show_view("sessions")
    sessions = app.query_one("#sessions-table", RecordTable)
    sessions.focus()
    sessions.move_cursor(row=sessions.get_row_index(session_id))
    view = app.query_one(SessionsView)
    await wait_for(pilot, lambda: view.shown_session == session_id, what=f"session {session_id}")
    await settle(pilot, app)
    return view


class GatedEmbedder(FakeEmbedder):
    """Not warm until the test opens the gate: to watch keyword-first, semantic-later search."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self._warm = False

    @property
    def is_warm(self) -> bool:
        return self._warm

    def warm(self) -> None:
        self.gate.wait(30)
        self._warm = True


def notes(app) -> list[str]:
    """The notifications shown so far (toasts), oldest first."""
    return [n.message for n in app._notifications]


def screen_text(app) -> str:
    """What the terminal shows, as text: the screen as rendered, every layer composited."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def _read_only_probe(path: str) -> dict:
    from inspector.app import make_app
    from inspector.screens.dialogs import ConfirmScreen, FatalScreen, ForgetScreen

    app = make_app(path, embedder=FakeEmbedder(), poll_seconds=0)
    seen: dict = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: not app.opening, what="the store or a message")
        if isinstance(app.screen, FatalScreen):
            seen["fatal"] = str(app.screen.query_one("#fatal").content)
            return seen
        await open_tenant(pilot, app, "alice")
        seen["header"] = app.sub_title
        seen["forget_key_enabled"] = app.screen.active_bindings["f"].enabled
        await pilot.press("f")
        await pilot.pause(0.3)
        seen["forget_dialog"] = isinstance(app.screen, ForgetScreen)
        await open_session(pilot, app, "trip-lisbon")
        app.query_one("#checkpoints-table").focus()
        await pilot.pause(0.1)
        await pilot.press("r")
        await pilot.pause(0.3)
        seen["restore_dialog"] = isinstance(app.screen, ConfirmScreen)
        seen["notes"] = notes(app)
    return seen


def read_only_probe() -> None:
    """Entry point of the subprocess that opens a read-only store in the inspector (run where the
    store really is read-only: another user, or a read-only mount) and prints what it showed."""
    import json
    import sys

    print("PROBE " + json.dumps(asyncio.run(_read_only_probe(sys.argv[1]))))


__all__ = [
    "FROZEN",
    "GatedEmbedder",
    "counting_ids",
    "frozen_clock",
    "make_demo",
    "notes",
    "open_session",
    "open_tenant",
    "painted",
    "read_only_probe",
    "screen_text",
    "settle",
    "showing",
    "wait_for",
]


async def go_to(pilot, app, typed: str) -> None:
    """Type a moment into the timeline's field, as a user would, and wait for the views to show it."""
    from inspector.screens.timeline import TimelineScreen

    await pilot.press("T")
    await wait_for(pilot, lambda: showing(app, TimelineScreen), what="the timeline")
    field = app.screen.query_one("#moment")
    field.focus()
    field.value = typed
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.main_screen.as_of is not None and not showing(app, TimelineScreen), what=f"the views as of {typed}")
    await settle(pilot, app)


def add_traced_recalls(path: Path) -> None:
    """Three recalls alice's agent made with tracing on, at fixed times and latencies (for the
    Recalls tab's snapshots); the clock is left frozen."""
    import sqlite3

    with MemoryStore.open(path, embedder=FakeEmbedder(), trace=True) as s:
        for minutes, query, session, label in (
            (50, "where does alice live", None, "planner"),
            (30, "lisbon trip bookings", "trip-lisbon", "planner"),
            (10, "running plan", None, "coach"),
        ):
            set_clock(lambda m=minutes: FROZEN - timedelta(minutes=m))
            s.recall(query, user_id="alice", session_id=session, label=label, kind="all")
    set_clock(frozen_clock)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE recall_traces SET took_ms = 4.2")  # the one part a run cannot repeat
    conn.commit()
    conn.close()


async def open_recalls(pilot, app, rows: int = 3):
    """Press R for the selected tenant's recalls and wait until ``rows`` of them are listed."""
    from inspector.widgets.views import RecordTable

    await pilot.press("R")
    await wait_for(pilot, lambda: bool(app.screen.query("#recalls-table")), what="the recalls dialog")
    recalls = app.screen.query_one("#recalls-table", RecordTable)
    await wait_for(pilot, lambda: recalls.row_count == rows, what=f"{rows} recalls")
    return recalls
