"""A table drawn line by line from cached rows (Textual's line API): the search results and every
list of records (episodes, facts, sessions, the audit log, the timeline, the recalls).

Textual's DataTable renders each visible cell through Rich again after every change of the table
(a view reloaded while the agent writes, the next page of episodes, a tenant picked again), and
measures every new cell when it next goes idle. The inspector used to cache both by content
through overrides of DataTable's private methods, which every Textual release may change (and
whose width cache outlived new widths: textual#3533, #4470). Here a row is drawn once per
content, column widths and style, from public API only: a new set of rows is one refresh of the
lines on screen, and the scrollable size only changes with the number of rows that do not fit.

It looks and moves like a DataTable with a row cursor and zebra stripes (the same component
styles), and posts the same two messages: ``RowHighlighted`` when the cursor lands on a row (a
move, or the first row of an empty table) and ``RowSelected`` on Enter or a click on the cursor
row. Cells are plain text or Rich Text, never read as markup (a memory holding "[/]" shows as
written).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.control import strip_control_codes
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Offset, Region, Size
from textual.reactive import Reactive, reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..messages import Carrier
from .detail import ShowDetail

CACHED_ROWS = 512  # a few screens of rows, each kept per content, widths and style
PADDING = 1  # cells each side of a column, as DataTable's
NARROWED_AT_LEAST = 24  # cells of the narrowing column left when it is cut to fit the table


Cell = str | Text
"""A cell as drawn: plain text (most cells: a kind, a score, a time), or Rich Text where it has
styles (the memory with its matched words)."""


def _cell(cell: Any) -> Cell:
    """A cell as shown, on one line, without control codes (which Rich Text would strip): plain
    text stays a string, a fifth of the cost of a Text at every keystroke's 175 cells."""
    if isinstance(cell, Text):
        return cell
    text = str(cell)
    if "\n" in text or "\t" in text:
        text = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    return strip_control_codes(text)


def _plain(cell: Cell) -> str:
    return cell if isinstance(cell, str) else cell.plain


def fitted_cell(plain: str, width: int) -> str:
    """``plain`` in ``width`` cells, cut with an ellipsis or padded, with the column's padding: as
    ``Text.truncate(width, overflow="ellipsis", pad=True)`` then ``pad(PADDING)`` lay it out (``width``
    is at least 1: a column is at least its header wide)."""
    # By hand where it can be: set_cell_size measures grapheme by grapheme, and was a third of
    # a row's drawing (the score bars to pad, the memories cut to fit the table).
    length = cell_len(plain)
    if length > width:
        one_cell_each = plain.isascii() and length == len(plain)
        plain = (plain[: width - 1] if one_cell_each else set_cell_size(plain, width - 1)) + "…"
    elif length < width:
        plain += " " * (width - length)
    return " " * PADDING + plain + " " * PADDING


def row_width(widths: Sequence[int]) -> int:
    """A row's cells of columns ``widths`` wide, with their padding."""
    return sum(widths) + 2 * PADDING * len(widths)


def _cell_key(cell: Any) -> tuple:
    if isinstance(cell, Text):
        return (cell.plain, tuple(cell.spans), cell.style)
    return (str(cell),)


