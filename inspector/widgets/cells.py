"""DataTable cells rendered and measured once per content, not once per row.

DataTable caches a rendered cell under its row key and a counter that every change of the table
bumps, so after ``clear()`` and ``add_row`` (a view reloaded while the agent writes, the next
page of episodes, a tenant picked again) each visible cell is rendered again through Rich
(padding, styles, cropping). Most cells come back unchanged (a kind, a time, the same text), so
they are cached here by what they show. Measured when the search results were still such a table
(they now have a widget of their own, ``results.py``): the main thread's CPU from new rows to the
frame went from 29 to 19 ms (p50, 25 rows, 150x45). The only per-row part of a rendered cell, the
mouse metadata (row and column), is added after the cache.

The same goes for measuring: after new rows DataTable measures every cell of them (formatting
it into a Rich renderable first) to widen its columns, ~5 ms of the main thread for 25 rows,
although the widths rarely change. A cell's width depends only on what it shows, so it is kept
here by that too.
"""

from __future__ import annotations

from typing import Any

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.render import measure
from textual.renderables.styled import Styled
from textual.widgets import DataTable

CACHED_CELLS = 4096  # a few screens of cells (one screen of results is ~25 rows x 6 columns)


def content_key(cell: Any) -> tuple | None:
    """What a cell shows, as a hashable value; None for cells rendered the ordinary way."""
    if isinstance(cell, str):
        return (str, cell)
    if isinstance(cell, Text):
        return (Text, cell.plain, tuple(cell.spans), cell.style, cell.justify, cell.overflow, cell.no_wrap, cell.end)
    return None


class CachedCells(DataTable):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._content_cache: LRUCache[tuple, list[list[Segment]]] = LRUCache(CACHED_CELLS)
        self._width_cache: LRUCache[tuple, int] = LRUCache(CACHED_CELLS)

    def _update_dimensions(self, new_rows) -> None:
        """Widen the columns for the new one-line rows from the widths kept by content; DataTable's
        own pass handles the rest (labelled and multi-line rows) and the scrollable size."""
        console = self.app.console
        ordered_columns = self.ordered_columns
        rest = []
        for row_key in new_rows:
            row, index = self.rows.get(row_key), self._row_locations.get(row_key)
            if row is None or index is None or row.label is not None or row.auto_height or row.height != 1:
                rest.append(row_key)  # removed since, or not a plain row: as DataTable does it
                continue
            data = self._data.get(row_key, {})
            renderables = None
            for column_index, column in enumerate(ordered_columns):
                key = content_key(data.get(column.key))
                width = None if key is None else self._width_cache.get((key, console.width))
                if width is None:
                    if renderables is None:
                        renderables = self._get_row_renderables(index).cells
                    width = measure(console, renderables[column_index], 1)
                    if key is not None:
                        self._width_cache[(key, console.width)] = width
                column.content_width = max(column.content_width, width)
        super()._update_dimensions(rest)

    def notify_style_update(self) -> None:
        super().notify_style_update()  # a theme or style change: the cursor's colours may differ too
        self._content_cache.clear()

    def _render_cell(
        self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False, hover: bool = False
    ) -> list[list[Segment]]:
        if row_index < self.fixed_rows or column_index < self.fixed_columns:  # headers, labels, fixed cells
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = content_key(self._data.get(row_key, {}).get(column_key))
        if key is None or self.rows[row_key].height != 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (
            key,
            width,
            base_style,
            cursor,
            hover,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority,
            self.cursor_background_priority,
            self._pseudo_class_state,
            self.cell_padding,
        )
        lines = self._content_cache.get(key)
        if lines is None:
            # As DataTable._render_cell renders a one-line data cell, less the mouse metadata.
            _, cells = self._get_row_renderables(row_index)
            component_style, post_style = self._get_styles_to_render_cell(
                False,
                False,
                False,
                hover,
                cursor,
                self.show_cursor,
                self._show_hover_cursor,
                self.cursor_foreground_priority == "css",
                self.cursor_background_priority == "css",
            )
            options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
            lines = self.app.console.render_lines(
                Styled(Padding(cells[column_index], (0, self.cell_padding)), pre_style=base_style + component_style, post_style=post_style),
                options,
            )
            self._content_cache[key] = lines
        meta = Style.from_meta({"row": row_index, "column": column_index})
        return [list(Segment.apply_style(line, post_style=meta)) for line in lines]
