"""RecordTable, the table every view uses: what it draws must not depend on when frames happen."""

from __future__ import annotations

from textual.app import App

from inspector.widgets.views import RecordTable

MEMORY = "a memory much wider than its column label"


class OneTable(App):
    def compose(self):
        yield RecordTable("kind", "memory", id="table")


async def test_rows_are_drawn_at_full_width_by_the_first_frame_after_they_are_added():
    """With DataTable a frame could come between adding rows and the idle moment it measured
    them (on a busy machine, or as a dialog opened), and drew the cells cut to the old column
    widths, which its cache then kept. The widths now follow each row as it is added."""
    app = OneTable()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        table.add_record("a", None, "episode", MEMORY)
        assert f"episode  {MEMORY}" in table.render_line(1).text  # what a frame drawn right now shows
        await pilot.pause()
        await pilot.pause()
        assert "kind     memory" in table.render_line(0).text
        assert f"episode  {MEMORY}" in table.render_line(1).text


async def test_a_table_refilled_with_narrower_rows_shows_them_at_their_own_widths():
    """A refill starts from the headers' widths (the columns fit only the rows shown), and the
    new widths reach the screen: no cell drawn before the rows were measured stays cut. That
    a row drawn before is not drawn again is test_line_table's."""
    app = OneTable()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(RecordTable)
        table.add_record("a", None, "episode", MEMORY)
        await pilot.pause()
        await pilot.pause()
        table.reset()
        table.add_record("b", None, "fact", "short")
        await pilot.pause()
        await pilot.pause()
        assert " fact  short" in table.render_line(1).text


async def test_cells_are_shown_as_written_never_read_as_markup():
    """Memories are user text: "[/]" in one crashed the inspector (MarkupError), "[bold]" was
    rendered as bold and vanished from what the user read."""
    app = OneTable()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(RecordTable)
        table.add_record("a", None, "episode", "please [bold]remember[/bold] this")
        table.add_record("b", None, "episode", "close the tag [/] now")
        await pilot.pause()
        await pilot.pause()
        assert "please [bold]remember[/bold] this" in table.render_line(1).text
        assert "close the tag [/] now" in table.render_line(2).text