class LineTable(ScrollView, can_focus=True):
    """Rows of cells under a header, with a row cursor; each row has a key and a record."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"table--header", "table--cursor", "table--even-row"}
    DEFAULT_CSS = """
    LineTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        &:focus {
            background-tint: $foreground 5%;
            & > .table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .table--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    # The arrows, PageUp/PageDown, Home and End are a scrollable widget's own keys (as in any
    # Textual list); here they move the cursor, which scrolls the rows with it.

    cursor_row: reactive[int] = reactive(0, init=False)
    # Widget's virtual_size asks for a layout of the whole screen whenever it changes (14 ms a
    # pass, at most keystrokes when the widest memory set the scrollable width). The widget's own
    # size never depends on it, only its scrollbars do: watch_virtual_size updates them.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    class RowHighlighted(Carrier):
        """The cursor is on row ``cursor_row`` (key ``key``)."""

        table: Any
        cursor_row: int
        key: str

        @property
        def control(self) -> Any:
            return self.table

    class RowSelected(RowHighlighted):
        """Enter, or a click on the row under the cursor."""

    def __init__(self, *columns: str, render: Callable[[Any], tuple[str, Any]] | None = None, narrowing: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.columns = columns
        self.narrowing = narrowing
        """The column cut (with an ellipsis) so that the rows fit the table's width (``_fitted``),
        or None to scroll sideways instead. Rows that fit need no horizontal scrollbar, and a new
        set of rows keeps the scrollable size, so the scrollbars are not drawn again."""
        self.render_detail = render
        self.records: dict[str, Any] = {}
        self._keys: list[str] = []
        self._rows: dict[str, int] = {}
        self._cells: list[tuple[Cell, ...]] = []
        self._cell_keys: list[tuple] = []
        self._natural: tuple[int, ...] = tuple(cell_len(c) for c in columns)
        """Each column's width as its widest cell (or header) would have it."""
        self._widths = self._natural
        self._strips: LRUCache[tuple, Strip] = LRUCache(CACHED_ROWS)
        self._style: Style | None = None
        self._fills: dict[str, Style] = {}  # each component's style to the table's edge, kept as _style is
        self._drawing: tuple[Offset, int] | None = None  # the scroll and width, while lines are drawn

    # The rows.

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def row_keys(self) -> list[str]:
        """The rows' keys, top to bottom."""
        return list(self._keys)

    def get_row_at(self, row: int) -> list[Cell]:
        """The cells of row ``row`` as shown."""
        return list(self._cells[row])

    def get_row_index(self, key: str) -> int:
        return self._rows[key]

    def cell_text(self, row: int, column: int) -> str:
        """What a cell shows, as plain text."""
        return _plain(self._cells[row][column])

    def _replace_rows(self, rows: list[tuple[str, Any, tuple[Any, ...]]]) -> bool:
        """The rows become ``rows``; False when they are the ones already shown (only their records
        are new)."""
        keys = [key for key, _, _ in rows]
        cell_keys = [tuple(_cell_key(c) for c in cells) for _, _, cells in rows]
        self.records = {key: record for key, record, _ in rows}
        if keys == self._keys and cell_keys == self._cell_keys:
            return False
        self._keys, self._cell_keys = keys, cell_keys
        self._rows = {key: i for i, key in enumerate(keys)}
        self._cells = [tuple(_cell(c) for c in cells) for _, _, cells in rows]
        # The widths fit the rows shown (and the headers), as DataTable's did after a reset.
        self._natural = tuple(
            max([cell_len(header), *(cell_len(_plain(row[i])) for row in self._cells)]) for i, header in enumerate(self.columns)
        )
        self._resize()
        self.set_reactive(LineTable.cursor_row, 0)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()
        return True

    def _append_row(self, key: str, record: Any, cells: tuple[Any, ...]) -> None:
        first = not self._keys
        shown, cell_keys = tuple(_cell(c) for c in cells), tuple(_cell_key(c) for c in cells)
        if key in self._rows:  # a key names one row: added again, its cells are replaced
            row = self._rows[key]
            self._cells[row], self._cell_keys[row] = shown, cell_keys
        else:
            self._rows[key] = len(self._keys)
            self._keys.append(key)
            self._cells.append(shown)
            self._cell_keys.append(cell_keys)
        self.records[key] = record
        self._natural = tuple(max(width, cell_len(_plain(cell))) for width, cell in zip(self._natural, shown, strict=True))
        self._resize()
        self.refresh()
        if first:  # as DataTable: the cursor is on a row where there was none
            self._highlighted()

    def selected(self) -> Any:
        return self.records.get(self._keys[self.cursor_row]) if self._keys else None

    def selected_key(self) -> str | None:
        return self._keys[self.cursor_row] if self._keys else None

    def move_cursor(self, *, row: int) -> None:
        self.cursor_row = row

    # The scrollable size: the header and the rows, or the widget's size less room for the
    # scrollbars when they fit in that, so a new set of rows that fits changes nothing the
    # layout depends on. Less the room for the other scrollbar: the region shrinks when one
    # appears, and a size measured against the whole region would then call for the other.

    def _resize(self) -> None:
        room = Size(self.size.width - self.styles.scrollbar_size_vertical, self.size.height - self.styles.scrollbar_size_horizontal)
        self._widths = self._fitted(room.width)
        width = row_width(self._widths)
        size = Size(max(width, room.width), max(1 + len(self._keys), room.height))
        if size != self.virtual_size:
            self.virtual_size = size

    def _fitted(self, room: int) -> tuple[int, ...]:
        """The columns' widths: as wide as their cells, but the narrowing column cut to fit ``room``
        where that leaves it ``NARROWED_AT_LEAST`` cells; a narrower table scrolls sideways instead
        (at 80 columns the memory reads better cut by the edge than cut to a word)."""
        widths = list(self._natural)
        excess = row_width(widths) - room
        if self.narrowing is not None and 0 < excess <= widths[self.narrowing] - NARROWED_AT_LEAST:
            widths[self.narrowing] -= excess
        return tuple(widths)

    def on_resize(self, _: events.Resize) -> None:
        self._resize()

    def watch_virtual_size(self, size: Size) -> None:
        """What a layout pass would do for this widget: show or hide its scrollbars (for an auto
        overflow, as Textual decides it), which does ask for a layout since the scrollable region
        changes; tell them the new size; keep the scroll within it."""
        width, height = self.container_size
        if width and height:
            v_room, h_room = self.styles.scrollbar_size_vertical, self.styles.scrollbar_size_horizontal
            show_horizontal, show_vertical = size.width > width, size.height > height
            if show_vertical and not show_horizontal:
                show_horizontal = size.width > width - v_room
            if show_horizontal and not show_vertical:
                show_vertical = size.height > height - h_room
            self.show_horizontal_scrollbar, self.show_vertical_scrollbar = show_horizontal, show_vertical
            if show_vertical and v_room:
                self.vertical_scrollbar.window_virtual_size = size.height
                self.vertical_scrollbar.window_size = height - self.scrollbar_size_horizontal
                self.vertical_scrollbar.refresh()
            if show_horizontal and h_room:
                self.horizontal_scrollbar.window_virtual_size = size.width
                self.horizontal_scrollbar.window_size = width - self.scrollbar_size_vertical
                self.horizontal_scrollbar.refresh()
            self.scroll_x, self.scroll_y = self.validate_scroll_x(self.scroll_x), self.validate_scroll_y(self.scroll_y)
        self.refresh()

    # The cursor.

    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self._keys) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        # Line 1 + row of the scrollable content: refresh_line takes away the scroll itself.
        self.refresh_line(1 + old)
        self.refresh_line(1 + new)
        visible = max(1, self.scrollable_content_region.height - 1)  # rows below the header
        if new < self.scroll_y:
            self.scroll_to(y=new, animate=False)
        elif new >= self.scroll_y + visible:
            self.scroll_to(y=new - visible + 1, animate=False)
        self._highlighted()

    def _highlighted(self) -> None:
        """The cursor is on a row: said, and the row's record shown while the table has the focus."""
        if self._keys:
            self.post_message(self.RowHighlighted(self, self.cursor_row, self._keys[self.cursor_row]))
        if self.has_focus:
            self.show_detail(self.selected())

    def action_scroll_up(self) -> None:
        self.cursor_row -= 1

    def action_scroll_down(self) -> None:
        self.cursor_row += 1

    def action_page_up(self) -> None:
        self.cursor_row -= max(1, self.scrollable_content_region.height - 1)

    def action_page_down(self) -> None:
        self.cursor_row += max(1, self.scrollable_content_region.height - 1)

    def action_scroll_home(self) -> None:
        self.cursor_row = 0

    def action_scroll_end(self) -> None:
        self.cursor_row = len(self._keys) - 1

    def action_select_cursor(self) -> None:
        if self._keys:
            self.post_message(self.RowSelected(self, self.cursor_row, self._keys[self.cursor_row]))

    def on_click(self, event: events.Click) -> None:
        row = event.y - 1 + int(self.scroll_y)
        if event.y >= 1 and row < len(self._keys):
            if row == self.cursor_row:
                self.action_select_cursor()
            self.cursor_row = row

    def on_focus(self) -> None:
        self._restyle()  # the cursor's colours follow the focus
        self.refresh()
        self.show_detail(self.selected())

    def on_blur(self) -> None:
        self._restyle()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()  # a theme change: every row's colours may differ
        self._restyle()

    def _restyle(self) -> None:
        """Every row drawn again, in the table's style read afresh."""
        self._strips.clear()
        self._style = None
        self._fills.clear()

    def show_detail(self, record: Any) -> None:
        if record is not None and self.render_detail is not None:
            title, body = self.render_detail(record)
            self.post_message(ShowDetail(title, body, self))

    # Drawing.

    @property
    def base_style(self) -> Style:
        """The table's own style, kept until the focus or the styles change: Textual's
        ``rich_style`` walks every ancestor's styles at each call, and it was asked for at each
        row drawn, half of the rows' cost at a keystroke."""
        if self._style is None:
            self._style = self.rich_style
        return self._style

    def render_lines(self, crop: Region) -> list[Strip]:
        # The scroll and the width, once for the lines drawn: Textual works each out afresh from
        # the widget's geometry, a third of a row's cost when asked for at every line.
        self._drawing = (self.scroll_offset, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._drawing = None

    def render_line(self, y: int) -> Strip:
        (scroll_x, scroll_y), width = self._drawing or (self.scroll_offset, self.scrollable_content_region.width)
        if y == 0:
            component = "table--header"
            strip = self._strip(("header",), self.columns, component)
        else:
            row = y - 1 + scroll_y
            if row >= len(self._keys):
                return Strip.blank(width, self.base_style)
            component = "table--cursor" if row == self.cursor_row else "table--even-row" if row % 2 == 0 else ""
            strip = self._strip(self._cell_keys[row], self._cells[row], component)
        # A row narrower than the table goes on in its own style (the header's, the cursor's, a
        # stripe's) to the table's edge, as a DataTable's rows do.
        fill = self._fills.get(component)
        if fill is None:
            fill = self._fills[component] = self.base_style + self.get_component_rich_style(component) if component else self.base_style
        return strip.crop_extend(scroll_x, scroll_x + width, fill)

    def _strip(self, key: tuple, cells: Iterable[Cell], component: str) -> Strip:
        cache_key = (key, self._widths, component, self.has_focus)
        strip = self._strips.get(cache_key)
        if strip is None:
            # The cursor's colours go over the cells' own (a highlighted word under the cursor
            # reads in the cursor's colours), as in DataTable; the other rows' go under them.
            style = self.get_component_rich_style(component) if component else Style()
            base, over = (self.base_style, style) if component == "table--cursor" else (self.base_style + style, None)
            console = self.app.console
            segments: list[Segment] = []
            for text, width in zip(cells, self._widths, strict=True):
                if isinstance(text, str) or (not text.spans and not text.style):
                    # A plain cell (a kind, a score, a time): one segment, without Rich's render of
                    # a Text, which cost most of a row's drawing and rows are drawn at each keystroke.
                    segments.append(Segment(fitted_cell(_plain(text), width)))
                    continue
                cell = text.copy()
                if cell.style:
                    # The cell's own style under its spans, and on its text only, not on the spaces
                    # that fill its column (as a DataTable draws it): Text.render puts it on every
                    # character, or on none where the Text has no spans.
                    cell.stylize_before(cell.style, 0, len(cell))
                    cell.style = ""
                cell.truncate(width, overflow="ellipsis", pad=True)
                cell.pad(PADDING)
                segments.extend(cell.render(console))
            strip = Strip(Segment.apply_style(segments, style=base, post_style=over), row_width(self._widths))
            self._strips[cache_key] = strip
        return strip
