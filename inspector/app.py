"""The memlens inspector. The App owns the store: every store call runs in a thread worker
that posts a message back; handlers update the widgets."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.widgets import Header, Input, Label
from textual.worker import Worker, WorkerState

from . import config, messages
from .collecting import PAUSE, IdleCollection
from .commands import system_commands
from .ending import end_on_signals
from .failures import describe, is_damage
from .locations import is_server_url, shown
from .messages import TenantName
from .opening import Glance
from .printable import printable
from .screens.main import MainScreen
from .searching import SEARCH_LIMIT
from .widgets.backdrops import Row
from .widgets.footer import KeysFooter
from .widgets.tenant_list import LISTED_AT_MOST, NO_TENANT, TenantList
from .workers import call_store

if TYPE_CHECKING:  # imported after the first frame
    from .widgets.views import SearchView

__all__ = ["MemlensApp", "make_app", "is_idle", "NO_TENANT", "SEARCH_LIMIT"]

# The first frame shows the tenant list and the footer only. The tier views, the dialogs and what
# they use (Select, RadioSet, TabbedContent, ...: inspector.views and inspector.screens) are imported
# when first needed, just after that frame: their modules and the default CSS of their widgets
# were part of what the first frame waited for.


LONG_LIVED = ("poll", "search", "vectors")  # worker groups that are not one-off loads


def is_idle(app: MemlensApp) -> bool:
    """No view load, action or search is under way (for tests, screenshots and benchmarks).

    The model thread counts once the model is warm: what it still does (load the tenant's
    vectors, announce the model, which searches again) changes the screen."""
    warm = app.store is not None and app.store.model_ready
    if warm and app.model_thread is not None and app.model_thread.is_alive():
        return False
    searching = app.search_view()
    busy = searching is not None and searching.search.busy
    return not app.opening and not busy and not any(w.is_running for w in app.workers if w.group not in LONG_LIVED)


def freeze_startup_objects() -> None:
    """Leave what start-up built (Textual, SQLAlchemy, the model's runtime: ~140k objects) out of
    every later garbage collection. Scanning them made each full collection a 130-270 ms pause
    in the middle of typing, every few seconds; frozen, the same collections took 7-60 ms."""
    gc.freeze()


GLANCE_WAIT = 0.25  # seconds the first frame may wait for the names (here: 2 ms to read, 3-8 ms to import sqlite3)


class MemlensApp(App):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "memlens"
    AUTO_FOCUS = "#tenants"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    BINDINGS = [
        # Ctrl+C quits, as in every terminal program (Textual would only say "press ctrl+q"). The
        # other keys are the main screen's (screens.main) and each dialog's.
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    as_of: reactive[datetime | None] = reactive(None, init=False)
    """The moment the selected tenant's views show; None: now, live."""
    user_id: reactive[Any] = reactive(NO_TENANT, init=False, always_update=True)
    """The selected tenant (None: the anonymous bucket), or NO_TENANT; the tenant list is bound to
    it. Set again to the same tenant, it reloads its views."""

    def __init__(
        self, path: str | Path, *, embedder: Any = "default", warm_model: bool = True, poll_seconds: float = 1.0, show_timings: bool = True
    ):
        super().__init__()
        self.path = path if is_server_url(path) else Path(path)
        self.embedder_spec = embedder
        self.warm_on_start = warm_model
        self.poll_seconds = poll_seconds
        self.idle_collection = IdleCollection()
        """Full garbage collections wait for a pause in the typing (inspector/collecting.py)."""
        self.store: Any = None  # the open store (a MemoryStore, or a view of another library's memory)
        self.read_only_reason: str | None = None
        self.failed: str | None = None
        self.opening = True  # until the store has opened or failed to
        self.tenants: list[Any] = []
        self.picked_a_tenant = False  # the first tenant is selected once, at start-up; never again by itself
        self.early_view: str | None = None  # a view asked for before the views existed
        self.seen_version: int | None = None
        self.show_timings = show_timings
        """Whether the search line shows the time a search took (off for snapshots, where it would differ per run)."""
        self.model_thread: threading.Thread | None = None
        saved_theme = config.load().get("theme")
        if saved_theme in self.available_themes:
            self.theme = saved_theme
        self.glance = Glance(self.path)

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Row(id="main"):
            yield TenantList(id="sidebar").data_bind(selected=MemlensApp.user_id)
            # The tier views join here after the first frame (on_mount says why). Until then "/"
            # shows this box, so what is typed next is text, not keys (a "q" would have quit),
            # and it moves into the search box when that exists.
            yield Input(placeholder="search this tenant's memory…", id="early-query", classes="hidden")
        yield KeysFooter()

    def on_mount(self) -> None:
        if not self.is_headless:
            # A closed terminal (SIGHUP) or a kill (SIGTERM) ends the app as `q` does, so the store
            # is closed and a view's private copy of another library's memory deleted; where it
            # cannot (the terminal gone), ending.py ends the process. Not POSIX, or not the main
            # thread: the default ending, and the next start's sweep.
            end_on_signals(self.exit, asyncio.get_running_loop())
        self.sub_title = f"{shown(self.path)} · opening…"
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
        from .widgets.tenant_views import TenantViews

        views = TenantViews(self, id="content").data_bind(MemlensApp.user_id, MemlensApp.as_of)
        await main.mount(views)
        self.take_early_keys()
        self.open_store()  # after the views are whole: a store message may go to any of them

    def take_early_keys(self) -> None:
        """Apply what was pressed before the views existed: the last view asked for by its
        digit, and the text typed after "/" (with the focus, if it is still there)."""
        early = self.query_one("#early-query", Input)
        if self.early_view is not None:
            self.main_screen.action_show_view(self.early_view)
        if early.display:
            had_focus = self.focused is early
            query = self.query_one("#query", Input)
            query.value = early.value
            query.cursor_position = early.cursor_position
            if had_focus:
                self.main_screen.action_focus_search()
                # The box selects all its text when it gains the focus, and the next key would
                # replace it: put the cursor back where it was, after that Focus is handled.
                query.call_later(setattr, query, "cursor_position", early.cursor_position)
        early.remove()

    def now(self) -> datetime:
        from store.validation import utcnow

        return utcnow()

    def get_system_commands(self, screen):
        yield from super().get_system_commands(screen)
        if not self.failed:
            yield from system_commands(self.main_screen)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast, shown as text: what it says quotes stored text (a checkpoint's description, a
        tenant's name, an error naming either), and as markup a description of ``[/]`` crashed the
        app and one holding ``[@click=...]`` became a live link."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def watch_theme(self, theme: str) -> None:
        if config.load().get("theme") == theme:
            return
        try:
            config.save(theme=theme)
        except OSError as error:
            self.notify(f"the theme is not kept for next time: {error}", severity="warning")

    def get_default_screen(self) -> MainScreen:
        return MainScreen(id="_default")

    @property
    def main_screen(self) -> MainScreen:
        """The screen the App composes into, under any dialog."""
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def on_timeline_screen_diff_wanted(self, m: Any) -> None:
        """The timeline (a dialog over the main screen, so its messages come here) asks for a diff."""
        self.main_screen.tenant_diff(m.a, m.b, m.title)

    # --- the store's life: opened in a worker, the model warmed in a thread of its own, changes
    # by other processes polled, and a failure (to open, or found later) shown for good -----------

    @work(thread=True, group="open", exit_on_error=False)
    def open_store(self) -> None:
        # Imported here, in the worker, so the first paint waits for neither SQLAlchemy nor numpy.
        from store.errors import MemlensError

        from .opening import open_for_inspection

        try:
            store, reason = open_for_inspection(self.path, self.embedder_spec)
        except (MemlensError, OSError) as error:  # anything else: on_worker_state_changed says so
            self.post_message(messages.StoreFailed(describe(error)))
            return
        self.store = store
        self.seen_version = store.data_version()
        self.post_message(messages.StoreOpened(str(store.path), reason))

    def on_store_opened(self, message: messages.StoreOpened) -> None:
        self.opening = False
        self.read_only_reason = message.read_only_reason
        freeze_startup_objects()
        self.update_subtitle()
        self.refresh_bindings()
        self.load_tenants()
        self.reload_tenant_views()  # of a tenant selected from the names
        if self.warm_on_start and self.store.embedder is not None:
            self.warm_model()
        if self.poll_seconds:
            self.set_interval(self.poll_seconds, self.poll_changes)
        self.idle_collection.defer()
        self.set_interval(PAUSE / 2, self._collect_if_paused)

    def _collect_if_paused(self) -> None:
        searching = self.search_view()
        self.idle_collection.collect_if_paused(0.0 if searching is None else searching.search.last_asked)

    def search_view(self) -> SearchView | None:
        """The search view (widgets.views.SearchView), or None before the views have mounted."""
        from .widgets.views import SearchView  # imported after the first frame (above)

        found = self.query("#search-view")
        return found.first(SearchView) if found else None

    def on_store_failed(self, message: messages.StoreFailed) -> None:
        self.opening = False
        if self.failed:
            return
        self.failed = message.error
        verb = "open" if self.store is None else "read"
        self.sub_title = "not opened" if self.store is None else "damaged"
        self.query_one("#main").display = False  # nothing in it may keep focus, and so keys, from the message
        from .screens.dialogs import FatalScreen

        self.push_screen(FatalScreen(f"memlens cannot {verb} {shown(self.path)}", message.error))

    def on_action_failed(self, m: messages.ActionFailed) -> None:
        searching = self.search_view()
        if m.what == "search" and searching is not None:
            searching.show_error(f"search failed: {m.error} (type to search again)")
        self.notify(f"{m.what}: {m.error}", title="failed", severity="error", timeout=15)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The App's own workers (the open, the names): one that raised is reported as the widgets'
        are (inspector.workers; the search view reports its search thread itself)."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error or RuntimeError("the worker stopped without saying why")
            self.post_message(messages.WorkerFailed(event.worker, error))

    def on_worker_failed(self, m: messages.WorkerFailed) -> None:
        """A worker (the App's or a widget's) raised: say so, and keep the app usable (the open
        worker: say why it failed)."""
        worker, error = m.worker, m.error
        if worker.group == "open" or is_damage(error):
            self.post_message(messages.StoreFailed(describe(error)))
            return
        self.notify(f"{worker.group}: {describe(error)}", title="failed", severity="error", timeout=15)

    def warm_model(self) -> None:
        # A daemon thread of its own, not a Textual worker: workers run in asyncio's executor, which
        # is joined at exit, so quitting during the one-time model export (~20 s) sat on a blank
        # screen until the export was done (9 s in the report; over 30 s on this busy machine).
        # MemlensApp.run() ends the process instead (tests/test_e2e.py).
        thread = threading.Thread(target=self._warm_model, name="memlens-model", daemon=True)
        self.model_thread = thread
        thread.start()

    def _warm_model(self) -> None:
        try:
            self.store.warm_model()
            if self.user_id is not NO_TENANT:
                self.store.warm_vectors(user_id=self.user_id)
        except Exception as error:  # a missing or broken model leaves keyword search working
            self.post_message(messages.ModelFailed(describe(error)))
            return
        self.post_message(messages.ModelReady(getattr(self.store.embedder, "active_backend", None) or "model"))

    def on_model_ready(self) -> None:
        freeze_startup_objects()
        self.update_subtitle()
        if self.query("#search-view"):
            from .widgets.views import SearchView

            self.query_one("#search-view", SearchView).request()

    def on_model_failed(self, message: messages.ModelFailed) -> None:
        self.notify(f"semantic search unavailable: {message.error}", severity="warning", timeout=8)

    def update_subtitle(self) -> None:
        if self.store is None:
            return
        # The model's state, not a search mode: the search line names the mode searched, which
        # ``m`` changes (a header saying "semantic + keyword" over VECTOR results contradicted it).
        model = (
            "model ready"
            if self.store.model_ready
            else ("model warming…" if self.store.embedder is not None else "no model: keyword search only")
        )
        # A view of another library's memory says why it has no model (its vectors' is not recorded).
        model = getattr(self.store, "search_note", None) or model
        access = " · read-only" if self.read_only_reason else ""
        if self.as_of is not None:
            from .time_travel import moment_label

            access = f" · AS OF {moment_label(self.as_of)} (read-only)"
        self.sub_title = f"{shown(self.path)}{access} · {model}"

    def poll_changes(self) -> None:
        if not self.failed:
            self.run_worker(self._check_version, thread=True, group="poll", exclusive=True, exit_on_error=False)

    def _check_version(self) -> None:
        version = self.store.data_version()
        if version != self.seen_version:
            self.seen_version = version
            self.post_message(messages.StoreChanged(version))

    def on_store_changed(self) -> None:
        self.load_tenants()
        self.reload_tenant_views()

    # --- keys ---

    def on_key(self, event: events.Key) -> None:
        """A key whose action is disabled says why, instead of doing nothing."""
        active = self.screen.active_bindings.get(event.key)
        if active is None or active.enabled:
            return
        # The widget that owns the key says why, if it has its own reasons (the checkpoints table).
        reasons = getattr(active.node, "disabled_reason", None)
        reason = reasons(active.binding.action.split(".")[-1].split("(")[0]) if reasons else None
        if reason:
            event.stop()
            self.notify(f"{active.binding.description}: {reason}", severity="warning")

    # --- the tenant list ---------------------------------------------------------------------------

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
        store = self.store

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
        """The tenant views, bound to ``user_id``, load themselves; the App's own state follows."""
        self.picked_a_tenant = self.picked_a_tenant or user_id is not NO_TENANT
        self.refresh_bindings()

    # --- time travel ----------------------------------------------------------------------------

    def watch_as_of(self, at: datetime | None) -> None:
        """The tenant views, bound to ``as_of``, load the moment themselves; the App says which it is."""
        self.show_moment(at)
        self.refresh_bindings()

    def show_moment(self, at: datetime | None) -> None:
        """The header and the line above the tabs say which moment the views show."""
        from .time_travel import moment_label

        self.update_subtitle()
        if self.query("#past-banner"):
            banner = self.query_one("#past-banner", Label)
            banner.display = at is not None
            if at is not None:
                # The moment and "read-only" first: at 80 columns the line ends in an ellipsis after "n now".
                banner.update(f"AS OF {moment_label(at)} · read-only · n now · [ ] step · T timeline · D diff with now")

    # --- the tenant views ------------------------------------------------------------------------

    def tenant_views(self) -> Any:
        """The selected tenant's views (widgets.tenant_views.TenantViews), or None before they have mounted."""
        found = self.query("#content")
        return found.first() if found else None

    def reload_tenant_views(self) -> None:
        views = self.tenant_views()
        if views is not None:
            views.reload()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Back in the tenant list (``t``, ``escape``, a click): the pane shows the tenant, not the last record."""
        views = self.tenant_views()
        if event.widget.id == "tenants" and views is not None:
            views.clear_detail()

    async def on_unmount(self) -> None:
        gc.unfreeze()  # whatever this App leaves behind is garbage like any other (tests run many Apps)
        self.idle_collection.restore()
        if self.store is not None:
            self.store.close()

    def _handle_exception(self, error: Exception) -> None:
        """An exception no handler caught ends the app with status 1 and one line that says what
        it was. Textual's own ending prints a traceback with every frame's local variables, which
        here hold the agent's memories: content on the terminal of whoever was looking (a
        data-protection officer's, say). Under test (headless) and with MEMLENS_DEBUG=1, Textual's
        ending stays: the tests re-raise the error, and a developer wants the frames."""
        if self.is_headless or os.environ.get("MEMLENS_DEBUG"):
            super()._handle_exception(error)
            return
        from rich.text import Text

        what = printable(f"{type(error).__name__}: {error}")
        line = f"memlens: the inspector stopped on an unexpected error: {what} (MEMLENS_DEBUG=1 shows where)"
        self.exit(return_code=1, message=Text(line, no_wrap=True, overflow="ignore"))  # one line, whatever the width

    def run(self, *args: Any, **kwargs: Any) -> Any:
        result = super().run(*args, **kwargs)
        if self.model_thread is not None and self.model_thread.is_alive():
            # Quit during the one-time model export: end now instead of waiting for it, and leave
            # no half-written model behind (the next start exports it again).
            from store.embedding import unfinished_exports

            for partial in unfinished_exports():
                partial.unlink(missing_ok=True)
            print("memlens: quit before the one-time model export finished; it runs again next time.", file=sys.stderr)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(self.return_code or 0)
        return result


def make_app(path: str | Path, **options: Any) -> MemlensApp:
    """The one factory the CLI, the tests and the screenshot script use."""
    return MemlensApp(path, **options)
