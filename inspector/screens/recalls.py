"""The recalls an agent made for a tenant (a store opened with tracing on), newest first: each
one's caller, query, hits and latency, what came back, and a replay now or as of its moment."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from .. import messages
from ..formatting import count, one_line, when
from ..messages import Carrier
from ..printable import tenant_label
from ..time_travel import moment_label
from ..widgets import detail
from ..widgets.views import RecordTable
from ..workers import call_store
from .dialogs import DiffScreen, buttons

SHOWN = 500
"""The newest recalls listed (a tenant keeps 1,000 by default)."""


class TracesTable(RecordTable):
    """The kept recalls: ``r`` makes the one under the cursor again now and compares, ``R`` as of
    the moment it was made."""

    BINDINGS = [Binding("r", "replay(False)", "Replay now"), Binding("R", "replay(True)", "Replay then")]

    class ReplayWanted(Carrier):
        trace: Any
        then: bool

    def action_replay(self, then: bool) -> None:
        trace = self.selected()
        if trace is not None:
            self.post_message(self.ReplayWanted(trace, then))


class RecallsScreen(ModalScreen[Any]):
    """The tenant's kept recalls up to the moment shown; ``escape`` or ``q`` closes it, ``s`` closes
    it with the recall under the cursor, to be typed into the Search tab (where ``w`` on a memory
    then says why that recall did not bring it back)."""

    BINDINGS = [("escape", "close", "Close"), Binding("q", "close", "Close", show=False), Binding("s", "search_it", "Search it")]

    def __init__(self, user_id: Any, shown: datetime | None, store: Any):
        super().__init__()
        self.user_id, self.shown, self.store = user_id, shown, store

    def compose(self) -> ComposeResult:
        where = "now" if self.shown is None else f"up to {moment_label(self.shown)}"
        with Vertical(classes="dialog wide", id="recalls-dialog"):
            yield buttons(Button("Close", id="close"))
            yield Label(Text.assemble("Recalls of ", (tenant_label(self.user_id), "bold"), f" · {where}"), classes="title")
            yield Label("loading the recalls…", id="recalls-status")
            yield TracesTable("when", "caller", "query", "hits", "ms", id="recalls-table")
            with VerticalScroll(id="recall-detail"):
                yield Static("", id="recall-detail-body")

    def on_mount(self) -> None:
        self.query_one(TracesTable).focus()
        user, at, read = self.user_id, self.shown, self.store.recall_traces
        call_store(
            self, "recalls", lambda: read(user_id=user, as_of=at, limit=SHOWN), messages.TracesLoaded, group="recalls", exclusive=True
        )

    @on(messages.TracesLoaded)
    def _loaded(self, m: messages.TracesLoaded) -> None:
        table = self.query_one(TracesTable)
        table.reset()
        for t in m.traces:
            cells = (
                t.at.strftime("%m-%d %H:%M:%S"),
                one_line(t.label or "-", 12),
                one_line(t.query, 40),
                str(len(t.hits)),
                f"{t.took_ms:.0f}",
            )
            table.add_record(t.id, t, *cells)
        self.query_one("#recalls-status", Label).update(headline(len(m.traces)))
        self.show_detail(table.selected())

    @on(TracesTable.RowHighlighted, "#recalls-table")
    def _highlighted(self, event: TracesTable.RowHighlighted) -> None:
        self.show_detail(self.query_one(TracesTable).records.get(event.key))

    def show_detail(self, trace: Any) -> None:
        self.query_one("#recall-detail-body", Static).update("" if trace is None else detail.recall_trace(trace))

    @on(TracesTable.ReplayWanted)
    def _replay_wanted(self, m: TracesTable.ReplayWanted) -> None:
        store, user, trace, then = self.store, self.user_id, m.trace, m.then
        moment = "as of its own moment" if then else "now"
        title = f"the recall of {when(trace.at)}, made again {moment}"
        call_store(
            self,
            "replay",
            lambda: store.replay(trace.id, user_id=user, then=then),
            lambda replay: messages.ReplayLoaded(title, replay),
            group="replay",
            exclusive=True,
        )

    @on(messages.ReplayLoaded)
    def _replayed(self, m: messages.ReplayLoaded) -> None:
        self.app.push_screen(DiffScreen(m.title, detail.replay(m.replay)))

    def action_search_it(self) -> None:
        trace = self.query_one(TracesTable).selected()
        if trace is None:
            return
        if trace.call == "search_keys":
            self.app.notify("a key search: the Search tab searches memories, not keys", severity="warning")
            return
        self.dismiss(trace)

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)


def headline(kept: int) -> str:
    if not kept:
        return "no recalls kept: the agent's store keeps them with MEMLENS_TRACE=1 (docs: the recall trace)"
    return f"{count(kept, 'recalls')}, newest first · r replay now · R as of then · s search it"
