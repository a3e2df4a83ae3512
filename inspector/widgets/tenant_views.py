"""The selected tenant's memory: its tier views in tabs and the detail pane, filled from the store.

``TenantViews`` watches two reactives bound to the main screen's (``user_id``, the tenant selected, and
``as_of``, the moment shown): when either changes, nothing of the previous tenant or moment stays
on screen and the views load again. Each store call runs in a thread worker of this widget
(``inspector.workers``); its result comes back here as a message and is dropped when it is for a
tenant or moment no longer shown. The views ask for more (another page, another date) with
messages that bubble up to here.

This module is imported after the first frame (``inspector.app``), with the views and their widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, Label, TabbedContent, TabPane

from .. import messages
from ..printable import tenant_label
from ..time_travel import past_counts, session_source, up_to
from ..workers import call_store
from .backdrops import Column
from .detail import ShowDetail
from .overview import ACTIVITY_DAYS, DetailPane
from .results import ResultsTable
from .tenant_list import NO_TENANT
from .views import (
    DETAIL_TABLES,
    TENANT_VIEWS,
    AuditView,
    BlocksTable,
    BlocksView,
    CheckpointsTable,
    EpisodesTable,
    EpisodesView,
    FactsView,
    SearchView,
    SessionsView,
    WhyNotTable,
    session_rows,
)


class Pane(TabPane):
    BLANK = True  # as the containers of backdrops.py: its view covers it


class Tabs(TabbedContent):
    BLANK = True  # covered by its tab bar and the pane shown

    def on_mount(self) -> None:
        # The switcher between the panes, which TabbedContent makes inside itself (so no subclass
        # of ours can take its place), is covered by the pane shown too.
        self.query_one(ContentSwitcher).BLANK = True  # type: ignore[misc]


class TenantViews(Column):
    """The tabs of tier views and the detail pane of the selected tenant (``host``: the main
    screen, for the store and the clock)."""

    user_id: reactive[Any] = reactive(NO_TENANT, init=False, always_update=True)
    """The tenant shown (None: the anonymous bucket), or NO_TENANT; bound to the main screen's."""
    as_of: reactive[Any] = reactive(None, init=False)
    """The moment shown (a datetime), or None: now, live; bound to the main screen's."""

    def __init__(self, host: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.host = host
        self.session_names: list[str] = []
        """The shown tenant's sessions, for the session filters and the forget dialog."""
        self.past_snapshot: Any = None
        """The snapshot the views of a past moment were filled from (store.models.MemorySnapshot)."""
        self.marked_checkpoint: Any = None
        """The checkpoint marked with ``m``, which the next ``d`` diffs against."""

    def compose(self) -> ComposeResult:
        # Shown while the views show a past moment (MainScreen.watch_as_of): in words, so it
        # reads without colour, with the keys that move in time.
        yield Label("", id="past-banner")
        with Tabs(initial="search", id="tabs"):
            with Pane("Search", id="search"):
                yield SearchView(self.host, id="search-view")
            with Pane("Blocks", id="blocks"):
                yield BlocksView(id="blocks-view")
            with Pane("Episodes", id="episodes"):
                yield EpisodesView(id="episodes-view")
            with Pane("Facts", id="facts"):
                yield FactsView(id="facts-view")
            with Pane("Sessions", id="sessions"):
                yield SessionsView(id="sessions-view")
            with Pane("Audit", id="audit"):
                yield AuditView(id="audit-view")
        yield DetailPane(id="detail")

    def watch_user_id(self) -> None:
        self.session_names = []
        self.marked_checkpoint = None
        self.clear_views()
        self.reload()

    def watch_as_of(self) -> None:
        self.clear_views()
        self.reload()

    def views_mounted(self) -> bool:
        """The tier views are all there: not before compose has run, nor any more while closing."""
        return all(self.query(view) for view in TENANT_VIEWS)

    def clear_views(self) -> None:
        """Nothing of the previous tenant stays on screen while the next one loads (or when none is selected)."""
        if not self.views_mounted():
            return
        hint = "" if self.user_id is not NO_TENANT else "no tenant selected: pick one in the tenant list"
        for kind in TENANT_VIEWS:
            view: Any = self.query_one(kind)
            view.clear(hint)
        self.clear_detail()

    def clear_detail(self) -> None:
        """No record in the detail pane: the selected tenant's overview shows there instead."""
        if self.query("#detail"):
            self.query_one(DetailPane).clear(None if self.user_id is NO_TENANT else tenant_label(self.user_id))

    def fetch(self, view: str, call: Callable[[], Any], make: Callable[[Any, Any], messages.TenantResult]) -> None:
        """Run ``call`` in a worker; ``make(tenant, result)`` is the message posted back, stamped
        with the tenant and moment shown when it was asked for."""
        tenant, moment = self.user_id, self.as_of
        call_store(self, view, call, lambda data: make(tenant, data).at(moment), group=f"view-{view}", exclusive=True)

    def reload(self) -> None:
        """Load every view of the tenant and moment shown."""
        store = self.host.store
        if store is None or self.user_id is NO_TENANT or self.host.failed:
            return
        if not self.views_mounted():
            if self.is_attached:  # not composed yet: try again after the next frame
                self.call_after_refresh(self.reload)
            return
        user, at = self.user_id, self.as_of
        if store.model_ready:
            call_store(self, "vectors", lambda: store.warm_vectors(user_id=user), lambda _: None, group="vectors", exclusive=True)
        if at is not None:  # as the memory stood at that moment (inspector.time_travel): one snapshot
            self.fetch(
                "past",
                lambda: (store.snapshot(user_id=user, as_of=at), store.activity(user_id=user, days=ACTIVITY_DAYS, until=at)),
                lambda t, parts: messages.PastLoaded(t, *parts),
            )
            self.fetch("audit", lambda: [a for a in store.audit_log(user_id=user) if a.at <= at], messages.AuditLoaded)
        else:
            self.fetch("blocks", lambda: store.working(user_id=user), messages.BlocksLoaded)
            self.fetch("sessions", lambda: store.sessions(user_id=user), messages.SessionsLoaded)
            self.fetch("audit", lambda: store.audit_log(user_id=user), messages.AuditLoaded)

            def overview() -> tuple[Any, Any]:
                # The weeks up to the tenant's last activity: a tenant idle for a month shows what
                # it did, not a month of zeros (the caption gives the dates).
                profile = store.profile(user_id=user)
                return profile.counts, store.activity(user_id=user, days=ACTIVITY_DAYS, until=profile.last_activity)

            self.fetch("overview", overview, lambda t, parts: messages.OverviewLoaded(t, *parts))
        self.query_one(EpisodesView).request(None)
        self.query_one(FactsView).request()
        self.query_one(SearchView).request()

    # --- what the views ask for -----------------------------------------------------------------

    @on(EpisodesView.Wanted)
    def _episodes_wanted(self, m: EpisodesView.Wanted) -> None:
        store, user, append = self.host.store, self.user_id, m.cursor is not None
        if store is None or user is NO_TENANT:
            return
        until = up_to(m.until, self.as_of)
        self.fetch(
            "episodes",
            lambda: store.episodes(user_id=user, session_id=m.session_id, since=m.since, until=until, limit=100, cursor=m.cursor),
            lambda t, page: messages.EpisodesLoaded(t, page, append),
        )

    @on(FactsView.Wanted)
    def _facts_wanted(self, m: FactsView.Wanted) -> None:
        store, user, history, at = self.host.store, self.user_id, m.history and m.valid_at is None, self.as_of
        if store is None or user is NO_TENANT:
            return
        # In the past: the facts as the store held them then, true then unless another date is asked for.
        valid_at = m.valid_at if m.valid_at is not None or history or at is None else at
        self.fetch(
            "facts",
            lambda: store.facts(user_id=user, valid_at=valid_at, include_history=history, known_at=at),
            lambda t, facts: messages.FactsLoaded(t, facts, valid_at, history, at),
        )

    @on(SessionsView.Picked)
    def _session_picked(self, m: SessionsView.Picked) -> None:
        self.load_session(m.session_id)

    def load_session(self, session_id: str) -> None:
        store, user, at = self.host.store, self.user_id, self.as_of
        # In the past the session's state is in the snapshot the views were filled from (its
        # sessions are the ones listed): only its checkpoints are read again.
        shown = self.past_snapshot if at is not None else None
        if at is not None and (shown is None or shown.as_of != at or shown.user_id != user):
            return  # the snapshot of this moment has not arrived yet; it lists the sessions when it does
        then = None if shown is None else next((s for s in shown.sessions if s.session_id == session_id), None)

        def call():
            memory = store.session(session_id, user_id=user)
            if at is None:
                return memory.get_task_state(), memory.entries(), memory.get_scratchpad(), memory.list_checkpoints()
            checkpoints = [c for c in memory.list_checkpoints() if c.created_at <= at]
            if then is None:
                return None, [], [], checkpoints, "the session did not exist yet"
            return then.task_state, then.kv, then.scratchpad, checkpoints, session_source(then)

        self.fetch("session", call, lambda t, parts: messages.SessionLoaded(t, session_id, *parts))

    # --- the keys of a checkpoint and a block ---------------------------------------------------

    @on(CheckpointsTable.Wanted)
    def _checkpoint_wanted(self, m: CheckpointsTable.Wanted) -> None:
        if m.action == "restore":  # the main screen asks the user first
            self.post_message(messages.RestoreAsked(m.checkpoint))
            return
        {"diff": self.diff_checkpoint, "mark": self.mark_checkpoint}[m.action](m.checkpoint)

    def mark_checkpoint(self, checkpoint: Any) -> None:
        self.marked_checkpoint = checkpoint
        self.app.notify(f"marked checkpoint {checkpoint.description or checkpoint.id[:12]}; select another and press d")

    def diff_checkpoint(self, checkpoint: Any) -> None:
        """The marked checkpoint against this one, or this one against the session's current state."""
        marked = self.marked_checkpoint
        if marked is not None and (marked.session_id != checkpoint.session_id or marked.id == checkpoint.id):
            marked = None
        first, second = (marked, checkpoint) if marked else (checkpoint, None)
        store, user = self.host.store, self.user_id
        target = "the current state" if second is None else f"“{second.description or second.id[:12]}”"
        title = f"“{first.description or first.id[:12]}” → {target}"
        self.marked_checkpoint = None
        call_store(
            self,
            "diff",
            lambda: store.session(first.session_id, user_id=user).diff_checkpoint(first.id, None if second is None else second.id),
            lambda diff: messages.CheckpointDiffed(title, diff),
            group="diff",
            exclusive=True,
        )

    def restore_checkpoint(self, checkpoint: Any) -> None:
        """The session back to ``checkpoint`` (once the user has confirmed it, on the main screen)."""
        store, user = self.host.store, self.user_id
        if store is None:
            return
        call_store(
            self,
            "restore",
            lambda: store.session(checkpoint.session_id, user_id=user).restore_checkpoint(checkpoint.id),
            lambda _: messages.CheckpointRestored(user, checkpoint),
            group="restore",
        )

    @on(messages.CheckpointRestored)
    def _checkpoint_restored(self, m: messages.CheckpointRestored) -> None:
        c = m.checkpoint
        self.app.notify(f"restored session {c.session_id} to “{c.description or c.id[:12]}”")
        if m.tenant_key == self.user_id:
            self.load_session(c.session_id)

    @on(BlocksTable.HistoryWanted)
    def _history_wanted(self, m: BlocksTable.HistoryWanted) -> None:
        store, user, block = self.host.store, self.user_id, m.block
        if store is None:
            return
        call_store(
            self,
            "history",
            lambda: store.block_history(block.name, user_id=user),
            lambda history: messages.BlockHistoryLoaded(f"block {block.name}: its versions, newest first", history),
            group="history",
            exclusive=True,
        )

    @on(WhyNotTable.WhyNotWanted)
    def _why_not_wanted(self, m: WhyNotTable.WhyNotWanted) -> None:
        from ..searching import SEARCH_LIMIT

        store, user, memory = self.host.store, self.user_id, m.memory
        if store is None or user is NO_TENANT:
            return
        if self.as_of is not None:
            self.app.notify("why-not explains a search of now: press n to come back to now first", severity="warning")
            return
        try:
            search = self.query_one(SearchView).as_typed()
        except ValueError:
            self.app.notify("the search's dates look like 2026-03-01", severity="warning")
            return
        if not search.query.strip():
            self.app.notify("type a search first (/): w then says where this memory ranks for it, and why", severity="warning")
            return
        what = f"episode {memory.id[:12]}" if hasattr(memory, "occurred_at") else f"fact {memory.subject} {memory.predicate}"
        call_store(
            self,
            "why not",
            lambda: store.explain(
                search.query,
                memory.id,
                user_id=user,
                limit=SEARCH_LIMIT,
                session_id=search.session_id,
                time_range=None if search.since is None and search.until is None else (search.since, search.until),
                kind=search.kind,
                mode=search.mode,
            ),
            lambda answer: messages.WhyNotLoaded(f"{what} for “{search.query}”", answer),
            group="why-not",
            exclusive=True,
        )

    def search_as(self, trace: Any) -> None:
        """The Search tab's fields set to a kept recall (its query, kind, session, dates and mode),
        so ``w`` on a memory says why that recall did not bring it back."""
        self.query_one(SearchView).search_as(trace, self.session_names)

    @on(EpisodesTable.RecallsBeforeWanted)
    def _recalls_before_wanted(self, m: EpisodesTable.RecallsBeforeWanted) -> None:
        store, user, episode = self.host.store, self.user_id, m.episode
        traces = getattr(store, "recall_traces", None)
        if traces is None or user is NO_TENANT:
            self.app.notify("this memory keeps no recall traces", severity="warning")
            return

        def call() -> tuple[list[Any], str]:
            # The recalls filtered to the episode's session; an agent that recalls across sessions
            # filters to none, so then the tenant's recalls just before the episode.
            if episode.session_id is not None:
                found = traces(user_id=user, session_id=episode.session_id, as_of=episode.occurred_at, limit=5)
                if found:
                    return found, f"in session {episode.session_id} up to this episode"
            return traces(user_id=user, as_of=episode.occurred_at, limit=5), "up to this episode"

        call_store(
            self,
            "recalls",
            call,
            lambda parts: messages.RecallsBeforeLoaded(f"what the agent had just retrieved: episode {episode.id[:12]}", *parts),
            group="recalls-before",
            exclusive=True,
        )

    # --- results --------------------------------------------------------------------------------

    def for_this_tenant(self, m: messages.TenantResult) -> bool:
        return m.tenant_key == self.user_id and m.as_of == self.as_of and self.user_id is not NO_TENANT and self.views_mounted()

    @on(messages.BlocksLoaded)
    def _blocks_loaded(self, m: messages.BlocksLoaded) -> None:
        if self.for_this_tenant(m):
            self.query_one(BlocksView).show(m.blocks)

    @on(messages.EpisodesLoaded)
    def _episodes_loaded(self, m: messages.EpisodesLoaded) -> None:
        if self.for_this_tenant(m):
            self.query_one(EpisodesView).show(m.page, m.append)

    @on(messages.FactsLoaded)
    def _facts_loaded(self, m: messages.FactsLoaded) -> None:
        if self.for_this_tenant(m):
            self.query_one(FactsView).show(m.facts, m.valid_at, m.history, m.known_at)

    @on(messages.AuditLoaded)
    def _audit_loaded(self, m: messages.AuditLoaded) -> None:
        if self.for_this_tenant(m):
            self.query_one(AuditView).show(m.entries)

    @on(messages.OverviewLoaded)
    def _overview_loaded(self, m: messages.OverviewLoaded) -> None:
        if self.for_this_tenant(m):
            self.query_one(DetailPane).show_overview(tenant_label(m.tenant_key), m.activity, m.counts)

    @on(messages.PastLoaded)
    def _past_loaded(self, m: messages.PastLoaded) -> None:
        if not self.for_this_tenant(m):
            return
        self.past_snapshot = m.snapshot
        self.query_one(BlocksView).show(m.snapshot.blocks)
        self.query_one(DetailPane).show_overview(tenant_label(m.tenant_key), m.activity, past_counts(m.snapshot))
        self.show_sessions(m.snapshot.sessions)

    @on(messages.SessionsLoaded)
    def _sessions_loaded(self, m: messages.SessionsLoaded) -> None:
        if self.for_this_tenant(m):
            self.show_sessions(m.sessions)

    def show_sessions(self, sessions: list[Any]) -> None:
        """The sessions listed (SessionInfo now, SessionSnapshot in the past), their names in the
        session filters, and the selected one's working memory loaded."""
        self.session_names = [s.session_id for s in sessions]
        view = self.query_one(SessionsView)
        view.show_sessions(sessions)
        for target in (self.query_one(SearchView), self.query_one(EpisodesView)):
            target.set_sessions(self.session_names)
        chosen = view.selected_session()
        if chosen:
            self.load_session(chosen)

    @on(messages.SessionLoaded)
    def _session_loaded(self, m: messages.SessionLoaded) -> None:
        if self.for_this_tenant(m):
            rows = session_rows(m.entries, m.notes, m.checkpoints, self.as_of or self.host.now())
            self.query_one(SessionsView).show_session(m.session_id, {"task": m.task, "note": m.note, **rows})

    # --- the detail pane ------------------------------------------------------------------------

    @on(ShowDetail)
    def _show_detail(self, m: ShowDetail) -> None:
        if m.source is not None and m.source is not self.screen.focused:
            return  # asked for by a table the user has since left
        self.query_one(DetailPane).show_record(m.title, m.body, m.source)

    @on(ResultsTable.RowsReplaced)
    def _rows_replaced(self, m: ResultsTable.RowsReplaced) -> None:
        if self.query_one(DetailPane).record_source is m.table:
            self.clear_detail()  # a hit of the previous query must not stand beside the new results

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """The detail pane belongs to the tab on screen: clear it, then show the focused record there, if any."""
        self.clear_detail()
        self.app.refresh_bindings()
        focused: Any = self.screen.focused
        if isinstance(focused, DETAIL_TABLES) and focused.id in self.active_tables():
            focused.show_detail(focused.selected())

    def active_tables(self) -> set[str]:
        pane = self.query_one(TabbedContent).active_pane
        return {table.id for kind in DETAIL_TABLES for table in pane.query(kind) if table.id} if pane is not None else set()
