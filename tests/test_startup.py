"""The inspector's first seconds: tenant names on screen before the store has opened."""

from __future__ import annotations

import sqlite3
import threading

import pytest

import store.glance
from inspector.screens.dialogs import FatalScreen
from inspector.widgets.views import RecordTable
from store import MemoryStore

from .inspector_support import app_for, frozen, settle, showing, wait_for  # noqa: F401 (fixtures)

SIZE = (150, 48)


@pytest.fixture
def held_open(monkeypatch):
    """MemoryStore.open, called by the app's workers, waits until the test sets the returned event
    (as if SQLAlchemy were slow to import). The test's own opens, on the main thread, do not wait."""
    release = threading.Event()
    real = MemoryStore.open.__func__

    def slow_open(cls, *args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            assert release.wait(30), "the test never let the store open"
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(MemoryStore, "open", classmethod(slow_open))
    yield release
    release.set()


def labels(app) -> list[str]:
    options = app.query_one("#tenants")
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_tenant_names_show_while_the_store_is_still_opening(demo, held_open):
    with MemoryStore.open(demo) as opened:
        expected = [t.user_id or "(anonymous)" for t in opened.tenants()]
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.query("#tenants") and app.query_one("#tenants").option_count, what="the names")
        assert app.store is None and app.opening
        assert [label.splitlines()[0] for label in labels(app)] == expected
        assert all("counting…" in label for label in labels(app))
        await pilot.press("e")  # a tenant is highlighted, but there is nothing to export it from yet
        await pilot.pause(0.1)
        assert [n.message for n in app._notifications] == ["Export: the store is still opening"]
        held_open.set()
        await settle(pilot, app)
        assert [label.splitlines()[0] for label in labels(app)] == expected
        assert all("episodes" in label and "active" in label for label in labels(app))


async def test_a_tenant_picked_from_the_names_gets_its_views_once_the_store_opens(demo, held_open):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.query("#tenants") and app.query_one("#tenants").option_count, what="the names")
        options = app.query_one("#tenants")
        options.focus()
        options.highlighted = next(i for i in range(options.option_count) if options.get_option_at_index(i).id == "user:bob")
        await wait_for(pilot, lambda: app.main_screen.user_id == "bob")
        held_open.set()
        await settle(pilot, app)
        assert app.main_screen.user_id == "bob"
        blocks = app.query_one("#blocks-table", RecordTable)
        assert blocks.row_count == 2  # bob's two blocks (alice has three)


async def test_names_of_a_store_that_then_fails_to_open_give_way_to_the_reason(demo):
    conn = sqlite3.connect(demo)
    conn.execute("UPDATE memlens_meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: showing(app, FatalScreen), what="the failure screen")
        assert "schema version 99" in str(app.screen.query_one("#fatal").content)
        assert not app.query_one("#main").display


async def test_names_read_too_slowly_never_replace_the_counted_tenants(demo, monkeypatch):
    release = threading.Event()
    real = store.glance.tenant_names

    def slow_names(path, **kwargs):
        release.wait(30)
        return real(path, **kwargs)

    monkeypatch.setattr(store.glance, "tenant_names", slow_names)
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        # The first frame gave up waiting for the names; the store opened and counted without them.
        await wait_for(pilot, lambda: labels(app) and all("episodes" in label for label in labels(app)), what="counted tenants")
        counted = labels(app)
        release.set()
        await settle(pilot, app)  # the late names have arrived and been handled
        assert labels(app) == counted


async def test_start_up_objects_sit_out_garbage_collection_until_the_app_exits(demo):
    """Full collections scanned everything start-up built (130-270 ms pauses while typing);
    the App freezes it once open, and unfreezes at exit so Apps run one after another (tests)
    leave their objects to the collector."""
    import gc

    assert gc.get_freeze_count() == 0
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert gc.get_freeze_count() > 10_000
    assert gc.get_freeze_count() == 0


async def test_quitting_at_the_first_frame_leaves_no_error(demo):
    """The tier views mount and the store opens just after the first frame; a q pressed at that
    frame used to end in a MountError for a screen already taken down."""
    app = app_for(demo)
    first = app._display

    def display(screen, renderable):
        first(screen, renderable)
        if renderable is not None:
            app.exit()

    app._display = display
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
    assert app.return_code == 0 and app.store is None


async def test_a_tenant_highlight_that_arrives_after_the_list_has_gone_is_ignored(demo):
    """While the App closes, a highlight posted a moment before (a reload after an erasure) can
    arrive once the tenant list has been removed; querying for the list then raised NoMatches."""
    from textual.widgets import OptionList

    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        options = app.query_one("#tenants", OptionList)
        chosen = app.main_screen.user_id
        await options.remove()
        app.post_message(OptionList.OptionHighlighted(options, options.get_option_at_index(1), 1))
        await pilot.pause()
        assert app.is_running and app.main_screen.user_id == chosen  # (and run_test raises what the App raised)


def test_the_first_frame_imports_neither_the_tier_views_nor_the_dialogs():
    """They come after it (inspector/app.py): importing them and their widgets (DataTable, Select,
    RadioSet...) for the first frame was part of the wait for the tenant names."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import json, sys, inspector.app; print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('inspector.', 'textual.widgets._', 'textual.renderables.sparkline')))))"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    later = {
        "inspector.widgets.views",
        "inspector.screens.dialogs",
        "inspector.widgets.detail",
        "inspector.widgets.cells",
        "textual.widgets._data_table",
        "textual.widgets._radio_set",
        "textual.widgets._radio_button",
        # The tabs and the detail pane (its sparkline) are mounted after the first frame too.
        "inspector.widgets.overview",
        "textual.widgets._tabbed_content",
        "textual.widgets._content_switcher",
        "textual.widgets._tabs",
        "textual.widgets._sparkline",
        "textual.renderables.sparkline",
    }
    assert loaded & later == set(), sorted(loaded & later)
