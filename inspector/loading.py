"""Filling the tier views of the selected tenant, and keeping the detail pane honest.

Mixed into the App. Store calls run in thread workers (``App.fetch``); each result comes back
as its own message, dropped when it is for a tenant no longer selected. Handlers use Textual's
naming convention (``on_blocks_loaded``), since ``@on`` is only collected from the App's own
class body.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual import events

from . import messages
from .printable import tenant_label
from .widgets.tenant_list import NO_TENANT

if TYPE_CHECKING:  # annotations only: the modules themselves load after the first frame
    from textual.widgets import TabbedContent

    from .widgets.detail import ShowDetail
    from .widgets.views import EpisodesView, FactsView, SessionsView

# inspector.views and inspector.overview (and the TabbedContent and Sparkline they use) are
# imported inside the methods: they come after the first frame (see app.py). The detail pane is
# found by its id ("detail") for the same reason.

VIEW_IDS = ("search", "blocks", "episodes", "facts", "sessions", "audit")  # each view's id is "<name>-view"


def up_to(until: datetime | None, at: datetime | None) -> datetime | None:
    """An exclusive end for an episodes query that also stops at the moment shown (inclusive)."""
    if at is None:
        return until
    from .time_travel import TICK

    return min(until, at + TICK) if until is not None else at + TICK


def past_counts(snapshot: Any) -> Any:
    """The overview's counts per tier, of a snapshot."""
    from store.models import TierCounts

    return TierCounts(
        blocks=len(snapshot.blocks),
        episodes=snapshot.episodes,
        facts=len(snapshot.facts),
        sessions=len(snapshot.sessions),
        kv_entries=sum(len(s.kv) for s in snapshot.sessions),
    )


def session_source(then: Any) -> str:
    """Where a session's state at a past moment comes from, in words (store.models.SessionSnapshot)."""
    from .time_travel import moment_label

    if then.source == "checkpoint":
        return f"as of its checkpoint at {moment_label(then.checkpoint_at)}: later changes until the moment are not shown"
    if then.source == "unknown":
        return "changed since, with no checkpoint by then: its state at that moment cannot be rebuilt"
    return ""


