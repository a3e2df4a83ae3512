"""The inspector as people use it: one-key actions only on what is visibly selected, keys that do
what they say, every view and dialog usable at 80x24, and failures that show."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from textual.geometry import Region

from inspector import messages as msg
from inspector.app import NO_TENANT
from inspector.screens.dialogs import ConfirmScreen, ExportScreen, FatalScreen, ForgetScreen, ReceiptScreen, StoreAuditScreen
from inspector.screens.help_screen import HELP
from inspector.widgets.results import ResultsTable
from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import (  # noqa: F401 (frozen is a fixture)
    app_for,
    frozen,
    notes,
    open_session,
    open_tenant,
    painted,
    screen_text,
    settle,
    showing,
    wait_for,
)

SMALL = (80, 24)
WIDE = (160, 48)
ROOT = Path(__file__).resolve().parent.parent


def table(app, selector) -> RecordTable | ResultsTable:
    return app.query_one(selector, ResultsTable if selector == "#results" else RecordTable)


def fully_on_screen(app, widget) -> bool:
    """The widget's whole region is on the terminal and nothing covers or clips any of it."""
    region = widget.region
    if region.area == 0 or not Region(0, 0, *app.size).contains_region(region):
        return False
    for y in range(region.y, region.bottom):
        for x in (region.x, region.right - 1):
            found = app.screen.get_widget_at(x, y)[0]
            if found is not widget and widget not in found.ancestors:
                return False
    return True


def footer(app) -> str:
    """The terminal's last line, as shown."""
    return screen_text(app).splitlines()[-1]


def text_in(app, widget) -> str:
    """The words the terminal shows inside ``widget``'s region, lines joined with spaces."""
    r = widget.region
    lines = screen_text(app).splitlines()[r.y : r.bottom]
    return " ".join(" ".join(line[r.x : r.right] for line in lines).split())


# --- safety of the one-key actions ---------------------------------------------------------


async def test_the_forget_dialog_at_80x24_shows_both_buttons_and_every_dry_run_count(demo):
    app = app_for(demo)
    async with app.run_test(size=SMALL) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen) and not app.screen.query_one("#erase").disabled, what="counts")
        await wait_for(pilot, lambda: painted(app), what="paint")  # laid out: regions are where they are drawn
        screen = app.screen
        assert fully_on_screen(app, screen.query_one("#cancel")) and fully_on_screen(app, screen.query_one("#erase"))
        counts = screen.query_one("#forget-counts")
        assert fully_on_screen(app, counts)
        shown = screen_text(app)
        for tier, count in [("kv entries", 4), ("checkpoints", 2), ("facts", 6), ("episodes", 15), ("sessions", 4), ("vectors", 21)]:
            assert tier in shown and str(count) in shown.split(tier, 1)[1].split()[0]
        # Every scope keeps it whole: the one-session scope adds a field.
        screen.query_one("#scope-session").value = True
        await pilot.pause(0.2)
        screen.query_one("#forget-session").value = "trip-packing"
        await wait_for(pilot, lambda: not screen.query_one("#erase").disabled and painted(app), what="session counts")
        assert fully_on_screen(app, screen.query_one("#erase")) and fully_on_screen(app, screen.query_one("#forget-counts"))


@pytest.mark.parametrize("dialog", ["export", "restore"])
async def test_the_export_and_restore_dialogs_at_80x24_show_their_buttons_and_whole_text(demo, dialog):
    app = app_for(demo)
    async with app.run_test(size=SMALL) as pilot:
        await open_tenant(pilot, app, "alice")
        if dialog == "export":
            await pilot.press("e")
            await wait_for(pilot, lambda: showing(app, ExportScreen), what="dialog")
            ids = ("#cancel", "#export", "#export-path")
        else:
            await open_session(pilot, app, "trip-lisbon")
            app.query_one("#checkpoints-table").focus()
            await pilot.press("r")
            await wait_for(pilot, lambda: showing(app, ConfirmScreen), what="dialog")
            ids = ("#no", "#yes", "#question")
        await wait_for(pilot, lambda: painted(app), what="paint")
        for selector in ids:
            assert fully_on_screen(app, app.screen.query_one(selector)), selector
        if dialog == "restore":
            assert text_in(app, app.screen.query_one("#question")).endswith("task state and notes are replaced.")


