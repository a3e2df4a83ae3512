"""Dialogs and whole screens. They collect parameters and show results; the screen that opened them does
the work in workers. Every destructive dialog opens with Cancel focused, so a stray Enter erases nothing.

Every dialog keeps its buttons on screen (docked at its foot) and scrolls its body when the
terminal is too small for it; the forget dialog's counts are laid out to fit whole at 80x24.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Select, Static

from .. import messages
from ..formatting import audit_action, count, parse_day, when
from ..printable import printable, tenant_label
from ..widgets import detail
from ..widgets.footer import KeysFooter
from ..widgets.views import RecordTable
from ..workers import call_store

COUNT_COLUMNS = 3  # nine tiers in three rows: the whole dry run fits an 80x24 dialog


def counts_table(counts: dict[str, int]) -> Table:
    """Every tier and its count, in COUNT_COLUMNS side-by-side columns."""
    table = Table.grid(padding=(0, 1))
    for _ in range(COUNT_COLUMNS):
        table.add_column(style="dim")
        table.add_column(justify="right", min_width=5)
    items = list(counts.items())
    for row in range(0, len(items), COUNT_COLUMNS):
        cells: list[Any] = []
        for tier, number in items[row : row + COUNT_COLUMNS]:
            cells += [tier.replace("_", " "), Text(str(number), style="bold red" if number else "dim")]
        table.add_row(*cells)
    return table


def buttons(*items: Button) -> Horizontal:
    return Horizontal(*items, classes="buttons")


class ForgetScreen(ModalScreen[tuple[str | None, datetime | None] | None]):
    """Choose what to erase; shows the dry-run counts for the chosen scope before anything goes.

    Dismisses with (session_id, before) to erase, or None to cancel. ``preview(session_id,
    before)`` is the dry run, called in this screen's worker."""

    # "q" cancels, as it closes every other dialog (typed as text in the date field).
    BINDINGS = [("escape", "cancel", "Cancel"), Binding("q", "cancel", "Cancel", show=False)]

    def __init__(self, user_id: str | None, sessions: list[str], preview: Callable[[str | None, datetime | None], Any]):
        super().__init__()
        self.user_id = user_id
        self.sessions = sessions
        self.preview = preview

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog danger"):
            yield buttons(Button("Cancel", id="cancel", variant="primary"), Button("Erase", id="erase", variant="error", disabled=True))
            with VerticalScroll(classes="dialog-body"):
                yield Label(Text.assemble("Erase memory of ", (tenant_label(self.user_id), "bold")), classes="title")
                with RadioSet(id="forget-scope", compact=True):
                    yield RadioButton("whole tenant", value=True, id="scope-tenant")
                    yield RadioButton("one session", id="scope-session")
                    yield RadioButton("before a date", id="scope-before")
                # A prompt given as a string is read as markup; session ids are the agent's text.
                yield Select([(Content(printable(s)), s) for s in self.sessions], prompt="session", id="forget-session", classes="hidden")
                yield Input(placeholder="before YYYY-MM-DD", id="forget-before", classes="hidden")
                yield Static("counting…", id="forget-counts")
                yield Static("This cannot be undone. The erasure is recorded in the audit log.", classes="warning")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()
        self.request_preview()

    def scope(self) -> tuple[str | None, datetime | None] | None:
        """(session, before) for the chosen scope, or None while it is incomplete."""
        chosen = self.query_one(RadioSet).pressed_button
        if chosen is None or chosen.id == "scope-tenant":
            return None, None
        if chosen.id == "scope-session":
            value = self.query_one("#forget-session", Select).value
            return None if value is Select.NULL else (str(value), None)
        try:
            before = parse_day(self.query_one("#forget-before", Input).value)
        except ValueError:
            return None
        return None if before is None else (None, before)

    @on(RadioSet.Changed)
    def _scope_kind(self, event: RadioSet.Changed) -> None:
        # Only the field the scope needs is shown: the rows are what lets the counts fit at 80x24.
        self.query_one("#forget-session", Select).set_class(event.pressed.id != "scope-session", "hidden")
        self.query_one("#forget-before", Input).set_class(event.pressed.id != "scope-before", "hidden")
        self.request_preview()

    @on(Select.Changed)
    @on(Input.Changed)
    def _scope_detail(self) -> None:
        self.request_preview()

    def request_preview(self) -> None:
        scope = self.scope()
        self.query_one("#erase", Button).disabled = True
        if scope is None:
            self.query_one("#forget-counts", Static).update(Text("choose a session or a date", style="dim"))
            return
        self.query_one("#forget-counts", Static).update(Text("counting…", style="dim"))
        preview = self.preview
        call_store(self, "forget", lambda: preview(*scope), messages.ForgetPreview, group="forget-preview", exclusive=True)

    @on(messages.ForgetPreview)
    def _show_preview(self, m: messages.ForgetPreview) -> None:
        receipt = m.receipt
        if (receipt.session_id, receipt.before) != self.scope():
            return  # an answer for a scope the user has since changed
        self.query_one("#forget-counts", Static).update(counts_table(receipt.counts))
        self.query_one("#erase", Button).disabled = receipt.total == 0

    @on(Button.Pressed, "#erase")
    def _erase(self) -> None:
        self.dismiss(self.scope())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class InfoScreen(ModalScreen[None]):
    """A dialog that only shows something: Escape, q or its Close button (focused) closes it."""

    BINDINGS = [("escape", "close", "Close"), ("q", "close", "Close")]

    def close_row(self) -> ComposeResult:
        yield buttons(Button("Close", id="close", variant="primary"))

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()
        self.call_after_refresh(self._focus_a_body_that_scrolls)

    def _focus_a_body_that_scrolls(self) -> None:
        """Once laid out: a body longer than the dialog takes the focus, so the arrows and
        PageDown scroll it at once (with the Close button focused they did nothing until
        shift+tab). Enter was all the button added; Escape and q close either way."""
        bodies = self.query(".dialog-body")
        if bodies and bodies.first().max_scroll_y > 0:
            bodies.first().focus()

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)