class TenantViewsMixin:
    """Mixed into the App; uses only host.Host, its own state below and Textual's App API (tests/test_inspector_layout.py)."""

    past_snapshot: Any = None
    """The snapshot the views of a past moment were filled from (store.models.MemorySnapshot)."""

    def views_mounted(self) -> bool:
        """The tier views are all there: not yet just after start (they mount lazily), nor any more while closing."""
        return all(self.query(f"#{name}-view") for name in VIEW_IDS)  # by id: no import before the first frame

    def clear_views(self) -> None:
        """Nothing of the previous tenant stays on screen while the next one loads (or when none is selected)."""
        from .widgets.views import TENANT_VIEWS

        if not self.views_mounted():
            return
        hint = "" if self.user_id is not NO_TENANT else "no tenant selected: pick one in the tenant list"
        for view in TENANT_VIEWS:
            self.query_one(view).clear(hint)
        self.clear_detail()

    def clear_detail(self) -> None:
        """No record in the detail pane: the selected tenant's overview shows there instead."""
        if self.query("#detail"):
            self.query_one("#detail").clear(None if self.user_id is NO_TENANT else tenant_label(self.user_id))

    def load_tenant_views(self) -> None:
        from .widgets.views import EpisodesView, FactsView, SearchView

        if self.store is None or self.user_id is NO_TENANT or self.failed:
            return
        if not self.views_mounted():
            if not self._exit:  # not there yet: try again after the next frame
                self.call_after_refresh(self.load_tenant_views)
            return
        from .widgets.overview import ACTIVITY_DAYS

        user, store, at = self.user_id, self.store, self.as_of
        if store.model_ready:
            self.run_worker(lambda: store.warm_vectors(user_id=user), thread=True, group="vectors", exclusive=True, exit_on_error=False)
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

    def on_episodes_view_wanted(self, m: EpisodesView.Wanted) -> None:
        if self.store is None or self.user_id is NO_TENANT:
            return
        user, store, append = self.user_id, self.store, m.cursor is not None
        until = up_to(m.until, self.as_of)
        self.fetch(
            "episodes",
            lambda: store.episodes(user_id=user, session_id=m.session_id, since=m.since, until=until, limit=100, cursor=m.cursor),
            lambda t, page: messages.EpisodesLoaded(t, page, append),
        )

    def on_facts_view_wanted(self, m: FactsView.Wanted) -> None:
        if self.store is None or self.user_id is NO_TENANT:
            return
        user, store, history, at = self.user_id, self.store, m.history and m.valid_at is None, self.as_of
        # In the past: the facts as the store held them then, true then unless another date is asked for.
        valid_at = m.valid_at if m.valid_at is not None or history or at is None else at
        self.fetch(
            "facts",
            lambda: store.facts(user_id=user, valid_at=valid_at, include_history=history, known_at=at),
            lambda t, facts: messages.FactsLoaded(t, facts, valid_at, history, at),
        )

    def on_sessions_view_picked(self, m: SessionsView.Picked) -> None:
        self.load_session(m.session_id)

    def load_session(self, session_id: str) -> None:
        user, store, at = self.user_id, self.store, self.as_of
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

    # --- results --------------------------------------------------------------------------------

    def for_this_tenant(self, m: messages.TenantResult) -> bool:
        return m.tenant_key == self.user_id and m.as_of == self.as_of and self.user_id is not NO_TENANT and self.views_mounted()

    def on_blocks_loaded(self, m: messages.BlocksLoaded) -> None:
        from .widgets.views import BlocksView

        if self.for_this_tenant(m):
            self.query_one(BlocksView).show(m.blocks)

    def on_episodes_loaded(self, m: messages.EpisodesLoaded) -> None:
        from .widgets.views import EpisodesView

        if self.for_this_tenant(m):
            self.query_one(EpisodesView).show(m.page, m.append)

    def on_facts_loaded(self, m: messages.FactsLoaded) -> None:
        from .widgets.views import FactsView

        if self.for_this_tenant(m):
            self.query_one(FactsView).show(m.facts, m.valid_at, m.history, m.known_at)

    def on_audit_loaded(self, m: messages.AuditLoaded) -> None:
        from .widgets.views import AuditView

        if self.for_this_tenant(m):
            self.query_one(AuditView).show(m.entries)

    def on_overview_loaded(self, m: messages.OverviewLoaded) -> None:
        if self.for_this_tenant(m):
            self.query_one("#detail").show_overview(tenant_label(m.tenant_key), m.activity, m.counts)

    def on_past_loaded(self, m: messages.PastLoaded) -> None:
        from .widgets.views import BlocksView

        if not self.for_this_tenant(m):
            return
        self.past_snapshot = m.snapshot
        self.query_one(BlocksView).show(m.snapshot.blocks)
        self.query_one("#detail").show_overview(tenant_label(m.tenant_key), m.activity, past_counts(m.snapshot))
        self.show_sessions(m.snapshot.sessions)

    def on_sessions_loaded(self, m: messages.SessionsLoaded) -> None:
        if self.for_this_tenant(m):
            self.show_sessions(m.sessions)

    def show_sessions(self, sessions: list[Any]) -> None:
        """The sessions listed (SessionInfo now, SessionSnapshot in the past), their names in the
        session filters, and the selected one's working memory loaded."""
        from .widgets.views import EpisodesView, SearchView, SessionsView

        self.session_names = [s.session_id for s in sessions]
        view = self.query_one(SessionsView)
        view.show_sessions(sessions)
        for target in (self.query_one(SearchView), self.query_one(EpisodesView)):
            target.set_sessions(self.session_names)
        chosen = view.selected_session()
        if chosen:
            self.load_session(chosen)

    def on_session_loaded(self, m: messages.SessionLoaded) -> None:
        from .widgets.views import SessionsView, session_rows

        if self.for_this_tenant(m):
            rows = session_rows(m.entries, m.notes, m.checkpoints, self.as_of or self.now())
            self.query_one(SessionsView).show_session(m.session_id, {"task": m.task, "note": m.note, **rows})

    # --- the detail pane ------------------------------------------------------------------------

    def on_show_detail(self, m: ShowDetail) -> None:
        if m.source is not None and m.source is not self.focused:
            return  # asked for by a table the user has since left
        self.query_one("#detail").show_record(m.title, m.body)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Back in the tenant list (``t``, ``escape``, a click): the pane shows the tenant, not the last record."""
        if event.widget.id == "tenants":
            self.clear_detail()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """The detail pane belongs to the tab on screen: clear it, then show the focused record there, if any."""
        from .widgets.views import DETAIL_TABLES

        self.clear_detail()
        self.refresh_bindings()
        focused: Any = self.focused
        if isinstance(focused, DETAIL_TABLES) and focused.id in self.active_tables():
            focused.show_detail(focused.selected())

    def active_tables(self) -> set[str]:
        from .widgets.views import DETAIL_TABLES

        pane = self.query_one("#tabs").active_pane
        return {table.id for kind in DETAIL_TABLES for table in pane.query(kind)} if pane is not None else set()