async def test_the_restore_question_is_not_cut_off_on_a_wide_terminal(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        await open_session(pilot, app, "trip-lisbon")
        app.query_one("#checkpoints-table").focus()
        await pilot.press("r")
        await wait_for(pilot, lambda: showing(app, ConfirmScreen), what="dialog")
        await wait_for(pilot, lambda: painted(app), what="paint")
        question = app.screen.query_one("#question")
        assert fully_on_screen(app, question)
        text = text_in(app, question)
        assert "Restore session trip-lisbon to checkpoint “after hotel hold”?" in text
        assert "Its current keys, task state and notes are replaced." in text


async def test_a_filter_that_hides_the_selected_tenant_leaves_nothing_to_act_on(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        assert table(app, "#episodes-table").row_count == 15
        app.query_one("#tenant-filter").focus()
        await pilot.press(*"bo")
        await wait_for(pilot, lambda: app.query_one("#tenants").option_count == 1, what="filter")
        assert app.query_one("#tenants").highlighted is None
        assert app.main_screen.user_id is NO_TENANT
        assert all(t.row_count == 0 for t in app.query(RecordTable))  # alice is gone from every view
        app.query_one("#tenants").focus()
        await pilot.press("f")
        await pilot.press("e")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, (ForgetScreen, ExportScreen))
        assert sum("no tenant selected" in n for n in notes(app)) == 2
        assert not app.screen.active_bindings["f"].enabled and not app.screen.active_bindings["e"].enabled
        # Picking the tenant the filter shows makes it the one acted on.
        app.query_one("#tenant-filter").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.main_screen.user_id == "bob", what="bob")
        await settle(pilot, app)
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen), what="dialog")
        assert app.screen.user_id == "bob"


async def test_the_command_palette_never_forgets_a_tenant_the_list_does_not_show_selected(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        app.query_one("#tenants").highlighted = None  # the list shows nothing selected, by any route
        await pilot.pause(0.1)
        app.main_screen.action_forget()
        app.main_screen.action_export()
        await pilot.pause(0.2)
        assert not isinstance(app.screen, (ForgetScreen, ExportScreen))


async def test_after_an_erasure_the_store_wide_audit_log_shows_its_entry(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "bob")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen) and not app.screen.query_one("#erase").disabled, what="dialog")
        await pilot.click("#erase")
        await wait_for(pilot, lambda: showing(app, ReceiptScreen), what="receipt")
        digest = app.screen.receipt.digest
        await pilot.press("escape")
        await wait_for(pilot, lambda: all(t.user_id != "bob" for t in app.main_screen.tenants), what="bob gone")
        app.query_one("#tenants").focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: showing(app, StoreAuditScreen) and table(app.screen, "#store-audit-table").row_count, what="audit")
        entries = list(table(app.screen, "#store-audit-table").records.values())
        assert [(e.action, e.user_id, e.digest) for e in entries] == [("forget", "bob", digest)]
        assert "bob" in screen_text(app) and digest[:16] in screen_text(app)
        await pilot.press("escape")
        await pilot.click("#store-audit")  # the button under the list does the same
        await wait_for(pilot, lambda: showing(app, StoreAuditScreen), what="audit again")


async def test_a_store_that_refuses_to_open_for_writing_falls_back_to_read_only(demo, monkeypatch):
    """The fallback for what the look at the file cannot foresee (the real cases run below)."""
    from store.errors import ReadOnlyStoreError

    original = MemoryStore.open

    def refuse_writes(path, **options):
        if not options.get("read_only"):
            raise ReadOnlyStoreError(f"{path} is open read-only")
        return original(path, **options)

    monkeypatch.setattr(MemoryStore, "open", refuse_writes)
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        assert "read-only" in app.sub_title
        assert not app.screen.active_bindings["f"].enabled
        await pilot.press("f")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ForgetScreen)
        assert any("read-only" in n and "forget" in n.lower() for n in notes(app))


