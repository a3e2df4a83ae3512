"""Table cells rendered once per content (inspector.cells): the same segments as DataTable's own
rendering, row and column metadata included, and no Rich rendering for a cell already seen."""

from __future__ import annotations

from rich.markup import escape
from rich.padding import Padding
from rich.text import Text
from textual.app import App
from textual.renderables.styled import Styled
from textual.widgets import DataTable

from inspector.widgets.views import RecordTable

ROWS = [
    ("episode", Text.assemble("booked the ", ("hotel", "bold reverse"), " in Lisbon, room 12"), "0.0164", "0.61 #3", "2026-03-01 10:00"),
    ("fact", "alice diet vegetarian", "0.0159", "-", "2026-02-11 09:30"),
    ("block", "[bold]not markup[/] 東京 wide", "0.0150", "0.44 #9", "-"),
    ("scratchpad", Text("a note far longer than its column is wide, to be cropped at its edge", style="italic"), "0.0101", "", "-"),
]


class OneTable(App):
    def compose(self):
        yield RecordTable("kind", "memory", "fused", "vector", "when", id="t")


def fill(table: RecordTable) -> None:
    table.reset()
    for i, (kind, memory, *rest) in enumerate(ROWS):
        table.add_record(f"r{i}", None, kind, memory, *rest)


async def test_cells_render_exactly_as_datatable_renders_them():
    app = OneTable()
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(RecordTable)
        fill(table)
        table.move_cursor(row=1)
        await pilot.pause()
        for row in range(len(ROWS)):
            for column, col in enumerate(table.ordered_columns):
                for cursor, hover in ((False, False), (True, False), (False, True)):
                    style = table._get_row_style(row, table.rich_style)
                    width = min(col.get_render_width(table), 20) if column == 1 else col.get_render_width(table)
                    ours = table._render_cell(row, column, style, width, cursor, hover)
                    table._cell_render_cache.clear()
                    theirs = DataTable._render_cell(table, row, column, style, width, cursor, hover)
                    assert ours == theirs
                    assert [s.style.meta for s in ours[0]] == [s.style.meta for s in theirs[0]]
                    assert all(s.style.meta == {"row": row, "column": column} for s in ours[0])


async def test_a_cell_seen_before_is_not_rendered_again_after_the_table_is_refilled(monkeypatch):
    app = OneTable()
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(RecordTable)
        fill(table)
        await pilot.pause()
        await pilot.pause()
        first = [strip.text for strip in app.screen._compositor.render_strips()]
        rendered = []
        real = app.console.render_lines

        def render_lines(renderable, options, **kwargs):
            if isinstance(renderable, Styled) and isinstance(renderable.renderable, Padding):  # a cell
                rendered.append(renderable.renderable.renderable)
            return real(renderable, options, **kwargs)

        monkeypatch.setattr(app.console, "render_lines", render_lines)
        fill(table)  # the same rows again, as a keystroke that brings the same results would
        await pilot.pause()
        await pilot.pause()
        assert [strip.text for strip in app.screen._compositor.render_strips()] == first
        headers = {str(column.label) for column in table.ordered_columns}
        assert rendered and {str(cell) for cell in rendered} <= headers  # the header row only


class PlainTable(App):
    def compose(self):
        yield DataTable(cursor_type="row", zebra_stripes=True, id="t")


async def table_lines(app_class) -> list:
    from textual.geometry import Region

    app = app_class()
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one("#t")
        if isinstance(table, RecordTable):
            fill(table)
        else:
            table.add_columns("kind", "memory", "fused", "vector", "when")
            for i, (kind, memory, *rest) in enumerate(ROWS):
                table.add_row(kind, memory.copy() if isinstance(memory, Text) else memory.replace("[", r"\["), *rest, key=f"r{i}")
        table.focus()
        table.move_cursor(row=2)
        await pilot.pause()
        await pilot.pause()
        return [list(strip) for strip in table.render_lines(Region(0, 0, table.size.width, table.size.height))]


async def test_a_whole_table_draws_as_a_plain_datatable_draws_it():
    """Zebra stripes, the cursor row, the header: every segment and style the same."""
    ours, theirs = await table_lines(OneTable), await table_lines(PlainTable)
    shown = 1 + len(ROWS)  # the header and the rows; below them ours fills its pane, a plain one ends
    assert len(theirs) >= shown and ours[:shown] == theirs[:shown]


class TwoTables(App):
    def compose(self):
        yield RecordTable("kind", "memory", "fused", "vector", "when", id="ours")
        yield DataTable(id="theirs")


async def test_columns_are_as_wide_as_datatable_makes_them_and_a_seen_cell_is_not_measured_again(monkeypatch):
    """The widths kept by content (inspector.cells) size the columns exactly as DataTable's own
    measuring sizes a table's fresh columns, through refills with other rows (a refilled table
    fits its new rows only); refilled with rows already seen, nothing is measured."""
    import inspector.widgets.cells

    measured = []
    real = inspector.widgets.cells.measure
    monkeypatch.setattr(inspector.widgets.cells, "measure", lambda *a, **k: measured.append(a[1]) or real(*a, **k))
    app = TwoTables()
    async with app.run_test(size=(120, 20)) as pilot:
        ours, theirs = app.query_one("#ours", RecordTable), app.query_one("#theirs", DataTable)
        wider = [
            ("episode", "a much longer memory than any before it, to widen the column", "0.1", "0.2 #1", "x"),
            ("working-block", Text("bold", style="bold"), "1.00001", "-", "2026-03-01 10:00:00"),
        ]
        for rows in (ROWS, wider, ROWS[:2]):
            ours.reset()
            theirs.clear(columns=True)
            theirs.add_columns("kind", "memory", "fused", "vector", "when")
            for i, row in enumerate(rows):
                ours.add_record(f"r{i}", None, *row)
                theirs.add_row(*(escape(c) if isinstance(c, str) else c for c in row), key=f"r{i}")
            await pilot.pause()
            await pilot.pause()
            assert [c.content_width for c in ours.ordered_columns] == [c.content_width for c in theirs.ordered_columns]
        measured.clear()
        ours.reset()
        for i, row in enumerate(ROWS):
            ours.add_record(f"again{i}", None, *row)
        await pilot.pause()
        await pilot.pause()
        assert ours.row_count == len(ROWS) and measured == []


async def test_a_refilled_table_fits_its_rows_whatever_it_showed_before():
    """The results' widths depended on which intermediate searches were shown before being
    replaced (DataTable's columns only widen): a compare-mode snapshot failed now and then."""
    app = OneTable()
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(RecordTable)

        async def widths_after(*row_sets):
            for rows in row_sets:
                table.reset()
                for i, (kind, memory, *rest) in enumerate(rows):
                    table.add_record(f"r{i}", None, kind, memory, *rest)
                await pilot.pause()
                await pilot.pause()
            return [column.get_render_width(table) for column in table.ordered_columns]

        short = ROWS[1:2]
        alone = await widths_after(short)
        assert await widths_after(ROWS, short) == alone
