"""The main screen: the tenant list and the selected tenant's views, the state they are bound to
(the selected tenant, the moment shown, the tenants listed), and what the keys do there: which
actions are enabled (and why not), switching views, export and forget, time travel, the store's
audit log and help.

It builds its widgets: the tenant list and the footer for the first frame, the tier views just
after it. The App keeps the store's life and tells this screen when the store opened, changed or
failed (:meth:`MainScreen.store_opened` and the rest); the screen asks nothing of the App but
Textual's own (``tests/test_inspector_layout.py``). It is the ``inspector.host.Host`` of its
views and search, and runs the store work its keys ask for in workers of its own
(``inspector.workers``). The dialogs and the views are imported where used: after the first frame.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Button, Header, Input, Label, OptionList

from .. import messages
from ..messages import TenantName
from ..widgets.backdrops import Row
from ..widgets.footer import KeysFooter
from ..widgets.tenant_list import LISTED_AT_MOST, NO_TENANT, TenantList
from ..workers import call_store

if TYPE_CHECKING:
    from store.views import StoreView

    from ..opening import Glance
    from ..widgets.views import SearchView

VIEWS = ["search", "blocks", "episodes", "facts", "sessions", "audit"]
MAIN_TABLE = {
    "search": "#results",
    "blocks": "#blocks-table",
    "episodes": "#episodes-table",
    "facts": "#facts-table",
    "sessions": "#sessions-table",
    "audit": "#audit-table",
}
"""Each view's list, where a digit key puts the focus."""

GLANCE_WAIT = 0.25  # seconds the first frame may wait for the names (here: 2 ms to read, 3-8 ms to import sqlite3)