def _unshare(*options: str) -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, *options, "true"], capture_output=True).returncode != 0:
        pytest.skip(f"cannot make a real read-only store here: `unshare {' '.join(options)}` is not available")
    return [unshare, *options]


def _probe(argv: list[str], tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
    assert lines, f"the probe printed nothing:\n{done.stdout}\n{done.stderr}"
    return json.loads(lines[-1].removeprefix("PROBE "))


PROBE = [sys.executable, "-c", "from tests.inspector_support import read_only_probe; read_only_probe()"]


def test_a_store_file_this_user_cannot_write_opens_read_only(demo, tmp_path):
    """A real unwritable file: 0444, opened by a user without root's override (a user namespace)."""
    demo.chmod(0o444)
    seen = _probe([*_unshare("--user"), *PROBE, str(demo)], tmp_path)
    assert "read-only" in seen["header"]
    assert not seen["forget_key_enabled"] and not seen["forget_dialog"] and not seen["restore_dialog"]
    assert any("no write permission" in n for n in seen["notes"])
    assert not any("read_only=False" in n for n in seen["notes"])


def test_a_store_whose_shm_file_this_user_cannot_write_opens_read_only(demo, tmp_path):
    """The file and its folder are writable, its -shm is not: SQLite would open it "read-write"
    and fail at the first write; the store names the -shm file instead."""
    holder = sqlite3.connect(demo)  # held open, so its -wal and -shm stay
    holder.execute("SELECT count(*) FROM sqlite_master").fetchone()
    try:
        Path(f"{demo}-shm").chmod(0o444)  # in a user namespace root keeps the owner's bits, not its override
        seen = _probe([*_unshare("--user"), *PROBE, str(demo)], tmp_path)
    finally:
        holder.close()
    assert "fatal" not in seen, seen
    assert "read-only" in seen["header"], seen
    assert not seen["forget_dialog"] and not seen["restore_dialog"]
    assert any("demo.db-shm" in n for n in seen["notes"]), seen["notes"]


def _on_a_read_only_mount(store: Path, side_files: bool) -> list[str]:
    """A command that copies the store onto a fresh tmpfs, remounts it read-only and probes it there."""
    mount = store.parent / "mnt"
    mount.mkdir()
    names = [store.name] + ([f"{store.name}-wal", f"{store.name}-shm"] if side_files else [])
    copy = " && ".join(f"cp '{store.parent / n}' '{mount}/'" for n in names)
    probe = " ".join(f"'{part}'" for part in PROBE)
    script = f"mount -t tmpfs tmpfs '{mount}' && {copy} && mount -o remount,ro '{mount}' && exec {probe} '{mount / store.name}'"
    return [*_unshare("--user", "--map-root-user", "--mount"), "sh", "-c", script]


def test_a_store_on_a_read_only_filesystem_opens_read_only(demo, tmp_path):
    holder = sqlite3.connect(demo)  # held open, so its -wal and -shm exist to be copied along
    holder.execute("SELECT count(*) FROM sqlite_master").fetchone()
    try:
        seen = _probe(_on_a_read_only_mount(demo, side_files=True), tmp_path)
    finally:
        holder.close()
    assert "read-only" in seen["header"], seen
    assert not seen["forget_dialog"] and not seen["restore_dialog"]
    assert any("read-only filesystem" in n for n in seen["notes"])


def test_a_store_on_a_read_only_filesystem_without_its_side_files_still_opens_read_only(demo, tmp_path):
    # Nothing can change a file on a read-only filesystem, so the store opens immutable, with
    # no -shm to create, instead of failing with "unable to open database file".
    seen = _probe(_on_a_read_only_mount(demo, side_files=False), tmp_path)
    assert "fatal" not in seen, seen
    assert "read-only" in seen["header"], seen
    assert not seen["forget_dialog"] and not seen["restore_dialog"]


# --- keyboard and focus ----------------------------------------------------------------------


async def test_digits_in_a_list_switch_tabs_and_leave_the_query_alone(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        query = app.query_one("#query")
        query.value = "lisbon"
        await settle(pilot, app)
        table(app, "#results").focus()
        await pilot.press("2")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "blocks" and app.focused is table(app, "#blocks-table")
        await pilot.press("x", "3")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "episodes" and query.value == "lisbon"
        await pilot.press("1")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "search" and app.focused is table(app, "#results") and query.value == "lisbon"
        # In a text field, digits type.
        await pilot.press("slash", "end", "2")
        assert query.value == "lisbon2" and app.query_one("#tabs").active == "search"


def type_at_once(app, *keys: tuple[str, str | None]) -> None:
    """Keys as a fast typist sends them: all in the App's queue before it handles the first
    (pilot.press waits for the App to go idle after each key, which hides the race)."""
    from textual import events

    for key, character in keys:
        app.post_message(events.Key(key, character))


async def test_a_letter_typed_right_after_slash_lands_in_the_search_box(demo):
    app = app_for(demo)
    async with app.run_test(size=SMALL) as pilot:
        await open_tenant(pilot, app, "alice")
        app.query_one("#tenants").focus()
        await pilot.pause()
        type_at_once(app, ("slash", "/"), ("v", "v"), ("e", "e"))
        query = app.query_one("#query")
        await wait_for(pilot, lambda: app.focused is query and query.value == "ve", what=f"'ve' in the box, not {query.value!r}")
        # In a text field "/" types (the binding has priority, so it must let it through).
        type_at_once(app, ("slash", "/"), ("g", "g"))
        await wait_for(pilot, lambda: query.value == "ve/g", what=f"'ve/g', not {query.value!r}")
        # And in a dialog's text field too: the export path.
        app.query_one("#tenants").focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: showing(app, ExportScreen) and app.screen.query("#export-path"), what="export dialog")
        path = app.screen.query_one("#export-path")
        await wait_for(pilot, lambda: app.focused is path, what="the path field")
        path.value = ""
        type_at_once(app, ("slash", "/"), ("t", "t"))
        await wait_for(pilot, lambda: path.value == "/t", what=f"'/t' in the path, not {path.value!r}")
        assert isinstance(app.screen, ExportScreen) and query.value == "ve/g"


@pytest.mark.parametrize("key", ["down", "enter"])
async def test_down_or_enter_in_the_search_field_goes_to_the_results(demo, key):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("slash", *"lisbon")
        await settle(pilot, app)
        await pilot.press(key)
        await pilot.pause(0.1)
        assert app.focused is table(app, "#results")


async def test_checkpoint_keys_act_only_on_a_checkpoint_the_user_picked(demo):
    from inspector.screens.dialogs import DiffScreen

    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        await open_session(pilot, app, "trip-lisbon")  # the checkpoints are listed, none picked
        for where in ("#sessions-table", "#tenants", "#results"):
            app.query_one(where).focus()
            await pilot.pause(0.1)
            footer_keys = {k for k, b in app.screen.active_bindings.items() if b.binding.show}
            assert not {"d", "r"} & footer_keys, where
            await pilot.press("d", "r")
            await pilot.pause(0.2)
            assert not isinstance(app.screen, (DiffScreen, ConfirmScreen)), where
        assert app.query_one("#tabs").active == "search"  # d and r did not jump to the sessions view
        app.main_screen.action_show_view("sessions")
        table(app, "#checkpoints-table").focus()
        await pilot.pause(0.1)
        assert {"d", "r"} <= {k for k, b in app.screen.active_bindings.items() if b.binding.show}
        await pilot.press("d")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="diff")