class ReceiptScreen(InfoScreen):
    def __init__(self, receipt: Any):
        super().__init__()
        self.receipt = receipt

    def compose(self) -> ComposeResult:
        r = self.receipt
        scope = (
            "whole tenant"
            if r.session_id is None and r.before is None
            else (f"session {r.session_id}" if r.session_id else f"before {when(r.before)}")
        )
        with Vertical(classes="dialog"):
            yield from self.close_row()
            with VerticalScroll(classes="dialog-body"):
                yield Label(Text.assemble("Erased ", (tenant_label(r.user_id), "bold"), f" · {scope}"), classes="title")
                yield Static(counts_table(r.counts))
                yield Static(
                    Text.assemble("receipt digest ", (r.digest, "bold"), f"\nat {r.at.isoformat(timespec='seconds')} by {r.actor}")
                )
                scrubbed = (
                    "deleted content is gone from the files"
                    if r.disk_scrubbed
                    else "another process holds the file: run `memlens scrub` later"
                )
                yield Static(scrubbed, classes="ok" if r.disk_scrubbed else "warning")
                yield Static("The audit log of every tenant: press a in the tenant list.", classes="hint")


class ExportScreen(ModalScreen[str | None]):
    # "q" types in the path field, where the focus starts; on a button it cancels.
    BINDINGS = [("escape", "cancel", "Cancel"), Binding("q", "cancel", "Cancel", show=False)]

    def __init__(self, user_id: str | None, default_path: str):
        super().__init__()
        self.user_id = user_id
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield buttons(Button("Cancel", id="cancel"), Button("Export", id="export", variant="primary"))
            with VerticalScroll(classes="dialog-body"):
                yield Label(Text.assemble("Export everything held for ", (tenant_label(self.user_id), "bold")), classes="title")
                yield Static("to file (.json: one document, otherwise JSON Lines):")
                yield Input(self.default_path, id="export-path")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        path = self.query_one("#export-path", Input).value.strip()
        if path:
            self.dismiss(path)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question whose default (focused) answer is No."""

    BINDINGS = [("escape", "no", "Cancel"), Binding("q", "no", "Cancel", show=False)]

    def __init__(self, question: str, yes: str):
        super().__init__()
        self.question, self.yes = question, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog danger"):
            yield buttons(Button("Cancel", id="no", variant="primary"), Button(self.yes, id="yes", variant="error"))
            with VerticalScroll(classes="dialog-body"):
                yield Static(Content(self.question), id="question", classes="title")  # a Static wraps; a Label cut it off

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed, "#yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#no")
    def action_no(self) -> None:
        self.dismiss(False)


class DiffScreen(InfoScreen):
    def __init__(self, title: str, body: Any):
        super().__init__()
        self.heading, self.body = title, body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield from self.close_row()
            yield Static(Content(self.heading), classes="title")  # names a checkpoint: text, not markup
            with VerticalScroll(classes="dialog-body"):
                yield Static(self.body)


class FatalScreen(ModalScreen[None]):
    """The store cannot be used: the reason stays on screen until the user quits. Only q and
    Ctrl+C work here (no other key can move the focus somewhere q would be typed)."""

    BINDINGS = [Binding("q", "app.quit", "Quit"), Binding("ctrl+c", "app.quit", "Quit", show=False, priority=True)]

    def __init__(self, heading: str, error: str):
        super().__init__()
        self.heading, self.error = heading, error

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="fatal-box"):
            yield Static(Text.assemble((self.heading, "bold"), "\n\n", self.error, "\n\nPress q to quit."), id="fatal")
        yield KeysFooter()


class StoreAuditScreen(ModalScreen[None]):
    """The audit log of the whole store: every tenant's exports, imports and erasures, the entries
    of erased tenants included (the log outlives the erasure it records), as ``read()`` returns it
    in this screen's worker."""

    BINDINGS = [("escape", "close", "Close"), ("q", "close", "Close")]

    def __init__(self, read: Callable[[], list[Any]]):
        super().__init__()
        self.read = read

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield buttons(Button("Close", id="close", variant="primary"))
            yield Label("Audit log · every tenant, erased ones included · newest first", classes="title")
            yield Static("loading…", id="store-audit-status")
            yield RecordTable(
                "when",
                "action",
                "tenant",
                "actor",
                "records",
                "digest",
                id="store-audit-table",
                render=lambda a: (f"{a.action} {tenant_label(a.user_id)} {when(a.at)}", detail.audit_entry(a)),
            )
            with VerticalScroll(id="store-audit-detail"):
                yield Static("", id="store-audit-body")

    def on_mount(self) -> None:
        self.query_one("#store-audit-table").focus()
        call_store(self, "audit log", self.read, messages.StoreAuditLoaded, group="store-audit")

    @on(messages.StoreAuditLoaded)
    def _loaded(self, m: messages.StoreAuditLoaded) -> None:
        entries = m.entries
        table = self.query_one(RecordTable)
        table.reset()
        for i, a in enumerate(entries):
            total = sum(v for k, v in a.counts.items() if k != "vectors")
            table.add_record(f"{i}:{a.digest}", a, when(a.at), audit_action(a), tenant_label(a.user_id), a.actor, str(total), a.digest[:16])
        self.query_one("#store-audit-status", Static).update(count(len(entries), "entries") if entries else "no entries yet")
        if entries:
            table.show_detail(table.selected())

    def on_show_detail(self, message) -> None:
        message.stop()  # the record goes to this screen's own pane, not the App's
        self.query_one("#store-audit-body", Static).update(message.body)

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)