class MainScreen(Screen[None]):
    BLANK = True  # covered by its widgets: drawn as blank background (widgets/backdrops.py says why)
    BINDINGS = [
        # A priority binding: it acts when "/" reaches the screen, before the next key is handed
        # to the widget that had the focus. An ordinary binding acts only after "/" has gone to
        # that widget and bubbled back, and a fast typist's next letter was by then queued at the
        # tenant list and lost. check_action lets "/" through wherever it types.
        Binding("slash", "focus_search", "Search", priority=True),
        Binding("t", "focus_tenants", "Tenants"),
        Binding("escape", "focus_tenants", "Tenants", show=False),
        Binding("e", "export", "Export"),
        Binding("f", "forget", "Forget"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "app.quit", "Quit"),
        Binding("ctrl+r", "reload", "Reload", show=False),
        # Time travel: every view of the selected tenant as of a past moment (inspector.time_travel).
        # Off the footer, which is full at 80 columns; the help, the palette and the banner shown
        # in the past name them.
        Binding("T", "timeline", "Timeline", show=False),
        Binding("R", "recalls", "Recalls", show=False),
        Binding("left_square_bracket", "step_back", "Earlier", show=False),
        Binding("right_square_bracket", "step_forward", "Later", show=False),
        Binding("D", "diff_with_now", "Diff with now", show=False),
        Binding("n", "to_now", "Now"),
        *[Binding(str(i + 1), f"show_view('{name}')", name.title(), show=False) for i, name in enumerate(VIEWS)],
    ]

    as_of: reactive[datetime | None] = reactive(None, init=False)
    """The moment the selected tenant's views show; None: now, live."""
    user_id: reactive[Any] = reactive(NO_TENANT, init=False, always_update=True)
    """The selected tenant (None: the anonymous bucket), or NO_TENANT; the tenant list and the
    views are bound to it. Set again to the same tenant, it reloads its views."""

    def __init__(self, glance: Glance, *, show_timings: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.glance = glance
        """The tenant names read before the store opens (inspector.opening)."""
        self.show_timings = show_timings
        """Whether the search line shows the time a search took (off for snapshots, where it would differ per run)."""
        self.store: StoreView | None = None  # given by the App once open (store_opened)
        self.opening = True  # until the store has opened or failed to
        self.failed: str | None = None
        self.read_only_reason: str | None = None
        self.tenants: list[Any] = []
        self.picked_a_tenant = False  # the first tenant is selected once, at start-up; never again by itself
        self.early_view: str | None = None  # a view asked for before the views existed

    # --- the first frame, then the views -----------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Row(id="main"):
            yield TenantList(id="sidebar").data_bind(selected=MainScreen.user_id)
            # The tier views join here after the first frame (on_mount says why). Until then "/"
            # shows this box, so what is typed next is text, not keys (a "q" would have quit),
            # and it moves into the search box when that exists.
            yield Input(placeholder="search this tenant's memory…", id="early-query", classes="hidden")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#sidebar").border_title = "tenants"
        # The names are what a user waits for; read with sqlite3 alone since the App was made,
        # they are usually there for the first frame. MemoryStore.open must import SQLAlchemy
        # first (~0.6 s with the rest of store), which put them at 5x a bare app's first line
        # on screen here.
        if self.glance.done.wait(GLANCE_WAIT):
            self.on_tenant_names(messages.TenantNames(self.glance.names))
        else:
            self.run_worker(self.await_names, thread=True, group="glance", exit_on_error=False)
        # The tier views and the open come after that frame: both would compete with it for the GIL.
        self.call_after_refresh(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        main = self.query_one("#main")
        if not main.is_attached:  # the user quit at the first frame
            return
        from ..widgets.tenant_views import TenantViews

        views = TenantViews(self, id="content").data_bind(MainScreen.user_id, MainScreen.as_of)
        await main.mount(views)
        self.take_early_keys()
        self.post_message(messages.ViewsReady())  # the App opens the store: after the views are whole

    def take_early_keys(self) -> None:
        """Apply what was pressed before the views existed: the last view asked for by its
        digit, and the text typed after "/" (with the focus, if it is still there)."""
        early = self.query_one("#early-query", Input)
        if self.early_view is not None:
            self.action_show_view(self.early_view)
        if early.display:
            had_focus = self.focused is early
            query = self.query_one("#query", Input)
            query.value = early.value
            query.cursor_position = early.cursor_position
            if had_focus:
                self.action_focus_search()
                # The box selects all its text when it gains the focus, and the next key would
                # replace it: put the cursor back where it was, after that Focus is handled.
                query.call_later(setattr, query, "cursor_position", early.cursor_position)
        early.remove()

    # --- what the App tells: the store's life -------------------------------------------------------

    def store_opened(self, store: StoreView, read_only_reason: str | None) -> None:
        self.store, self.read_only_reason, self.opening = store, read_only_reason, False
        self.refresh_bindings()
        self.load_tenants()
        self.reload_tenant_views()  # of a tenant selected from the names

    def store_failed(self, error: str) -> None:
        self.opening, self.failed = False, error
        self.query_one("#main").display = False  # nothing in it may keep focus, and so keys, from the dialog
        self.refresh_bindings()

    def store_changed(self) -> None:
        self.load_tenants()
        self.reload_tenant_views()

    def model_ready(self) -> None:
        """Semantic search is there now: search again, with it."""
        searching = self.search_view()
        if searching is not None:
            searching.request()

    def now(self) -> datetime:
        from store.validation import utcnow

        return utcnow()

    # --- the tenant list -----------------------------------------------------------------------------

    def await_names(self) -> None:
        """In a worker: the names once the glance has read them (the first frame did not wait that long)."""
        self.glance.done.wait()
        self.post_message(messages.TenantNames(self.glance.names))

    def on_tenant_names(self, message: messages.TenantNames) -> None:
        if message.names and not self.tenants:  # else the store has already counted them
            self.tenants = [TenantName(user_id) for user_id in message.names]
            self.show_tenants()

    def load_tenants(self) -> None:
        """Every tenant's name, and the counts of those the list shows first: counting every
        tenant reads every row of the store (seconds at 10,000 tenants); the filter asks for
        the counts of what it shows next (:meth:`_count_tenants`)."""
        store = self.open_store()

        def listing() -> list[Any]:
            names = store.tenant_names()
            counted = {t.user_id: t for t in store.tenants(user_ids=names[:LISTED_AT_MOST])}
            return [counted.get(user_id) or TenantName(user_id) for user_id in names]

        call_store(self, "tenants", listing, messages.TenantsLoaded, group="tenants", exclusive=True)

    def on_tenants_loaded(self, message: messages.TenantsLoaded) -> None:
        self.tenants = message.tenants
        self.show_tenants()

    @on(TenantList.CountsWanted)
    def _count_tenants(self, message: TenantList.CountsWanted) -> None:
        """The counts of tenants the filter brought into view, unless a newer listing is coming."""
        if self.store is None:
            return  # the store is opening: its first listing counts the first screenful
        store, listed = self.store, self.tenants

        def counted(summaries: list[Any]) -> messages.TenantsLoaded | None:
            if self.tenants is not listed:
                return None  # listed again meanwhile, with counts of its own
            found, asked = {t.user_id: t for t in summaries}, set(message.user_ids)
            # One asked for and not found has gone meanwhile (erased by another process).
            kept = [t for t in listed if t.counts is not None or t.user_id not in asked or t.user_id in found]
            return messages.TenantsLoaded([found.get(t.user_id, t) if t.counts is None else t for t in kept])

        call_store(self, "tenants", lambda: store.tenants(user_ids=message.user_ids), counted, group="tenant-counts", exclusive=True)

    def show_tenants(self) -> None:
        shown = self.query_one(TenantList).show(self.tenants, self.user_id, highlight_first=not self.picked_a_tenant)
        if not shown:  # hidden by the filter, erased, or removed by another process
            self.select_tenant(NO_TENANT)

    def visible_tenant(self) -> Any:
        """The tenant highlighted in the list as shown, or NO_TENANT."""
        return self.query_one(TenantList).visible_tenant()

    @on(TenantList.Picked)
    def _tenant_picked(self, message: TenantList.Picked) -> None:
        if message.user_id != self.user_id:
            self.select_tenant(message.user_id)

    def select_tenant(self, user_id: Any) -> None:
        self.as_of = None  # moments are the tenant's own: another tenant opens at now
        self.user_id = user_id

    def watch_user_id(self, user_id: Any) -> None:
        """The tenant views, bound to ``user_id``, load themselves; the screen's own state follows."""
        self.picked_a_tenant = self.picked_a_tenant or user_id is not NO_TENANT
        self.refresh_bindings()

    def watch_as_of(self, at: datetime | None) -> None:
        """The tenant views, bound to ``as_of``, load the moment themselves; the banner says which
        it is, and the App's header (told by a message)."""
        from ..time_travel import moment_label

        if self.query("#past-banner"):
            banner = self.query_one("#past-banner", Label)
            banner.display = at is not None
            if at is not None:
                # The moment and "read-only" first: at 80 columns the line ends in an ellipsis after "n now".
                banner.update(f"AS OF {moment_label(at)} · read-only · n now · [ ] step · T timeline · D diff with now")
        self.post_message(messages.MomentShown(at))
        self.refresh_bindings()

    # --- the tenant views ------------------------------------------------------------------------

    def tenant_views(self) -> Any:
        """The selected tenant's views (widgets.tenant_views.TenantViews), or None before they have mounted."""
        found = self.query("#content")
        return found.first() if found else None

    def search_view(self) -> SearchView | None:
        """The search view (widgets.views.SearchView), or None before the views have mounted."""
        from ..widgets.views import SearchView  # imported after the first frame

        found = self.query("#search-view")
        return found.first(SearchView) if found else None

    def reload_tenant_views(self) -> None:
        views = self.tenant_views()
        if views is not None:
            views.reload()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Back in the tenant list (``t``, ``escape``, a click): the pane shows the tenant, not the last record."""
        views = self.tenant_views()
        if event.widget.id == "tenants" and views is not None:
            views.clear_detail()

    # --- which actions are enabled (and why not), switching views, export and forget -------------

    def open_store(self) -> StoreView:
        """The open store, for an action that needs one: those actions are refused while none is
        open (:meth:`disabled_reason`), so reaching here without one is a defect, said as such."""
        if self.store is None:
            raise RuntimeError("an action that needs the store ran while none was open")
        return self.store

    def disabled_reason(self, action: str) -> str | None:
        """Why ``action`` cannot run now, or None. Keys of disabled actions show dimmed and say this."""
        # Another library's memory is read-only, but erasable in place (through that library).
        erasable = action == "forget" and getattr(self.store, "erases_in_place", False)
        if action in ("forget", "restore") and self.read_only_reason and not erasable:
            return f"the store is read-only ({self.read_only_reason})"
        if action in ("export", "forget", "restore") and self.as_of is not None:
            return "the views show a past moment, read-only: press n for now"
        if action in ("export", "forget", "restore") and self.opening:
            return "the store is still opening"  # the tenant names show before the store has opened
        if action == "recalls" and self.store is not None and not hasattr(self.store, "recall_traces"):
            return "another library's memory, shown where it lives, keeps no recalls"
        if action in ("export", "forget", "timeline", "recalls", "step_back", "step_forward", "diff_with_now") and (
            self.store is None or self.user_id is NO_TENANT
        ):
            return "no tenant selected: pick one in the tenant list"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.failed:
            return action in ("quit", "help_quit")
        if action == "focus_tenants" and self.app.focused is not None and self.app.focused.id == "tenants":
            # Already there: off the footer, which needs the room at 80 columns. (The App's focus,
            # which under a dialog is the dialog's: the footer behind it lists t, as it always has.)
            return False
        if action == "to_now" and self.as_of is None:
            return False  # on the footer only in the past
        if action == "focus_search":
            # Bound with priority, so it is asked first on every screen: off in a dialog, in what
            # takes "/" as text, and before the views have mounted (the search box is not there).
            return self.app.screen is self and not self.typing_here()
        return None if self.disabled_reason(action) else True

    def typing_here(self) -> bool:
        """The focused widget takes printable keys as text: a text field, or an open Select's type-to-search."""
        from textual.widgets import Select  # loaded with Textual's App already: no cost to the first frame

        focused = self.focused
        return isinstance(focused, Input) or (focused is not None and isinstance(focused.parent, Select))

    def action_show_view(self, name: str) -> None:
        if not self.query("#tabs"):  # pressed before the views exist: shown once they do
            self.early_view = name
            return
        tabs: Any = self.query_one("#tabs")  # a TabbedContent, imported after the first frame
        leaving = self.focused is not None and tabs in self.focused.ancestors
        tabs.active = name
        if leaving:
            # Focus would otherwise fall back to a widget of the hidden tab (the search field, whose
            # text it selected), and that switches the tab back: go to the shown tab's list instead.
            self.set_focus(self.query_one(MAIN_TABLE[name]))

    def action_focus_search(self) -> None:
        if not self.query("#query"):  # before the views exist: a box of its own takes the text
            early = self.query_one("#early-query", Input)
            early.display = True
            self.set_focus(early)
            return
        self.action_show_view("search")
        # At once, not as Widget.focus() does it (a callback queued behind keys already typed):
        # the next key reaching the App goes to whatever has the focus when it is handed on.
        self.set_focus(self.query_one("#query", Input))

    def checkpoint_action(self, action: str) -> None:
        """For the command palette: ``action`` on the checkpoint under the cursor, if the user is in the checkpoints table."""
        focused: Any = self.focused
        if focused is None or focused.id != "checkpoints-table":
            self.notify(f"{action}: pick a checkpoint in the Sessions view first", severity="warning")
            return
        reason = focused.want(action)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning")

    def action_focus_tenants(self) -> None:
        self.query_one("#tenants", OptionList).focus()

    def allowed(self, action: str) -> bool:
        """For actions reached without their key (the command palette): refuse with the reason."""
        reason = self.disabled_reason(action)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning")
            return False
        if action in ("export", "forget") and self.visible_tenant() != self.user_id:
            self.notify(f"{action}: no tenant selected: pick one in the tenant list", severity="warning")
            return False  # never act on a tenant the list does not show selected
        return True

    def action_export(self) -> None:
        if not self.allowed("export"):
            return
        stamp = self.now().strftime("%Y%m%d-%H%M%S")
        name = "anonymous" if self.user_id is None else "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.user_id)
        default = str(Path.cwd() / f"memlens-export-{name}-{stamp}.jsonl")
        user = self.user_id

        def chosen(path: str | None) -> None:
            if path:
                self.export_tenant(user, path)

        from .dialogs import ExportScreen

        self.app.push_screen(ExportScreen(user, default), chosen)

    def export_tenant(self, user_id: Any, path: str) -> None:
        store, target = self.open_store(), Path(path).expanduser()
        fmt = "json" if target.suffix == ".json" else "jsonl"

        def export() -> Any:
            from store.errors import OutputExistsError

            try:
                return store.export_to(target, user_ids=[user_id], fmt=fmt, actor="inspector")
            except OutputExistsError:
                raise OutputExistsError(
                    f"{target} already exists; nothing was written. Press e again and give another file name, or delete that file first"
                ) from None

        call_store(
            self,
            "export",
            export,
            lambda manifest: messages.ExportDone(str(target.resolve()), manifest),
            group="export",
            errors=(OSError,),
        )

    def on_export_done(self, m: messages.ExportDone) -> None:
        total = sum(m.manifest["counts"].values())
        unrecorded = " (read-only store: not in its audit log)" if self.read_only_reason else ""
        self.notify(f"exported {total} records to {m.path}{unrecorded}", title="export", timeout=10)

    def action_forget(self) -> None:
        if not self.allowed("forget"):
            return
        user = self.user_id

        def chosen(scope) -> None:
            if scope is not None:
                self.forget(user, *scope)

        from .dialogs import ForgetScreen

        store = self.open_store()

        def preview(session_id: str | None, before: datetime | None) -> Any:
            return store.forget(user_id=user, session_id=session_id, before=before, dry_run=True, actor="inspector")

        self.app.push_screen(ForgetScreen(user, self.tenant_views().session_names, preview), chosen)

    def forget(self, user_id: Any, session_id: str | None, before: datetime | None) -> None:
        store = self.open_store()
        call_store(
            self,
            "forget",
            lambda: store.forget(user_id=user_id, session_id=session_id, before=before, actor="inspector"),
            messages.ForgetDone,
            group="forget",
        )

    def on_forget_done(self, m: messages.ForgetDone) -> None:
        self.tenant_views().clear_detail()  # it may show a record that is gone now
        from .dialogs import ReceiptScreen

        self.app.push_screen(ReceiptScreen(m.receipt))
        self.load_tenants()
        self.reload_tenant_views()

    # --- time travel ---

    def action_timeline(self) -> None:
        if not self.allowed("timeline"):
            return
        from ..time_travel import NOW
        from .timeline import TimelineScreen

        store, user = self.open_store(), self.user_id

        def chosen(moment: Any) -> None:
            if moment is not None and user == self.user_id:
                self.as_of = None if moment == NOW else moment

        self.app.push_screen(TimelineScreen(user, self.as_of, lambda: store.timeline(user_id=user, limit=1000)), chosen)

    def action_recalls(self) -> None:
        if not self.allowed("recalls"):
            return
        from .recalls import RecallsScreen

        user = self.user_id

        def chosen(trace: Any) -> None:
            views = self.tenant_views()
            if trace is not None and user == self.user_id and views is not None:
                views.search_as(trace)
                self.action_show_view("search")

        self.app.push_screen(RecallsScreen(user, self.as_of, self.open_store()), chosen)

    def action_step_back(self) -> None:
        self._step(back=True)

    def action_step_forward(self) -> None:
        if self.as_of is None:
            self.notify("already at now: [ steps back one change", severity="warning")
            return
        self._step(back=False)

    def _step(self, *, back: bool) -> None:
        if not self.allowed("timeline"):
            return
        from ..time_travel import TICK, moments_of, step_back, step_forward

        store, user, shown = self.open_store(), self.user_id, self.as_of
        if back:
            # The changes up to the moment shown, newest first: the two newest moments are all a
            # step back needs, however long the tenant's history is.
            until = None if shown is None else shown + TICK
            read = lambda: store.timeline(user_id=user, until=until, limit=1000)  # noqa: E731
        elif shown is None:
            return  # already at now (action_step_forward says so)
        else:
            # The changes after it (a history of more than 10,000 changes since the moment would
            # step to the oldest of the newest 10,000).
            since = shown + TICK
            read = lambda: store.timeline(user_id=user, since=since, limit=10_000)  # noqa: E731

        def target(changes: list[Any]) -> messages.MomentChosen:
            moments = moments_of(changes)
            return messages.MomentChosen(user, shown, step_back(moments, shown) if shown is None or back else step_forward(moments, shown))

        call_store(self, "timeline", read, target, group="step", exclusive=True)

    @on(messages.MomentChosen)
    def _moment_chosen(self, m: messages.MomentChosen) -> None:
        from ..time_travel import NOW

        if m.user_id != self.user_id or m.shown != self.as_of:
            return  # the user has moved on since the step was asked for
        if m.moment is None:
            self.notify("no earlier change: this is the memory before its first", severity="warning")
        else:
            self.as_of = None if m.moment == NOW else m.moment

    def action_to_now(self) -> None:
        self.as_of = None

    def action_diff_with_now(self) -> None:
        if self.as_of is None:
            self.notify("Diff with now: go to a past moment first ([ or T)", severity="warning")
            return
        from ..time_travel import diff_title

        self.tenant_diff(self.as_of, self.now(), diff_title(self.as_of, None))

    def tenant_diff(self, a: datetime, b: datetime, title: str) -> None:
        """The whole tenant's changes from ``a`` to ``b``, in a dialog."""
        store, user = self.open_store(), self.user_id
        call_store(
            self,
            "diff",
            lambda: store.memory_diff(user_id=user, a=a, b=b),
            lambda diff: messages.TenantDiffed(title, diff),
            group="diff",
            exclusive=True,
        )

    @on(messages.TenantDiffed)
    def _tenant_diffed(self, m: messages.TenantDiffed) -> None:
        from ..widgets.detail import memory_diff
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, memory_diff(m.diff)))

    # --- what the tenant views loaded or ask for: the dialogs are this screen's to show ---

    @on(messages.CheckpointDiffed)
    def _checkpoint_diffed(self, m: messages.CheckpointDiffed) -> None:
        from ..widgets.detail import diff
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, diff(m.diff)))

    @on(messages.BlockHistoryLoaded)
    def _block_history_loaded(self, m: messages.BlockHistoryLoaded) -> None:
        from ..widgets.detail import block_history
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, block_history(m.history)))

    @on(messages.ReplayLoaded)
    def _replay_loaded(self, m: messages.ReplayLoaded) -> None:
        from ..widgets.detail import replay
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, replay(m.replay)))

    @on(messages.RecallsBeforeLoaded)
    def _recalls_before_loaded(self, m: messages.RecallsBeforeLoaded) -> None:
        from ..widgets.detail import recalls
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, recalls(m.traces, m.scope)))

    @on(messages.WhyNotLoaded)
    def _why_not_loaded(self, m: messages.WhyNotLoaded) -> None:
        from ..widgets.detail import why_not
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, why_not(m.explanation)))

    @on(messages.RestoreAsked)
    def _restore_asked(self, m: messages.RestoreAsked) -> None:
        from .dialogs import ConfirmScreen

        checkpoint = m.checkpoint
        views = self.tenant_views()

        def confirmed(yes: bool | None) -> None:
            if yes and views is not None:
                views.restore_checkpoint(checkpoint)

        question = (
            f"Restore session {checkpoint.session_id} to checkpoint “{checkpoint.description or checkpoint.id[:12]}”?\n"
            "Its current keys, task state and notes are replaced."
        )
        self.app.push_screen(ConfirmScreen(question, "Restore"), confirmed)

    # --- the store and help ---

    def action_reload(self) -> None:
        if self.store is not None:
            self.load_tenants()
            self.reload_tenant_views()

    def action_help(self) -> None:
        from .help_screen import HelpScreen

        self.app.push_screen(HelpScreen())

    @on(Button.Pressed, "#store-audit")
    def action_store_audit(self) -> None:
        if self.store is None:
            return
        from .dialogs import StoreAuditScreen

        store = self.open_store()
        self.app.push_screen(StoreAuditScreen(lambda: store.audit_log(all_tenants=True)))