async def test_the_footer_shows_the_keys_of_what_has_focus(demo):
    app = app_for(demo)
    async with app.run_test(size=SMALL) as pilot:
        await open_tenant(pilot, app, "alice")
        # The footer is composed again after a focus change, in later frames: wait for the one
        # that says what the test expects (a fixed pause saw a blank footer under load).
        app.query_one("#tenants").focus()
        await wait_for(
            pilot,
            lambda: "a Audit log" in footer(app) and "q Quit" in footer(app) and "t Tenants" not in footer(app),
            what="the tenant list's keys",
        )
        app.query_one("#query").focus()
        # In a text field they type: the footer offers the way on to the results, and neither.
        await wait_for(
            pilot,
            lambda: "↓ Results" in footer(app) and "q Quit" not in footer(app) and "f Forget" not in footer(app),
            what="the search field's keys",
        )


def test_the_help_covers_tab_the_mouse_the_filters_and_every_key():
    from inspector.app import MemlensApp
    from inspector.widgets.views import CheckpointsTable, SearchView

    text = HELP.lower()
    for topic in ("`tab`", "mouse", "filters", "history", "until"):
        assert topic in text, topic
    keys = {b.key for cls in (MemlensApp, CheckpointsTable) for b in cls.BINDINGS} | {"a", "down", "enter", "ctrl+p"}
    names = {"slash": "/", "question_mark": "?", "escape": "escape", "left_square_bracket": "[", "right_square_bracket": "]"}
    for key in keys:
        shown = names.get(key, key)
        assert f"`{shown}`" in HELP or (shown.isdigit() and "`1`–`6`" in HELP) or (key == "down" and "↓" in HELP), key
    assert {b.key for b in SearchView.BINDINGS} <= {"down"}


