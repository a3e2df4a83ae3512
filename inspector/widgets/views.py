"""One view per memory tier. Views show what the tenant views hand them and post messages when the
user asks for something; they never touch the store."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Checkbox, Input, Label, ProgressBar, Select, Static
from textual.worker import Worker, WorkerState

from ..formatting import audit_action, highlighted, one_line, parse_day, rank, remaining, score, score_bars, when
from ..host import Gatekeeper, Host
from ..messages import Carrier, SearchResults, WorkerFailed
from ..searching import Search
from . import detail
from .backdrops import Column, Row
from .line_table import LineTable
from .results import ResultsTable


class RecordTable(LineTable):
    """The records of a view, one a row, added one by one; the record under the cursor is shown
    in the detail pane while the table has the focus."""

    def reset(self) -> None:
        """No rows; the columns back to their headers' widths (they fit only the rows shown)."""
        self._replace_rows([])

    def add_record(self, key: str, record: Any, *cells: Any) -> None:
        self._append_row(key, record, cells)

    def select_key(self, key: str | None) -> None:
        """Put the cursor back on ``key`` after a reload, if it is still there."""
        if key is not None and key in self.records:
            self.move_cursor(row=self.get_row_index(key))


DETAIL_TABLES = (RecordTable, ResultsTable)
"""The tables whose record under the cursor the detail pane shows (``show_detail``, ``selected``)."""


class CheckpointsTable(RecordTable):
    """The checkpoint keys live here: they act on the checkpoint the cursor is on. The work is
    done by the tenant views (widgets.tenant_views), which hold the store and the mark."""

    BINDINGS = [
        Binding("d", "diff", "Diff"),
        Binding("m", "mark", "Mark", show=False),  # the section's title says it; the footer needs the room
        Binding("r", "restore", "Restore"),
    ]

    class Wanted(Carrier):
        """``action`` ("diff", "mark" or "restore") on ``checkpoint``."""

        action: str
        checkpoint: Any

    def disabled_reason(self, action: str) -> str | None:
        """Why a checkpoint key cannot act now, or None (the App says it when the key is pressed)."""
        if self.selected() is None:
            return "pick a checkpoint in the Sessions view first"
        # Restoring writes: the main screen knows whether the store or the moment shown allows it.
        screen = self.screen
        return screen.disabled_reason("restore") if action == "restore" and isinstance(screen, Gatekeeper) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("diff", "mark", "restore"):
            # Under a dialog they are shown dimmed: the keys go to the dialog.
            return None if self.disabled_reason(action) or self.app.screen is not self.screen else True
        return True

    def want(self, action: str) -> str | None:
        """Ask for ``action`` on the checkpoint under the cursor, or say why it cannot be."""
        reason = self.disabled_reason(action)
        if reason is None:
            self.post_message(self.Wanted(action, self.selected()))
        return reason

    def action_diff(self) -> None:
        self.want("diff")

    def action_mark(self) -> None:
        self.want("mark")

    def action_restore(self) -> None:
        self.want("restore")


class BlocksTable(RecordTable):
    """The blocks: ``h`` shows the history of the block the cursor is on."""

    BINDINGS = [Binding("h", "history", "History")]

    class HistoryWanted(Carrier):
        block: Any

    def action_history(self) -> None:
        block = self.selected()
        if block is not None:
            self.post_message(self.HistoryWanted(block))


class WhyNotTable(RecordTable):
    """Episodes and facts: ``w`` asks where the memory under the cursor ranks for the search as
    typed in the Search tab, and why it is not among the results."""

    BINDINGS = [Binding("w", "why_not", "Why not?")]

    class WhyNotWanted(Carrier):
        memory: Any

    def action_why_not(self) -> None:
        memory = self.selected()
        if memory is not None:
            self.post_message(self.WhyNotWanted(memory))


class EpisodesTable(WhyNotTable):
    """The episodes: ``w`` as every memory table, and ``p`` for what the agent had just retrieved
    before the episode under the cursor (the recalls kept in its session up to it)."""

    BINDINGS = [Binding("p", "recalls_before", "Recalls before")]

    class RecallsBeforeWanted(Carrier):
        episode: Any

    def action_recalls_before(self) -> None:
        episode = self.selected()
        if episode is not None:
            self.post_message(self.RecallsBeforeWanted(episode))


