"""Dialogs. They collect parameters and show results; the App does the work in workers.
Every destructive dialog opens with Cancel focused, so a stray Enter erases nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Select, Static

from .formatting import tenant_label, when
from .views import parse_day


def counts_table(counts: dict[str, int]) -> Table:
    table = Table("tier", "records", box=None, padding=(0, 2))
    for tier, count in counts.items():
        table.add_row(tier.replace("_", " "), Text(str(count), style="bold red" if count else "dim"))
    return table


class ForgetScreen(ModalScreen[tuple[str | None, datetime | None] | None]):
    """Choose what to erase; shows the dry-run counts for the chosen scope before anything goes.

    Dismisses with (session_id, before) to erase, or None to cancel."""

    BINDINGS = [("escape", "cancel", "Cancel")]

    def __init__(self, user_id: str | None, sessions: list[str]):
        super().__init__()
        self.user_id = user_id
        self.sessions = sessions

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog danger"):
            yield Label(Text.assemble("Erase memory of ", (tenant_label(self.user_id), "bold")), classes="title")
            with RadioSet(id="forget-scope"):
                yield RadioButton("the whole tenant", value=True, id="scope-tenant")
                yield RadioButton("one session", id="scope-session")
                yield RadioButton("everything before a date", id="scope-before")
            yield Select([(s, s) for s in self.sessions], prompt="session", id="forget-session", disabled=True)
            yield Input(placeholder="before YYYY-MM-DD", id="forget-before", disabled=True)
            yield Static("counting…", id="forget-counts")
            yield Static("This cannot be undone. The erasure is recorded in the audit log.", classes="warning")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Erase", id="erase", variant="error", disabled=True)

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
        self.query_one("#forget-session", Select).disabled = event.pressed.id != "scope-session"
        self.query_one("#forget-before", Input).disabled = event.pressed.id != "scope-before"
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
        self.app.preview_forget(self.user_id, *scope)

    def show_preview(self, receipt: Any) -> None:
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
        with Horizontal(classes="buttons"):
            yield Button("Close", id="close", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)


class ReceiptScreen(InfoScreen):

    def __init__(self, receipt: Any):
        super().__init__()
        self.receipt = receipt

    def compose(self) -> ComposeResult:
        r = self.receipt
        scope = "whole tenant" if r.session_id is None and r.before is None else (
            f"session {r.session_id}" if r.session_id else f"before {when(r.before)}")
        with Vertical(classes="dialog"):
            yield Label(Text.assemble("Erased ", (tenant_label(r.user_id), "bold"), f" · {scope}"), classes="title")
            yield Static(counts_table(r.counts))
            yield Static(Text.assemble("receipt digest ", (r.digest, "bold"), f"\nat {r.at.isoformat(timespec='seconds')} by {r.actor}"))
            scrubbed = "deleted content is gone from the files" if r.disk_scrubbed else "another process holds the file: run `memlens scrub` later"
            yield Label(scrubbed, classes="ok" if r.disk_scrubbed else "warning")
            yield from self.close_row()


class ExportScreen(ModalScreen[str | None]):
    BINDINGS = [("escape", "cancel", "Cancel")]

    def __init__(self, user_id: str | None, default_path: str):
        super().__init__()
        self.user_id = user_id
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text.assemble("Export everything held for ", (tenant_label(self.user_id), "bold")), classes="title")
            yield Label("to file (.json: one document, otherwise JSON Lines):")
            yield Input(self.default_path, id="export-path")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Export", id="export", variant="primary")

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

    BINDINGS = [("escape", "no", "Cancel")]

    def __init__(self, question: str, yes: str):
        super().__init__()
        self.question, self.yes = question, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog danger"):
            yield Label(self.question, classes="title")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="no", variant="primary")
                yield Button(self.yes, id="yes", variant="error")

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
            yield Label(self.heading, classes="title")
            with VerticalScroll():
                yield Static(self.body)
            yield from self.close_row()


HELP = """\
# memlens inspector

Browse what an agent remembers, search it, export it, erase it.

| key | does |
|---|---|
| `/` | search the selected tenant (results update as you type) |
| `1`–`6` | search · blocks · episodes · facts · sessions · audit |
| `t` | focus the tenant list (type in the filter above it) |
| `escape` | leave a text field |
| `e` | export the selected tenant to a file |
| `f` | forget: erase the tenant, a session, or what is older than a date |
| `d` | diff the selected checkpoint with the current state (after `m`: with the marked one) |
| `m` | mark the selected checkpoint for a diff |
| `r` | restore the selected checkpoint (asks first) |
| `ctrl+r` | reload everything |
| `ctrl+p` | command palette |
| `?` | this help |
| `q` | quit |

Keyword results show at once; semantic results join when the model is warm
(the header says which mode search is in). Views refresh by themselves when
another process writes to the store.
"""


class HelpScreen(InfoScreen):
    BINDINGS = [("question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # markdown-it costs 35 ms at start-up; only help needs it

        with Vertical(classes="dialog wide"):
            yield Markdown(HELP)
            yield from self.close_row()
