"""Looking at the selected tenant's memory as it stood at a past moment.

The App keeps the moment shown (``as_of``: None is now, live). The moments a user steps through
are the tenant's changes (``MemoryStore.timeline``): blocks written, facts recorded or changed,
sessions started or checkpointed. Stepping back undoes one change at a time: from now it goes to
the moment before the latest change (the latest change's own moment shows what now shows), and
stepping forward from the moment before the latest change comes back to now.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from store.validation import utcnow

from .formatting import count, one_line
from .printable import tenant_label
from .screens import buttons
from .views import RecordTable

TICK = timedelta(microseconds=1)  # the smallest step of the store's clock
"""The moment just before a change: the memory without it."""

NOW = "now"
"""What the timeline dismisses with to go back to the present."""


def moments_of(changes: list[Any]) -> list[datetime]:
    """The distinct moments of a tenant's changes, oldest first."""
    return sorted({c.at for c in changes})


def _state_moment(moments: list[datetime], shown: datetime | None) -> datetime | None:
    """The change whose state is on screen: the latest at or before ``shown`` (None: before the first)."""
    if shown is None:
        return moments[-1]
    reached = [m for m in moments if m <= shown]
    return reached[-1] if reached else None


def step_back(moments: list[datetime], shown: datetime | None) -> datetime | None:
    """The moment one change before the state shown, or None when there is none earlier."""
    if not moments:
        return None
    current = _state_moment(moments, shown)
    if current is None:
        return None  # already before the first change
    earlier = [m for m in moments if m < current]
    return earlier[-1] if earlier else current - TICK


def step_forward(moments: list[datetime], shown: datetime) -> datetime | str:
    """The moment one change after the one shown; NOW after the change before the latest (the
    latest change's moment would show what now shows)."""
    later = [m for m in moments if m > shown]
    return NOW if len(later) <= 1 else later[0]


def parse_moment(text: str, now: datetime) -> datetime:
    """'2026-11-18', '2026-11-18 14:02' or a full ISO time, read as UTC. A day alone is its end
    (what the memory held when that day was over). Raises ValueError, with what to type."""
    text = text.strip()
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("moments look like 2026-11-18 or 2026-11-18 14:02 (UTC)") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if len(text) == 10:
        value += timedelta(days=1) - TICK
    if value > now:
        raise ValueError("that moment is still to come: the views show now, live")
    return value


def moment_label(at: datetime) -> str:
    """A moment as the header shows it: to the second, since changes are often seconds apart."""
    return at.strftime("%Y-%m-%d %H:%M:%S")


class TimelineScreen(ModalScreen[Any]):
    """The tenant's changes, newest first, to go to one of them, or to a moment typed in.

    Dismisses with a moment, with NOW, or with None (cancelled). ``d`` on a change shows what it
    changed in the whole tenant (the App's ``tenant_diff`` of the moment before it and the moment)."""

    BINDINGS = [
        ("escape", "cancel", "Cancel"),
        Binding("q", "cancel", "Cancel", show=False),
        Binding("d", "diff_change", "Diff"),
        Binding("m", "mark", "Mark"),
    ]

    class DiffWanted(Message):
        """The App should show the whole tenant's changes from ``a`` to ``b``."""

        def __init__(self, a: datetime, b: datetime, title: str):
            super().__init__()
            self.a, self.b, self.title = a, b, title

    def __init__(self, user_id: Any, shown: datetime | None):
        super().__init__()
        self.user_id, self.shown = user_id, shown
        self.marked: datetime | None = None
        self.changes = 0

    def compose(self) -> ComposeResult:
        where = "now" if self.shown is None else f"as of {moment_label(self.shown)}"
        with Vertical(classes="dialog wide", id="timeline-dialog"):
            yield buttons(Button("Cancel", id="cancel"))
            yield Label(Text.assemble("Timeline of ", (tenant_label(self.user_id), "bold"), f" · showing {where}"), classes="title")
            yield Input(placeholder="go to a moment: YYYY-MM-DD or YYYY-MM-DD HH:MM (UTC), then enter", id="moment")
            yield Label("loading the changes…", id="timeline-status")
            yield RecordTable("when", "tier", "change", "name", "detail", id="timeline-table")

    def on_mount(self) -> None:
        self.query_one("#timeline-table", RecordTable).focus()

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

    @on(RecordTable.RowSelected, "#timeline-table")
    def _go(self, event: RecordTable.RowSelected) -> None:
        record = self.query_one("#timeline-table", RecordTable).records.get(event.row_key.value or "")
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
            self.post_message(self.DiffWanted(a, b, f"{moment_label(a)} → {moment_label(b)}"))
        elif record != NOW:
            title = f"what changed at {moment_label(record.at)}: {record.tier} {record.name}"
            self.post_message(self.DiffWanted(record.at - TICK, record.at, title))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def _line(text: str, style: str = "") -> Text:
    """One line of a diff: cut with an ellipsis at the dialog's width, never wrapped into the next."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def memory_diff(d: Any) -> Group:
    """A whole tenant's changes between two moments, tier by tier, readable without colour."""
    parts: list[Any] = []
    for b in d.blocks:
        if b.before is None:
            parts.append(_line(f"+ block {b.name}: {one_line(b.after or '', 400)}", "green"))
        elif b.after is None:
            parts.append(_line(f"- block {b.name}: {one_line(b.before, 400)}", "red"))
        else:
            parts.append(_line(f"~ block {b.name}", "yellow"))
            parts.append(_line(f"    before: {one_line(b.before, 400)}", "red"))
            parts.append(_line(f"    after:  {one_line(b.after, 400)}", "green"))
    for f in d.facts_added:
        parts.append(_line(f"+ fact {f.subject} {f.predicate} {f.object}", "green"))
    for f in d.facts_removed:
        parts.append(_line(f"- fact {f.subject} {f.predicate} {f.object}", "red"))
    if d.episodes_added:
        parts.append(_line(f"{'+' if d.episodes_added > 0 else '-'} {count(abs(d.episodes_added), 'episodes')}"))
    for s in d.sessions:
        parts.append(_line(f"~ session {s.session_id}", "yellow"))
        for key, value in s.added_keys.items():
            parts.append(_line(f"    + {key} = {one_line(repr(value), 400)}", "green"))
        for key, value in s.removed_keys.items():
            parts.append(_line(f"    - {key} = {one_line(repr(value), 400)}", "red"))
        for key, (old, new) in s.changed_keys.items():
            parts.append(_line(f"    ~ {key}: {one_line(repr(old), 60)} → {one_line(repr(new), 60)}", "yellow"))
        if s.task_state_before != s.task_state_after:
            parts.append(_line(f"    ~ task: {_task(s.task_state_before)} → {_task(s.task_state_after)}", "yellow"))
        for note in s.scratchpad_added:
            parts.append(_line(f"    + note {one_line(note, 400)}", "green"))
        for note in s.scratchpad_removed:
            parts.append(_line(f"    - note {one_line(note, 400)}", "red"))
    if not parts:
        parts.append(Text("No difference.", style="dim"))
    if d.gaps:
        parts.append(Text("\nwhat could not be rebuilt", style="bold"))
        parts += [Text(f"• {gap}", style="dim") for gap in d.gaps]
    return Group(*parts)


def _task(state: Any) -> str:
    if state is None:
        return "none"
    steps = f"{state.current_step}/{state.total_steps}" if state.total_steps else str(state.current_step)
    return f"{one_line(state.task or '(task)', 24)} step {steps}, {state.status}"


def diff_title(a: datetime, b: datetime | None) -> str:
    return f"{moment_label(a)} → {'now' if b is None else moment_label(b)}"