class QueryInput(Input):
    """The search box. Its size never depends on its text (width 100%), so a keystroke needs no
    layout pass; Input asks for one whenever its text's width changes, a reflow of the whole
    screen (6-14 ms here) on every keystroke, on the CPU the search is waiting for."""

    virtual_size = Reactive(Size(0, 0), layout=False)

    # Here, not only on the SearchView: Input's own "down" (scroll, hidden) is nearer the focus and
    # would hide it, and the footer was blank in the search box (every other key types there).
    BINDINGS = [Binding("down", "focus_results", "Results")]

    def action_focus_results(self) -> None:
        self.query_ancestor(SearchView).action_focus_results()


class SearchView(Column):
    class Changed(Carrier):
        query: str
        kind: str
        session_id: str | None
        since: datetime | None
        until: datetime | None
        mode: str = "hybrid"
        seq: int = 0
        """The request's number: results of any but the newest are stale."""

    MODES = ("hybrid", "vector", "keyword")
    """The order ``m`` cycles through, for a presenter to show the same query's ranks move."""
    mode: Reactive[str] = Reactive(MODES[0], init=False)
    """The search mode, which ``m`` steps through: the view searches again in it."""

    BINDINGS = [Binding("down", "focus_results", "Results", show=False)]

    def __init__(self, host: Host, **kwargs: Any):
        super().__init__(**kwargs)
        self.seq = 0
        """The newest request's number: the one count of it (its results paint, older ones' do not)."""
        self.search = Search(host, self)
        """This view's search: its thread, which runs the newest request only."""

    def compose(self) -> ComposeResult:
        yield QueryInput(placeholder="search this tenant's memory…  (/ to focus)", id="query")
        with Row(classes="filters"):
            yield Select(
                [(k, k) for k in ("episodic", "facts", "working", "scratchpad", "all")],
                value="all",
                allow_blank=False,
                id="search-kind",
                prompt="kind",
                compact=True,
            )
            yield Select([], prompt="session", id="search-session", compact=True)
            yield Input(placeholder="since YYYY-MM-DD", id="search-since", classes="date", compact=True)
            yield Input(placeholder="until YYYY-MM-DD", id="search-until", classes="date", compact=True)
        yield Label("", id="search-status")
        yield ResultsTable(
            "kind",
            "vec  kw",
            "memory",
            "score",
            "vector",
            "keyword",
            "when",
            id="results",
            render=lambda h: (f"{h.kind} {h.id[:12]}", detail.hit(h)),
            narrowing=2,
        )

    def set_sessions(self, sessions: list[str]) -> None:
        self.query_one("#search-session", Select).set_options([(s, s) for s in sessions])

    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self, event) -> None:
        event.stop()
        self.request()

    @on(Input.Submitted)
    def action_focus_results(self) -> None:
        """Down or Enter in a field: on to the results (they are already up to date)."""
        self.query_one("#results", ResultsTable).focus()

    def search_as(self, trace: Any, sessions: list[str]) -> None:
        """The fields as a kept recall had them (``recall_facts``: kind facts); a session the
        tenant no longer has is left out, and the status line says so."""
        a = trace.arguments
        kind = "facts" if trace.call == "recall_facts" else a.get("kind", "episodic")
        self.query_one("#search-kind", Select).value = kind
        session = self.query_one("#search-session", Select)
        session.value = trace.session_id if trace.session_id in sessions else Select.NULL
        for field, name in (("#search-since", "since"), ("#search-until", "until")):
            self.query_one(field, Input).value = a.get(name) or ""
        if a.get("mode") in self.MODES:
            self.set_reactive(SearchView.mode, a["mode"])
        self.query_one("#query", Input).value = trace.query

    def as_typed(self) -> Changed:
        """The search as the fields say now (its number not yet taken); a date that does not
        parse raises ValueError."""
        since = parse_day(self.query_one("#search-since", Input).value)
        until = parse_day(self.query_one("#search-until", Input).value, end=True)
        session = self.query_one("#search-session", Select).value
        return self.Changed(
            self.query_one("#query", Input).value,
            str(self.query_one("#search-kind", Select).value),
            None if session is Select.NULL else str(session),
            since,
            until,
            self.mode,
        )

    def request(self) -> None:
        try:
            request = self.as_typed()
        except ValueError:
            self.query_one("#search-status", Label).update("dates look like 2026-03-01")
            return
        self.seq += 1
        request.seq = self.seq
        # Handed over directly: as a message it waited ~7 ms in the App's queue behind the
        # redraw of every keystroke, before the search could even start.
        self.search.request(request)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The search thread ended with an error (a search's own error is reported by the search):
        the App shows it, and the next keystroke starts a new thread."""
        if event.state == WorkerState.ERROR:
            self.search.forget_thread(event.worker)
            self.post_message(
                WorkerFailed(event.worker, event.worker.error or RuntimeError("the search thread stopped without saying why"))
            )

    def on_unmount(self) -> None:
        self.search.stop()

    def on_search_results(self, m: SearchResults) -> None:
        if m.seq != self.seq:
            if m.painted is not None:
                m.painted.set()  # never painted: the hybrid half need not wait for it
            return  # stale: never paint over newer results
        self.show(m.hits, m.status)
        if m.painted is not None:
            # Run once the screen has been refreshed, that is with these results on it.
            self.call_after_refresh(m.painted.set)

    @on(ResultsTable.ModeWanted)
    def next_mode(self) -> None:
        """Search the same query in the next mode (the search runs on the search thread)."""
        self.mode = self.MODES[(self.MODES.index(self.mode) + 1) % len(self.MODES)]

    def watch_mode(self) -> None:
        self.request()

    def show(self, hits: list[Any], status: str) -> None:
        rows = []
        best_keyword = max((h.scores.keyword for h in hits if h.scores.keyword is not None), default=None)
        for h in hits:
            s = h.scores
            rows.append(
                (
                    f"{h.kind}:{h.id}",
                    h,
                    (
                        h.kind,
                        score_bars(s, best_keyword),
                        highlighted(h.text, h.matched_terms, 52),
                        score(s.score, 3),
                        f"{score(s.vector)} {rank(s.vector_rank)}",
                        f"{score(s.keyword, 2)} {rank(s.keyword_rank)}",
                        when(h.occurred_at),
                    ),
                )
            )
        self.query_one(ResultsTable).show_rows(rows)
        # Its size is fixed (app.tcss), so no layout pass: another 6-14 ms on every keystroke.
        self.query_one("#search-status", Label).update(status, layout=False)

    def show_error(self, text: str) -> None:
        self.query_one("#search-status", Label).update(Text(text, style="bold red"))

    def clear(self, hint: str) -> None:
        self.query_one(ResultsTable).reset()
        self.query_one("#search-status", Label).update(hint)


class BlocksView(Column):
    def compose(self) -> ComposeResult:
        yield BlocksTable("slot", "name", "content", "updated", id="blocks-table", render=lambda b: (f"block {b.name}", detail.block(b)))

    def show(self, blocks: list[Any]) -> None:
        table = self.query_one(RecordTable)
        keep = table.selected_key()
        table.reset()
        for b in blocks:
            table.add_record(b.name, b, str(b.pinned_order), b.name, one_line(b.content, 70), when(b.updated_at))
        table.select_key(keep)

    def clear(self, hint: str) -> None:
        self.query_one(RecordTable).reset()


class EpisodesView(Column):
    class Wanted(Carrier):
        """The App should load episodes: the first page (``cursor`` None) or the next one."""

        session_id: str | None
        since: datetime | None
        until: datetime | None
        cursor: str | None

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.next_cursor: str | None = None
        self.loading = False

    def compose(self) -> ComposeResult:
        with Row(classes="filters"):
            yield Select([], prompt="any session", id="episodes-session", compact=True)
            yield Input(placeholder="since YYYY-MM-DD", id="episodes-since", classes="date", compact=True)
            yield Input(placeholder="until YYYY-MM-DD", id="episodes-until", classes="date", compact=True)
        yield Label("", id="episodes-status")
        yield EpisodesTable(
            "when", "session", "input", "output", id="episodes-table", render=lambda e: (f"episode {e.id[:12]}", detail.episode(e))
        )

    def filters(self) -> tuple[str | None, datetime | None, datetime | None]:
        session = self.query_one("#episodes-session", Select).value
        since = parse_day(self.query_one("#episodes-since", Input).value)
        until = parse_day(self.query_one("#episodes-until", Input).value, end=True)
        return (None if session is Select.NULL else str(session)), since, until

    def set_sessions(self, sessions: list[str]) -> None:
        self.query_one("#episodes-session", Select).set_options([(s, s) for s in sessions])

    @on(Input.Changed)
    @on(Select.Changed)
    def _filters_changed(self, event) -> None:
        event.stop()
        self.request(None)

    def request(self, cursor: str | None) -> None:
        try:
            session, since, until = self.filters()
        except ValueError:
            self.query_one("#episodes-status", Label).update("dates look like 2026-03-01")
            return
        self.loading = True
        self.post_message(self.Wanted(session, since, until, cursor))

    def show(self, page: Any, append: bool) -> None:
        table = self.query_one(RecordTable)
        keep = None if append else table.selected_key()
        if not append:
            table.reset()
        for e in page.items:
            table.add_record(e.id, e, when(e.occurred_at), e.session_id or "-", one_line(e.input, 50), one_line(e.output, 50))
        self.next_cursor = page.next_cursor
        self.loading = False
        more = " (scroll for more)" if page.next_cursor else ""
        self.query_one("#episodes-status", Label).update(f"{table.row_count} episodes shown, newest first{more}")
        table.select_key(keep)

    def clear(self, hint: str) -> None:
        self.query_one(RecordTable).reset()
        self.next_cursor = None
        self.query_one("#episodes-status", Label).update(hint)

    @on(LineTable.RowHighlighted, "#episodes-table")
    def _near_end(self, event: LineTable.RowHighlighted) -> None:
        table = self.query_one(RecordTable)
        if self.next_cursor and not self.loading and event.cursor_row >= table.row_count - 10:
            self.request(self.next_cursor)


class FactsView(Column):
    class Wanted(Carrier):
        valid_at: datetime | None
        history: bool

    def compose(self) -> ComposeResult:
        with Row(classes="filters"):
            yield Input(placeholder="as of YYYY-MM-DD (empty: now)", id="facts-as-of", classes="date", compact=True)
            yield Checkbox("history", value=False, id="facts-history", compact=True)
        yield Label("", id="facts-status")
        # The status first, in words: at 80 columns the last columns are off-screen, and a
        # dimmer grey alone (gone with NO_COLOR) was all that told a superseded fact apart.
        yield WhyNotTable(
            "status",
            "subject",
            "predicate",
            "object",
            "conf.",
            "valid from",
            "valid until",
            id="facts-table",
            render=lambda f: (f"fact {f.subject} {f.predicate}", detail.fact(f)),
        )

    @on(Input.Changed)
    @on(Checkbox.Changed)
    def _changed(self, event) -> None:
        event.stop()
        self.request()

    def request(self) -> None:
        try:
            valid_at = parse_day(self.query_one("#facts-as-of", Input).value)
        except ValueError:
            self.query_one("#facts-status", Label).update("dates look like 2026-03-01")
            return
        self.post_message(self.Wanted(valid_at, self.query_one("#facts-history", Checkbox).value))

    def show(self, facts: list[Any], valid_at: datetime | None, history: bool = False, known_at: datetime | None = None) -> None:
        table = self.query_one(RecordTable)
        keep = table.selected_key()
        table.reset()
        for f in facts:
            status = Text("current", style="green") if f.valid_until is None else Text("superseded", style="dim yellow")
            style = "" if f.valid_until is None else "dim"
            table.add_record(
                f.id,
                f,
                status,
                Text(f.subject, style=style),
                Text(f.predicate, style=style),
                Text(f.object, style=style),
                f"{f.confidence:.2f}",
                when(f.valid_from),
                when(f.valid_until),
            )
        self.query_one("#facts-status", Label).update(facts_headline(facts, valid_at, history, known_at))
        table.select_key(keep)

    def clear(self, hint: str) -> None:
        self.query_one(RecordTable).reset()
        self.query_one("#facts-status", Label).update(hint)


def facts_headline(facts: list[Any], valid_at: datetime | None, history: bool, known_at: datetime | None = None) -> str:
    """Counts what the table shows: with history, the superseded facts are counted apart. In the
    past (``known_at``), as the store held them then."""
    then = "" if known_at is None else f", as known on {when(known_at)}"
    if valid_at is not None:
        return f"{len(facts)} facts believed on {when(valid_at)}{then}"
    superseded = sum(1 for f in facts if f.valid_until is not None)
    moment = "now" if known_at is None else "then"
    if not history:
        return f"{len(facts)} facts believed {moment}{then}"
    return f"{len(facts)} facts: {len(facts) - superseded} believed {moment}, {superseded} superseded{then}"


SESSION_ID_WIDTH = 18  # with the episodes and a whole update time: the list's 50 columns


class SessionsView(Row):
    class Picked(Carrier):
        session_id: str

    shown_session: str | None = None

    def compose(self) -> ComposeResult:
        yield RecordTable("session", "episodes", "updated", id="sessions-table", classes="sessions-list")
        with VerticalScroll(classes="session-detail"):
            yield Static("", id="task-state")
            yield ProgressBar(total=100, show_eta=False, id="task-progress")
            yield Label("keys", classes="section")
            yield RecordTable("key", "value", "TTL", id="kv-table", render=self._kv_detail)
            yield Label("scratchpad", classes="section")
            yield RecordTable("written", "note", id="notes-table", render=lambda n: ("note", detail.note(n)))
            yield Label("checkpoints  (d diff with now · m then d diff two · r restore)", classes="section")
            yield CheckpointsTable(
                "created", "description", "id", id="checkpoints-table", render=lambda c: (f"checkpoint {c.id[:12]}", detail.checkpoint(c))
            )

    def _kv_detail(self, entry):
        from store.validation import utcnow  # the store's clock, which tests freeze

        return f"key {entry.key}", detail.kv(entry, utcnow())

    def show_sessions(self, sessions: list[Any]) -> None:
        table = self.query_one("#sessions-table", RecordTable)
        keep = table.selected_key()
        table.reset()
        for s in sessions:
            # A long session id is cut to leave its update time on screen (the detail names it whole).
            table.add_record(s.session_id, s, one_line(s.session_id, SESSION_ID_WIDTH), str(s.episodes), when(s.updated_at))
        table.select_key(keep)

    @on(LineTable.RowHighlighted, "#sessions-table")
    def _picked(self, event: LineTable.RowHighlighted) -> None:
        self.post_message(self.Picked(event.key))

    def selected_session(self) -> str | None:
        return self.query_one("#sessions-table", RecordTable).selected_key()

    def show_session(self, session_id: str, data: dict[str, Any]) -> None:
        self.shown_session = session_id
        task, note = data["task"], data.get("note", "")
        if note:  # in the past: where the state shown comes from, or why there is none
            self.query_one("#task-state", Static).update(Text.assemble(describe_task(task), "\n", (note, "italic")))
            self.query_one("#task-progress", ProgressBar).update(progress=0 if task is None else task.progress_percent)
        else:
            self.query_one("#task-state", Static).update(describe_task(task))
            self.query_one("#task-progress", ProgressBar).update(progress=0 if task is None else task.progress_percent)
        for table_id, rows in (("#kv-table", data["kv"]), ("#notes-table", data["notes"]), ("#checkpoints-table", data["checkpoints"])):
            table = self.query_one(table_id, RecordTable)
            keep = table.selected_key()
            table.reset()
            for key, record, cells in rows:
                table.add_record(key, record, *cells)
            table.select_key(keep)

    def clear(self, hint: str) -> None:
        self.shown_session = None
        for table in self.query(RecordTable):
            table.reset()
        self.query_one("#task-state", Static).update(Text(hint, style="dim"))
        self.query_one("#task-progress", ProgressBar).update(progress=0)


def describe_task(task: Any) -> Text:
    if task is None:
        return Text("no task state", style="dim")
    steps = f"step {task.current_step}/{task.total_steps}" if task.total_steps else f"step {task.current_step}"
    return Text.assemble((task.task or "(task)", "bold"), f"  {steps} · {task.status}")


def session_rows(entries, notes, checkpoints, now: datetime) -> dict[str, Any]:
    return {
        "kv": [(e.key, e, (e.key, one_line(json.dumps(e.value, ensure_ascii=False), 40), remaining(e.expires_at, now))) for e in entries],
        # Keyed by position too: notes rebuilt from a checkpoint carry no id of their own.
        "notes": [(f"{i}:{n.id}", n, (when(n.created_at), one_line(n.content, 50))) for i, n in enumerate(notes)],
        "checkpoints": [(c.id, c, (when(c.created_at), c.description or "-", c.id[:12])) for c in checkpoints],
    }


class AuditView(Column):
    def compose(self) -> ComposeResult:
        yield RecordTable(
            "when",
            "action",
            "actor",
            "records",
            "digest",
            id="audit-table",
            render=lambda a: (f"{a.action} {when(a.at)}", detail.audit_entry(a)),
        )

    def show(self, entries: list[Any]) -> None:
        table = self.query_one(RecordTable)
        table.reset()
        for i, a in enumerate(entries):
            total = sum(v for k, v in a.counts.items() if k != "vectors")
            table.add_record(f"{i}:{a.digest}", a, when(a.at), audit_action(a), a.actor, str(total), a.digest[:16])

    def clear(self, hint: str) -> None:
        self.query_one(RecordTable).reset()


TENANT_VIEWS = (SearchView, BlocksView, EpisodesView, FactsView, SessionsView, AuditView)