@pytest.mark.parametrize("keys", [["slash", "q"], ["slash", "ctrl+c"], ["1", "t", "q"]])
async def test_on_the_cannot_open_screen_q_and_ctrl_c_always_quit(tmp_path, keys):
    path = tmp_path / "notes.db"
    path.write_bytes(b"just some notes\n")
    app = app_for(path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: showing(app, FatalScreen), what="message")
        for key in keys:
            await pilot.press(key)
        await wait_for(pilot, lambda: not app.is_running, what="quit", timeout=5)


# --- layout and what is shown ------------------------------------------------------------------


async def test_at_80x24_every_tab_label_the_quit_key_and_the_session_detail_fit(demo):
    app = app_for(demo)
    async with app.run_test(size=SMALL) as pilot:
        await open_tenant(pilot, app, "alice")
        await open_session(pilot, app, "trip-lisbon")
        await pilot.pause(0.2)
        top = screen_text(app).splitlines()[1]
        assert all(label in top for label in ("Search", "Blocks", "Episodes", "Facts", "Sessions", "Audit"))
        detail = app.query_one(".session-detail")
        assert detail.region.width >= 45 and table(app, "#kv-table").region.width >= 45
        app.query_one("#tenants").focus()
        await wait_for(pilot, lambda: "q Quit" in footer(app), what="q Quit in the footer")
        app.main_screen.action_show_view("search")
        fields = ("#search-kind", "#search-session", "#search-since", "#search-until")
        # Waited for, not a fixed pause: on a loaded machine the tab's layout can take longer than
        # 0.2 s to be refreshed (CI once found the kind field not yet placed).
        await wait_for(pilot, lambda: all(fully_on_screen(app, app.query_one(f)) for f in fields), what="the search filters placed")
        for field in fields:
            assert fully_on_screen(app, app.query_one(field)), field


async def test_the_detail_pane_clears_on_tab_and_tenant_change(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("episodes")
        episodes = table(app, "#episodes-table")
        episodes.focus()
        episode = episodes.selected()
        await wait_for(pilot, lambda: episode.id[:12] in str(app.query_one("#detail").border_title), what="detail")
        await pilot.click("#--content-tab-blocks")
        await pilot.pause(0.2)
        assert app.query_one("#tabs").active == "blocks"
        assert episode.id[:12] not in app.query_one("#detail").border_title and episode.input not in screen_text(app)
        await pilot.click("#--content-tab-episodes")
        episodes.focus()
        await wait_for(pilot, lambda: episode.id[:12] in str(app.query_one("#detail").border_title), what="detail again")
        await open_tenant(pilot, app, "bob")
        assert episode.id[:12] not in app.query_one("#detail").border_title and episode.input not in screen_text(app)


async def test_an_erased_tenants_records_leave_the_screen(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "bob")
        app.main_screen.action_show_view("episodes")
        episodes = table(app, "#episodes-table")
        episodes.focus()
        episode = episodes.selected()
        await wait_for(pilot, lambda: episode.id[:12] in str(app.query_one("#detail").border_title), what="detail")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen) and not app.screen.query_one("#erase").disabled, what="dialog")
        await pilot.click("#erase")
        await wait_for(pilot, lambda: showing(app, ReceiptScreen), what="receipt")
        await pilot.press("escape")
        await wait_for(pilot, lambda: all(t.user_id != "bob" for t in app.main_screen.tenants), what="bob gone")
        await settle(pilot, app)
        assert app.main_screen.user_id is NO_TENANT and app.query_one("#tenants").highlighted is None
        assert all(t.row_count == 0 for t in app.query(RecordTable))
        assert episode.input not in screen_text(app) and episode.id[:12] not in screen_text(app)


