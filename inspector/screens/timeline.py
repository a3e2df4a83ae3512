"""The timeline of a tenant's changes: go to one, or to a moment typed in; diff one or two."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from store.validation import utcnow

from .. import messages
from ..formatting import count, one_line
from ..messages import Carrier
from ..printable import tenant_label
from ..time_travel import NOW, TICK, diff_title, moment_label, parse_moment
from ..widgets.views import RecordTable
from ..workers import call_store
from .dialogs import buttons


class ChangesTable(RecordTable):
    """The tenant's changes: ``enter`` on one shows every view as of it (so does a click on the
    row under the cursor)."""

    BINDINGS = [Binding("enter", "select_cursor", "Go there", show=False)]


class TimelineScreen(ModalScreen[Any]):
    """The tenant's changes, newest first, to go to one of them, or to a moment typed in.

    Dismisses with a moment, with NOW, or with None (cancelled). ``d`` on a change shows what it
    changed in the whole tenant (the main screen's ``tenant_diff`` of the moment before it and the moment)."""

    BINDINGS = [
        ("escape", "cancel", "Cancel"),
        Binding("q", "cancel", "Cancel", show=False),
        Binding("d", "diff_change", "Diff"),
        Binding("m", "mark", "Mark"),
    ]

    class DiffWanted(Carrier):
        """The App should show the whole tenant's changes from ``a`` to ``b``."""

        a: datetime
        b: datetime
        title: str

    def __init__(self, user_id: Any, shown: datetime | None, read: Callable[[], list[Any]]):
        """``read()``: the tenant's changes, newest first, called in this screen's worker."""
        super().__init__()
        self.user_id, self.shown, self.read = user_id, shown, read
        self.marked: datetime | None = None
        self.changes = 0

    def compose(self) -> ComposeResult:
        where = "now" if self.shown is None else f"as of {moment_label(self.shown)}"
        with Vertical(classes="dialog wide", id="timeline-dialog"):
            yield buttons(Button("Cancel", id="cancel"))
            yield Label(Text.assemble("Timeline of ", (tenant_label(self.user_id), "bold"), f" · showing {where}"), classes="title")
            yield Input(placeholder="go to a moment: YYYY-MM-DD or YYYY-MM-DD HH:MM (UTC), then enter", id="moment")
            yield Label("loading the changes…", id="timeline-status")
            yield ChangesTable("when", "tier", "change", "name", "detail", id="timeline-table")

    def on_mount(self) -> None:
        self.query_one("#timeline-table", RecordTable).focus()
        call_store(self, "timeline", self.read, messages.TimelineLoaded, group="timeline", exclusive=True)

    @on(messages.TimelineLoaded)
    def _loaded(self, m: messages.TimelineLoaded) -> None:
        self.show(m.changes)

    def show(self, changes: list[Any]) -> None:
        table = self.query_one("#timeline-table", RecordTable)
        table.reset()
        table.add_record(NOW, NOW, "now", "-", "the present, live", "", "")
        for i, c in enumerate(changes):
            table.add_record(f"{i}", c, moment_label(c.at), c.tier, c.kind, one_line(c.name, 24), one_line(c.detail, 40))
        self.changes = len(changes)
        self.show_status()
        if self.shown is not None:  # the cursor on the change whose state is shown
            reached = [i for i, c in enumerate(changes) if c.at <= self.shown]
            if reached:
                table.move_cursor(row=reached[0] + 1)

    @on(ChangesTable.RowSelected, "#timeline-table")
    def _go(self, event: ChangesTable.RowSelected) -> None:
        record = self.query_one("#timeline-table", RecordTable).records.get(event.key)
        if record is not None:
            self.dismiss(NOW if record == NOW else record.at)

    @on(Input.Submitted, "#moment")
    def _typed(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            return
        try:
            self.dismiss(parse_moment(event.value, utcnow()))
        except ValueError as error:
            self.query_one("#timeline-status", Label).update(Text(str(error), style="bold red"))

    def show_status(self) -> None:
        status = f"{count(self.changes, 'changes')}, newest first" if self.changes else "no changes recorded yet"
        if self.marked is None:
            text = f"{status} · enter: go there · d: what it did · m: mark"
        else:  # short enough for 80 columns
            text = f"marked {moment_label(self.marked)} · d on another: what changed between the two"
        self.query_one("#timeline-status", Label).update(text)

    def action_mark(self) -> None:
        record = self.query_one("#timeline-table", RecordTable).selected()
        if record is not None:
            self.marked = utcnow() if record == NOW else record.at
            self.show_status()

    def action_diff_change(self) -> None:
        """Without a mark: what the change under the cursor did. With one: the whole tenant from
        one of the two moments to the other (the earlier first)."""
        record = self.query_one("#timeline-table", RecordTable).selected()
        if record is None:
            return
        at = utcnow() if record == NOW else record.at
        if self.marked is not None and self.marked != at:
            a, b = sorted((self.marked, at))
            self.marked = None
            self.show_status()
            self.post_message(self.DiffWanted(a, b, diff_title(a, b)))
        elif record != NOW:
            title = f"what changed at {moment_label(record.at)}: {record.tier} {record.name}"
            self.post_message(self.DiffWanted(record.at - TICK, record.at, title))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
