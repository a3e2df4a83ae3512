"""What a keystroke in the search box costs the screen: no layout pass of the whole screen, for
the key itself or for the results it brings (each pass cost ~10 ms of the 50 ms budget here)."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from textual.app import App
from textual.screen import Screen

from inspector.widgets.results import ResultsTable
from inspector.widgets.tenant_list import NO_TENANT
from inspector.widgets.views import QueryInput, SearchView
from store import MemoryStore


@pytest.fixture
def hits(store):
    for i in range(30):
        store.remember(f"booked the hotel in Lisbon, room {i}", f"confirmation number {1000 + i}", user_id="alice")
    return store.recall("hotel lisbon", user_id="alice", limit=25, kind="all", prefix=True)


class OneSearchView(App):
    """The search view alone, on an App with no store: its own search asks nothing of it."""

    store = None
    user_id = NO_TENANT
    as_of = None
    show_timings = False

    def compose(self):
        yield SearchView(self, id="search-view")


@pytest.fixture
def layouts(monkeypatch):
    """How many times the screen has been laid out since the fixture was made."""
    count = [0]
    real = Screen._refresh_layout

    def counting(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counting)
    return count


async def test_typing_in_the_search_box_lays_nothing_out(layouts):
    app = OneSearchView()
    async with app.run_test(size=(120, 30)) as pilot:
        box = app.query_one("#query", QueryInput)
        box.focus()
        await pilot.pause()
        layouts[0] = 0
        for key in "hotel in lisbon and a few more words than the box is wide, to scroll it":
            await pilot.press("space" if key == " " else key)
        await pilot.pause()
        assert box.value.endswith("to scroll it")
        assert layouts[0] == 0


async def test_results_of_the_same_widths_repaint_without_a_layout(layouts, hits):
    app = OneSearchView()
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(SearchView)
        view.show(hits, "25 results")  # the first results may widen the columns: that needs a layout
        await pilot.pause()
        await pilot.pause()
        layouts[0] = 0
        view.show(hits[::-1], "25 results · semantic + keyword · 12.3 ms")
        await pilot.pause()
        await pilot.pause()
        assert layouts[0] == 0
        assert "12.3 ms" in str(app.query_one("#search-status").render())


async def test_the_same_results_again_keep_the_table_and_its_cursor(store, hits):
    """A keystroke that brings the rows already shown repaints nothing (the cursor stays where
    the user put it); the records behind the rows are the new ones; other rows do repaint."""
    app = OneSearchView()
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(SearchView)
        table = app.query_one("#results")
        view.show(hits, "25 results")
        await pilot.pause()
        table.move_cursor(row=3)
        again = store.recall("hotel lisbon", user_id="alice", limit=25, kind="all", prefix=True)
        assert again == hits and again[3] is not hits[3]
        view.show(again, "25 results")
        await pilot.pause()
        assert table.cursor_row == 3
        assert table.selected() is again[3]
        fewer = store.recall("room 7", user_id="alice", limit=25, kind="all", prefix=True)
        view.show(fewer, f"{len(fewer)} results")
        await pilot.pause()
        assert table.row_count == len(fewer) and table.cursor_row == 0


async def test_results_shown_again_after_the_view_was_cleared_are_painted(hits):
    """A tenant left and picked again (or a filter that hid it) clears the results; the same
    results coming back must fill the table again, not count as already on screen."""
    app = OneSearchView()
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(SearchView)
        table = app.query_one("#results")
        view.show(hits, "25 results")
        await pilot.pause()
        view.clear("no tenant selected")
        await pilot.pause()
        assert table.row_count == 0
        view.show(hits, "25 results")
        await pilot.pause()
        assert table.row_count == len(hits)


def test_the_inspector_paints_up_to_120_frames_a_second_unless_the_user_said_otherwise():
    """At Textual's default 60 a frame waited up to 16.7 ms for its turn after the results were
    in; the setting must be in place before Textual is first imported."""
    import os
    import subprocess
    import sys

    probe = "import inspector.app; from textual import constants; print(constants.MAX_FPS)"
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env).stdout.strip() == "120"
    env["TEXTUAL_FPS"] = "30"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env).stdout.strip() == "30"


async def test_new_results_of_other_widths_repaint_without_a_layout(layouts, hits, store):
    """The results table's size never depends on its rows: a set of results with other column
    widths (or fewer rows, all still overflowing) is drawn without laying the screen out."""
    app = OneSearchView()
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.query_one(SearchView)
        view.show(hits, "25 results")
        await pilot.pause()
        await pilot.pause()
        layouts[0] = 0
        other = store.recall("confirmation 1007", user_id="alice", limit=25, kind="all", prefix=True)
        assert [h.id for h in other] != [h.id for h in hits]
        view.show(other, "other results")
        view.show(hits[:20], "fewer results")
        await pilot.pause()
        await pilot.pause()
        assert layouts[0] == 0
        assert app.query_one("#results").row_count == 20


@asynccontextmanager
async def in_the_results(app: App, hits):
    """``app`` (a OneSearchView) in a short terminal, showing ``hits`` with the focus in them."""
    async with app.run_test(size=(100, 14)) as pilot:
        app.query_one(SearchView).show(hits, "25 results")
        table = app.query_one("#results", ResultsTable)
        table.focus()
        yield pilot, table


async def test_the_results_cursor_moves_scrolls_and_shows_its_record(hits):
    """↓, PageDown, End and a click move the cursor over the rows (the view scrolls with it), and
    the detail pane is told about the record under it."""
    from inspector.widgets.detail import ShowDetail

    shown: list[str] = []

    class Watching(OneSearchView):
        def on_show_detail(self, m: ShowDetail) -> None:
            shown.append(m.title)

    async with in_the_results(Watching(), hits) as (pilot, table):
        await pilot.press("down", "down")
        assert table.cursor_row == 2 and table.selected() is hits[2]
        await pilot.press("end")
        assert table.cursor_row == len(hits) - 1 and table.scroll_y > 0
        await pilot.press("home")
        assert table.cursor_row == 0 and table.scroll_y == 0
        await pilot.press("pagedown")
        assert 0 < table.cursor_row < len(hits) - 1
        await pilot.click(table, offset=(5, 3))  # the header is line 0: line 3 is the third row shown
        assert table.cursor_row == int(table.scroll_y) + 2
        await pilot.pause()
        assert shown and shown[-1] == f"{table.selected().kind} {table.selected().id[:12]}"


async def test_a_memory_that_looks_like_markup_is_shown_as_written(store):
    store.remember("[bold]not bold[/] and [/] alone", user_id="alice")
    hits = store.recall("bold", user_id="alice", kind="all", mode="keyword", prefix=True)
    app = OneSearchView()
    async with app.run_test(size=(120, 12)) as pilot:
        app.query_one(SearchView).show(hits, "1 result")
        await pilot.pause()
        assert "[bold]not bold[/] and [/] alone" in app.query_one("#results").cell_text(0, 2)
        assert "[bold]not bold[/]" in "".join(segment.text for segment in app.query_one("#results").render_line(1))


async def test_moving_the_cursor_in_scrolled_results_repaints_the_rows_it_left_and_reached(hits, monkeypatch):
    """With the rows scrolled, the lines repainted are those of the two rows on screen (the
    header stays on line 0), so the cursor is never drawn on two rows or on none."""
    from textual.geometry import Region

    async with in_the_results(OneSearchView(), hits) as (pilot, table):
        await pilot.press("end")
        await pilot.pause()
        top = int(table.scroll_y)
        assert top > 0
        repainted: list[Region] = []
        real = ResultsTable.refresh

        def refresh(self, *regions, **kwargs):
            repainted.extend(regions)
            return real(self, *regions, **kwargs)

        with monkeypatch.context() as patched:
            patched.setattr(ResultsTable, "refresh", refresh)
            await pilot.press("up")
        last = len(hits) - 1
        assert table.cursor_row == last - 1 and int(table.scroll_y) == top
        assert {r.y for r in repainted} == {1 + last - top, 1 + (last - 1) - top}


def test_a_plain_cell_is_laid_out_as_rich_lays_out_its_text():
    """The results table draws plain cells itself (Rich's render of a Text was most of a row's
    cost at each keystroke): the same cells, cut and padded, as Rich draws them."""
    from hypothesis import given
    from hypothesis import strategies as st
    from rich.console import Console
    from rich.text import Text

    from inspector.widgets.line_table import PADDING, fitted_cell

    console = Console(width=400)

    # A column is at least its header wide: widths from 1.
    @given(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=30), st.integers(1, 24))
    def same(plain: str, width: int) -> None:
        text = Text(plain)
        text.truncate(width, overflow="ellipsis", pad=True)
        text.pad(PADDING)
        assert fitted_cell(plain, width) == "".join(segment.text for segment in text.render(console))

    same()


@pytest.fixture
def long_hits(store):
    tail = "and the physiotherapist said to keep the knee moving with short walks every morning"
    for i in range(30):
        store.remember(f"booked the hotel in Lisbon, room {i}, {tail}", f"confirmation number {1000 + i}", user_id="alice")
    return store.recall("hotel lisbon", user_id="alice", limit=25, kind="all", prefix=True)


async def test_memories_wider_than_the_results_are_cut_to_fit_and_nothing_scrolls_sideways(long_hits):
    """In a wide terminal the memory column is cut (with an ellipsis) so the rows fit: no
    horizontal scrollbar, and new results keep the scrollable size (no scrollbar to redraw)."""
    app = OneSearchView()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one("#results", ResultsTable)
        app.query_one(SearchView).show(long_hits, "25 results")
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert not table.show_horizontal_scrollbar
        line = "".join(segment.text for segment in table.render_line(1))
        assert "…" in line and line.rstrip().endswith(table.cell_text(0, 6))  # cut, and the last column still shown
        size = table.virtual_size
        app.query_one(SearchView).show(long_hits[::-1], "25 results")
        await pilot.pause()
        assert table.virtual_size == size


async def test_in_a_narrow_terminal_the_memory_is_not_cut_to_a_stub(long_hits):
    """Where fitting would leave the memory fewer than NARROWED_AT_LEAST cells, the table keeps
    it whole and scrolls sideways, as at 80 columns before."""
    from inspector.widgets.line_table import NARROWED_AT_LEAST

    app = OneSearchView()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one("#results", ResultsTable)
        app.query_one(SearchView).show(long_hits, "25 results")
        await pilot.pause()
        assert table.virtual_size.width > table.scrollable_content_region.width
        line = "".join(segment.text for segment in table.render_line(1))
        assert table.cell_text(0, 2)[: NARROWED_AT_LEAST + 6] in line  # more of it than a cut would leave


async def test_every_container_between_the_screen_and_the_search_box_is_drawn_blank(tmp_path):
    """Textual draws every container whose parent overlaps a change, whole, at every frame; the
    ones around the search view are declared blank (widgets/backdrops.py), so a keystroke's frame
    draws the search box, the status line and the results rather than every layer of the screen
    under them. A new container on that path must be blank too, or this fails."""
    from .inspector_support import app_for, open_tenant, settle

    path = tmp_path / "one.db"
    with MemoryStore.open(path) as s:
        s.remember("booked the hotel in Lisbon", user_id="alice")
    app = app_for(path, poll_seconds=0)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        layers = [node for node in app.query_one("#results").ancestors if node is not app]
        for changed in ("#query", "#search-status", "#results"):
            assert app.query_one(changed).parent in layers
    drawn = [f"{type(node).__name__}#{node.id}" for node in layers if not node.BLANK]
    assert drawn == [], drawn
