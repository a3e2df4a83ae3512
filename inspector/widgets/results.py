"""The search results: a line table (``line_table.py``) whose rows are replaced at every keystroke.

Every keystroke in the search box brings a new set of results. As a DataTable they cost about
27 ms of the main thread per keystroke at 150x45 and 100k episodes (cProfile and timers around
the renders): the table was cleared, its rows measured when it next went idle, laid out again
because its scrollable size had changed, and rendered cell by cell through Rich, about four
times a keystroke. Here a new set of results is one refresh of the lines on screen, and the
scrollable size only changes with the number of rows that do not fit, so a keystroke needs no
layout pass.

It keeps the part of the record tables' interface the search view and the tenant views use (``records``,
``selected``, ``move_cursor``, ``cursor_row``, ``row_count``) and posts the same ShowDetail.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from textual.binding import Binding, BindingType

from ..messages import Carrier
from .line_table import LineTable


class ResultsTable(LineTable):
    """The search results. ``m`` lives here, not on the search view: in the query field it types."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("m", "next_mode", "Mode")]

    class RowsReplaced(Carrier):
        """New results, while the table does not have the focus: a record of the old ones that the
        detail pane shows is no longer among what is on screen."""

        table: Any

    class ModeWanted(Carrier):
        """``m``: the same query in the next mode (the search view owns the modes)."""

    def __init__(self, *columns: str, **kwargs: Any):
        super().__init__(*columns, **kwargs)
        self._detail_shown = False  # a record of these rows was sent to the detail pane

    def show_rows(self, rows: Iterable[tuple[str, Any, tuple[Any, ...]]]) -> None:
        """Replace the rows with ``(key, record, cells)``; the cursor goes back to the top.

        One keystroke in six brings the very rows already on screen: drawing them again would only
        move the cursor back to the top, so they only get their new records."""
        if not self._replace_rows(list(rows)):
            return
        if self.has_focus:
            # From this widget's own queue: posted while the search view handles its results, the
            # message would count as the view's and stop bubbling there, short of the tenant views.
            self.call_later(lambda: self.show_detail(self.selected()))
        elif self._detail_shown:
            # Only then: typing in the search box must not cost a message for every set of results.
            self._detail_shown = False
            self.call_later(lambda: self.post_message(self.RowsReplaced(self)))

    def reset(self) -> None:
        self.show_rows(())

    def action_next_mode(self) -> None:
        self.post_message(self.ModeWanted())

    def show_detail(self, record: Any) -> None:
        super().show_detail(record)
        if record is not None and self.render_detail is not None:
            self._detail_shown = True