async def test_the_facts_headline_counts_what_is_shown_with_history(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("facts")
        status = app.query_one("#facts-status")
        assert str(status.render()) == "4 facts believed now"
        app.query_one("#facts-history").value = True
        await wait_for(pilot, lambda: table(app, "#facts-table").row_count == 6, what="history")
        assert str(status.render()) == "6 facts: 4 believed now, 2 superseded"


async def test_the_chosen_theme_is_kept_between_runs(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_CONFIG_DIR", str(tmp_path / "config"))
    first = app_for(demo)
    async with first.run_test(size=SMALL) as pilot:
        await settle(pilot, first)
        assert first.theme != "nord"
        first.theme = "nord"
        await pilot.pause(0.1)
    assert json.loads((tmp_path / "config" / "inspector.json").read_text())["theme"] == "nord"
    second = app_for(demo)
    async with second.run_test(size=SMALL) as pilot:
        await settle(pilot, second)
        assert second.theme == "nord"
    monkeypatch.setenv("MEMLENS_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert app_for(demo).theme != "nord"  # the file, not the process, carried it


async def test_a_damaged_store_gets_a_message_that_stays(demo):
    conn = sqlite3.connect(demo)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'episodes'").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(demo, "r+b") as handle:  # noqa: ASYNC230 (before the app starts: nothing else runs on the loop)
        # the episodes table's root page: the file opens, its episodes do not read
        handle.seek((root - 1) * page_size)
        handle.write(b"\xff" * page_size)
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await wait_for(pilot, lambda: showing(app, FatalScreen), what="the message")
        shown = str(app.screen.query_one("#fatal").content)
        assert "cannot read" in shown and "damaged" in shown  # opened fine; found damaged while reading
        await pilot.press("slash", "1", "escape", "t")
        await pilot.pause(0.5)
        assert isinstance(app.screen, FatalScreen) and "damaged" in screen_text(app)


# --- failures are visible ---------------------------------------------------------------------


async def test_a_search_that_raises_is_shown_and_the_next_keystroke_searches_again(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        real = app.store.recall
        failures = []

        def recall_once_broken(*args, **kwargs):
            if not failures:
                failures.append(1)
                raise RuntimeError("the index fell over")
            return real(*args, **kwargs)

        app.store.recall = recall_once_broken
        app.query_one("#query").value = "lisb"  # one search, the one that fails
        status = app.query_one("#search-status")
        await wait_for(pilot, lambda: "the index fell over" in str(status.render()), what="the error")
        assert any("the index fell over" in n for n in notes(app))
        await pilot.press("slash", "end", "o")
        results = table(app, "#results")
        await wait_for(pilot, lambda: results.row_count > 0 and "results" in str(status.render()), what="results again")
        searching = app.main_screen.search_view().search
        assert searching.thread.worker is not None and searching.thread.worker.is_running


async def test_a_failing_load_is_reported_and_the_app_stays_usable(demo):
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        app.store.working = lambda **_: (_ for _ in ()).throw(RuntimeError("blocks table unreadable"))
        await open_tenant(pilot, app, "bob")
        assert any("blocks table unreadable" in n for n in notes(app))
        assert table(app, "#episodes-table").row_count == 12  # the rest of bob's views loaded


@pytest.mark.parametrize("key, method", [("T", "timeline"), ("f", "forget"), ("a", "audit_log")])
async def test_a_dialog_whose_load_fails_says_so_and_closes(demo, key, method):
    """The dialogs load what they show in workers of their own: a bug there (not a store
    error) is shown like any other worker's, and the dialog still closes."""
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "alice")
        setattr(app.store, method, lambda *_, **__: (_ for _ in ()).throw(RuntimeError(f"{method} unreadable")))
        app.query_one("#tenants").focus()
        await pilot.pause(0.1)
        await pilot.press(key)
        await wait_for(pilot, lambda: any(f"{method} unreadable" in n for n in notes(app)), what="the failure shown")
        assert len(app.screen_stack) == 2
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(app.screen_stack) == 1, what="the dialog closed")


async def test_an_os_error_while_opening_is_shown_not_left_at_opening(demo, monkeypatch):
    import inspector.opening

    def broken(path, embedder):
        raise OSError(5, "Input/output error", str(path))

    monkeypatch.setattr(inspector.opening, "open_for_inspection", broken)
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await wait_for(pilot, lambda: showing(app, FatalScreen), what="the message")
        assert "Input/output error" in str(app.screen.query_one("#fatal").content)
        assert "opening" not in app.sub_title


async def test_an_unexpected_error_while_opening_is_shown(demo, monkeypatch):
    import inspector.opening

    monkeypatch.setattr(inspector.opening, "open_for_inspection", lambda path, embedder: 1 / 0)
    app = app_for(demo)
    async with app.run_test(size=WIDE) as pilot:
        await wait_for(pilot, lambda: showing(app, FatalScreen), what="the message")
        assert "ZeroDivisionError" in str(app.screen.query_one("#fatal").content)


def test_each_loaded_result_has_its_own_message_class():
    results = [msg.BlocksLoaded, msg.EpisodesLoaded, msg.FactsLoaded, msg.SessionsLoaded, msg.SessionLoaded, msg.AuditLoaded]
    assert all(issubclass(cls, msg.TenantResult) for cls in results)
    assert not hasattr(msg, "ViewLoaded")


@pytest.mark.parametrize("description", ["[/]", "[@click=app.quit]quit[/]", "[bold]bold[/bold]"])
async def test_a_checkpoint_description_is_text_when_the_user_marks_it(demo, description):
    """Agent-written text is never markup: marking a checkpoint described as `[/]` crashed the
    app, and an action link in a description became a live link in the toast."""
    with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
        s.session("trip-lisbon", user_id="alice").create_checkpoint(description)
    app = app_for(demo)
    async with app.run_test(size=WIDE, notifications=True) as pilot:  # tests show no toasts unless asked
        await open_tenant(pilot, app, "alice")
        await open_session(pilot, app, "trip-lisbon")
        checkpoints = table(app, "#checkpoints-table")
        checkpoints.focus()
        key = next(k for k, record in checkpoints.records.items() if record.description == description)
        checkpoints.move_cursor(row=checkpoints.get_row_index(key))
        await pilot.pause(0.1)
        await pilot.press("m")
        await wait_for(pilot, lambda: any(description in n for n in notes(app)), what="the notification")
        assert notes(app)[-1].startswith(f"marked checkpoint {description};")
        # As markup, the toast would show "bold" or a link reading "quit", not what was written.
        await wait_for(pilot, lambda: app.screen.query("Toast"), what="the toast")
        shown = " ".join(str(toast.render()) for toast in app.screen.query("Toast")).replace("\n", " ")
        assert f"marked checkpoint {description};" in shown, shown
        assert app.is_running and app.return_code is None


async def test_a_tenant_name_with_a_control_character_is_told_apart_from_its_look_alike(tmp_path):
    """Rich drops control characters when it renders: listed raw, "eve" and "eve\\x07" looked the
    same, and the forget dialog would not have shown which of them it erases."""
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder=FakeEmbedder()) as s:
        for user in ("eve", "eve\x07"):
            s.remember("hello", "hi", user_id=user)
    app = app_for(db)
    async with app.run_test(size=WIDE) as pilot:
        await open_tenant(pilot, app, "eve\x07")
        options = app.query_one("#tenants")
        names = [str(options.get_option_at_index(i).prompt).splitlines()[0] for i in range(options.option_count)]
        assert sorted(names) == ["eve", "eve\\x07"], names
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen), what="the forget dialog")
        assert "Erase memory of eve\\x07" in screen_text(app)
