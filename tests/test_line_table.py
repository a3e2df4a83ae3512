"""The line table every list of records and the search results are drawn with
(inspector.widgets.line_table): it draws what a DataTable with a row cursor and zebra stripes
draws, character by character and style by style, and draws a row it has drawn before from its
cache, without Rich."""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import App
from textual.geometry import Region
from textual.widgets import DataTable

import inspector.widgets.line_table
from inspector.screens.timeline import ChangesTable
from inspector.widgets.views import RecordTable

COLUMNS = ("kind", "memory", "fused", "vector", "when")
ROWS = [
    ("episode", Text.assemble("booked the ", ("hotel", "bold reverse"), " in Lisbon, room 12"), "0.0164", "0.61 #3", "2026-03-01 10:00"),
    ("fact", "alice diet vegetarian", "0.0159", "-", "2026-02-11 09:30"),
    ("block", "[bold]not markup[/] 東京 wide", "0.0150", "0.44 #9", "-"),
    ("scratchpad", Text("a note far longer than its column is wide, to be cropped at its edge", style="italic"), "0.0101", "", "-"),
]
WIDER = [
    ("episode", "a much longer memory than any before it, to widen the column", "0.1", "0.2 #1", "x"),
    ("working-block", Text("bold", style="bold"), "1.00001", "-", "2026-03-01 10:00:00"),
]


def fill(table: RecordTable, rows=ROWS) -> None:
    table.reset()
    for i, row in enumerate(rows):
        table.add_record(f"r{i}", None, *row)


def fill_datatable(table: DataTable, rows=ROWS) -> None:
    table.clear(columns=True)
    table.add_columns(*COLUMNS)
    for i, row in enumerate(rows):
        table.add_row(*(c.copy() if isinstance(c, Text) else escape(c) for c in row), key=f"r{i}")


def characters(strips) -> list[list[tuple[str, object]]]:
    """Each line as (character, style) pairs, without the mouse metadata DataTable adds to its
    cells: what a terminal shows, however the segments are cut."""
    return [
        [(char, segment.style.clear_meta_and_links() if segment.style else None) for segment in strip for char in segment.text]
        for strip in strips
    ]


class Both(App):
    def compose(self):
        yield RecordTable(*COLUMNS, id="ours")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="theirs")


async def drawn(pilot, table, rows: int) -> list:
    await pilot.pause()
    await pilot.pause()
    return characters(table.render_lines(Region(0, 0, table.size.width, 1 + rows)))


async def test_a_table_draws_as_a_datatable_with_a_row_cursor_and_zebra_stripes():
    """The header, the stripes, the cursor row focused and not, plain and styled cells, markup-like
    text, a wide character and a cell cut by the table's edge: every character in the same style,
    and after refills with wider and narrower rows (a refilled table fits only its new rows)."""
    app = Both()
    async with app.run_test(size=(100, 30)) as pilot:
        ours, theirs = app.query_one("#ours", RecordTable), app.query_one("#theirs", DataTable)
        for rows in (ROWS, WIDER, ROWS[1:2], ROWS):
            fill(ours, rows)
            fill_datatable(theirs, rows)
            for focused in (True, False):
                for cursor in range(len(rows)):
                    shown = []
                    for table in (ours, theirs):
                        app.set_focus(table if focused else None)
                        table.move_cursor(row=cursor)
                        shown.append(await drawn(pilot, table, len(rows)))
                    assert shown[0] == shown[1], (rows, focused, cursor)


async def test_a_row_drawn_before_is_not_drawn_again_after_the_table_is_refilled(monkeypatch):
    app = Both()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one("#ours", RecordTable)
        fill(table)
        first = await drawn(pilot, table, len(ROWS))
        cells = []
        real = inspector.widgets.line_table.fitted_cell
        monkeypatch.setattr(inspector.widgets.line_table, "fitted_cell", lambda plain, width: cells.append(plain) or real(plain, width))
        fill(table)  # the same rows again, as a view reloaded while nothing changed
        assert await drawn(pilot, table, len(ROWS)) == first
        assert cells == []
        fill(table, WIDER)  # the counter is in effect: new rows are drawn
        await drawn(pilot, table, len(WIDER))
        assert "x" in cells


class OneTable(App):
    def __init__(self):
        super().__init__()
        self.heard: list[tuple[str, int, str]] = []

    def compose(self):
        yield ChangesTable("kind", "memory", id="t")  # a record table whose enter selects (the timeline's)

    @on(RecordTable.RowHighlighted)
    @on(RecordTable.RowSelected)
    def _heard(self, m: RecordTable.RowHighlighted) -> None:
        self.heard.append((type(m).__name__, m.cursor_row, m.key))


async def test_the_first_row_and_every_move_are_said_and_enter_selects():
    app = OneTable()
    heard = app.heard
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(RecordTable)
        table.focus()
        table.add_record("a", None, "episode", "one")
        table.add_record("b", None, "episode", "two")
        await pilot.pause()
        await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.click(RecordTable, offset=(3, 1))  # the first row: a move, not a selection
        await pilot.click(RecordTable, offset=(3, 1))  # the row under the cursor: selected
        await pilot.pause()
        assert heard == [("RowHighlighted", 0, "a"), ("RowHighlighted", 1, "b"), ("RowSelected", 1, "b")] + [
            ("RowHighlighted", 0, "a"),
            ("RowSelected", 0, "a"),
        ]
        assert table.selected_key() == "a" and table.get_row_at(1) == ["episode", "two"]


async def test_a_cell_with_a_newline_or_control_codes_stays_on_its_own_line():
    app = OneTable()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(RecordTable)
        table.add_record("a", None, "episode", "first line\nsecond\tline\x07")
        table.add_record("b", None, "fact", "next row")
        await pilot.pause()
        assert table.render_line(1).text.startswith(" episode  first line second line ")
        assert table.render_line(2).text.startswith(" fact     next row ")
