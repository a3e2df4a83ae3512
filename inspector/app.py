"""The memlens inspector. The App owns the store: every store call runs in a thread worker
that posts a message back; handlers update the widgets."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Header, Input, OptionList
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState, get_current_worker

from . import config, messages as msg
from .commands import system_commands
from .footer import KeysFooter
from .formatting import count, tenant_label, when
from .actions import ActionsMixin
from .loading import NO_TENANT, TenantViewsMixin
from .locations import is_server_url, shown
from .overview import DetailPane

# The first frame shows the tenant list and the footer only. The tier views, the dialogs and what
# they use (DataTable, Select, RadioSet, ...: inspector.views and inspector.screens) are imported
# when first needed, just after that frame: their modules and the default CSS of their widgets
# were part of what the first frame waited for.

VIEWS = ["search", "blocks", "episodes", "facts", "sessions", "audit"]
LONG_LIVED = ("poll", "search", "vectors")  # worker groups that are not one-off loads


def is_idle(app: "MemlensApp") -> bool:
    """No view load, action or search is under way (for tests, screenshots and benchmarks).

    The model thread counts once the model is warm: what it still does (load the tenant's
    vectors, announce the model, which searches again) changes the screen."""
    warm = app.store is not None and app.store.model_ready
    if warm and app.model_thread is not None and app.model_thread.is_alive():
        return False
    return not app.opening and not app.searcher.busy and not any(w.is_running for w in app.workers if w.group not in LONG_LIVED)


SEARCH_LIMIT = 25  # about a screenful; more costs time on every keystroke
GLANCE_WAIT = 0.25  # seconds the first frame may wait for the names (here: 2 ms to read, 3-8 ms to import sqlite3)


@dataclass
class TenantName:
    """A tenant known by name only, until the store has opened and counted its records."""

    user_id: str | None
    counts: None = None


def freeze_startup_objects() -> None:
    """Leave what start-up built (Textual, SQLAlchemy, the model's runtime: ~140k objects) out of
    every later garbage collection. Scanning them made each full collection a 130-270 ms pause
    in the middle of typing, every few seconds; frozen, the same collections took 7-60 ms."""
    gc.freeze()


class Glance:
    """The tenant names (store.glance), read in a thread of its own from the moment the App is made."""

    def __init__(self, path: Path | str):
        self.names: list[Any] | None = None
        self.done = threading.Event()
        if is_server_url(path):  # no file to glance at: the open lists the tenants
            self.done.set()
            return
        threading.Thread(target=self._read, args=(path,), name="memlens-glance", daemon=True).start()

    def _read(self, path: Path) -> None:
        from store.glance import tenant_names

        try:
            self.names = tenant_names(path)
        finally:
            self.done.set()


def describe(error: BaseException) -> str:
    """A store error's own message says what to do; anything else also needs its type to mean something."""
    from store.errors import MemlensError

    return str(error) if isinstance(error, MemlensError) else f"{type(error).__name__}: {error}"


def is_damage(error: BaseException) -> bool:
    from store.errors import DamagedStoreError

    return isinstance(error, DamagedStoreError)


def search_status(what: str, searched: str, store: Any) -> str:
    """The search line: the mode searched first, in capitals, so a presenter pressing ``m`` sees it change."""
    if searched == "hybrid":
        how = "semantic + keyword"
    elif searched == "vector":
        how = "semantic only"
    else:
        how = "keyword only (model warming)" if store.embedder is not None and not store.model_ready else "keyword only"
    return f"{searched.upper()} · {what} · {how}"


class LatestOnly:
    """One long-lived thread that runs the newest request, dropping any it never got to.

    Starting a Textual worker (and a thread) per keystroke cost ~7 ms before the search even
    began; typing faster than searches finish now skips the stale ones instead of queueing them.
    A request that raises is reported to ``on_error`` and the thread goes on with the next one.
    """

    def __init__(self, handle: Callable[[Any], None], on_error: Callable[[Any, Exception], None] | None = None):
        self.handle = handle
        self.on_error = on_error
        self.worker = None
        self._condition = threading.Condition()
        self._pending: Any = None
        self._handling = False
        self._stopped = False

    @property
    def busy(self) -> bool:
        """A request is waiting or being handled."""
        return self._pending is not None or self._handling

    def submit(self, request: Any) -> None:
        with self._condition:
            self._pending = request
            self._condition.notify()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def run(self) -> None:
        while True:
            with self._condition:
                while self._pending is None and not self._stopped:
                    self._condition.wait(0.5)
                    if get_current_worker().is_cancelled:
                        return
                if self._stopped:
                    return
                request, self._pending = self._pending, None
                self._handling = True
            try:
                self.handle(request)
            except Exception as error:  # one failed search must not end searching for the session
                if self.on_error is not None:
                    self.on_error(request, error)
            finally:
                self._handling = False


class Sidebar(Vertical):
    BINDINGS = [Binding("a", "app.store_audit", "Audit log"), Binding("down", "app.pick_tenant", "Tenants", show=False)]


class ContentArea(Vertical):
    def __init__(self, on_search: Callable[[Any], None], **kwargs: Any):
        super().__init__(**kwargs)
        self.on_search = on_search

    def compose(self) -> ComposeResult:
        from textual.widgets import TabbedContent, TabPane

        from .views import AuditView, BlocksView, EpisodesView, FactsView, SearchView, SessionsView

        with TabbedContent(initial="search", id="tabs"):
            with TabPane("Search", id="search"):
                yield SearchView(id="search-view", on_search=self.on_search)
            with TabPane("Blocks", id="blocks"):
                yield BlocksView(id="blocks-view")
            with TabPane("Episodes", id="episodes"):
                yield EpisodesView(id="episodes-view")
            with TabPane("Facts", id="facts"):
                yield FactsView(id="facts-view")
            with TabPane("Sessions", id="sessions"):
                yield SessionsView(id="sessions-view")
            with TabPane("Audit", id="audit"):
                yield AuditView(id="audit-view")
        yield DetailPane(id="detail")


class MemlensApp(ActionsMixin, TenantViewsMixin, App):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "memlens"
    AUTO_FOCUS = "#tenants"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    BINDINGS = [
        # A priority binding: it acts when "/" reaches the App, before the next key is handed to
        # the widget that had the focus. An ordinary binding acts only after "/" has gone to that
        # widget and bubbled back, and a fast typist's next letter was by then queued at the
        # tenant list and lost. check_action lets "/" through wherever it types.
        Binding("slash", "focus_search", "Search", priority=True),
        Binding("t", "focus_tenants", "Tenants"),
        Binding("escape", "focus_tenants", "Tenants", show=False),
        Binding("e", "export", "Export"),
        Binding("f", "forget", "Forget"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        # Ctrl+C quits, as in every terminal program (Textual would only say "press ctrl+q").
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+r", "reload", "Reload", show=False),
        *[Binding(str(i + 1), f"show_view('{name}')", name.title(), show=False) for i, name in enumerate(VIEWS)],
    ]

    def __init__(self, path: str | Path, *, embedder: Any = "default", warm_model: bool = True, poll_seconds: float = 1.0,
                 show_timings: bool = True):
        super().__init__()
        self.path = path if is_server_url(path) else Path(path)
        self.embedder_spec = embedder
        self.warm_on_start = warm_model
        self.poll_seconds = poll_seconds
        self.show_timings = show_timings  # off for snapshots, where a measured time would differ per run
        self.store = None
        self.read_only_reason: str | None = None
        self.failed: str | None = None
        self.opening = True  # until the store has opened or failed to
        self.tenants: list[Any] = []
        self.user_id: Any = NO_TENANT
        self.picked_a_tenant = False  # the first tenant is selected once, at start-up; never again by itself
        self.search_seq = 0
        self.search_mode = "keyword"
        self.marked_checkpoint: Any = None
        self.seen_version: int | None = None
        self.session_names: list[str] = []
        self.searcher = LatestOnly(self.run_search, self._search_failed)
        self.model_thread: threading.Thread | None = None
        saved_theme = config.load().get("theme")
        if saved_theme in self.available_themes:
            self.theme = saved_theme
        self.glance = Glance(self.path)

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Sidebar(id="sidebar"):
                yield Input(placeholder="filter tenants", id="tenant-filter")
                yield OptionList(id="tenants")
                yield Button("Audit log (all tenants)", id="store-audit", compact=True)
            # The tier views join here after the first frame (on_mount says why).
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = f"{shown(self.path)} · opening…"
        self.query_one("#sidebar").border_title = "tenants"
        # The names are what a user waits for; read with sqlite3 alone since the App was made,
        # they are usually there for the first frame. MemoryStore.open must import SQLAlchemy
        # first (~0.6 s with the rest of store), which put them at 5x a bare app's first line
        # on screen here.
        if self.glance.done.wait(GLANCE_WAIT):
            self._names(msg.TenantNames(self.glance.names))
        else:
            self.run_worker(self._await_names, thread=True, group="glance", exit_on_error=False)
        # The tier views and the open come after that frame: both would compete with it for the GIL.
        self.call_after_refresh(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        main = self.query_one("#main")
        if not main.is_attached:  # the user quit at the first frame
            return
        await main.mount(ContentArea(self._search, id="content"))
        self.open_store()  # after the views are whole: a store message may go to any of them

    def now(self) -> datetime:
        from store.validation import utcnow

        return utcnow()

    def get_system_commands(self, screen):
        yield from super().get_system_commands(screen)
        if not self.failed:
            yield from system_commands(self)

    def watch_theme(self, theme: str) -> None:
        if config.load().get("theme") == theme:
            return
        try:
            config.save(theme=theme)
        except OSError as error:
            self.notify(f"the theme is not kept for next time: {error}", severity="warning")

    # --- store lifecycle --------------------------------------------------------------------

    def _await_names(self) -> None:
        self.glance.done.wait()
        self.post_message(msg.TenantNames(self.glance.names))

    @on(msg.TenantNames)
    def _names(self, message: msg.TenantNames) -> None:
        if message.names and not self.tenants:  # else the store has already counted them
            self.tenants = [TenantName(user_id) for user_id in message.names]
            self.show_tenants()

    @work(thread=True, group="open", exit_on_error=False)
    def open_store(self) -> None:
        # Imported here, in the worker, so the first paint waits for neither SQLAlchemy nor numpy.
        from store.errors import MemlensError

        from .opening import open_for_inspection

        try:
            store, reason = open_for_inspection(self.path, self.embedder_spec)
        except (MemlensError, OSError) as error:  # anything else: on_worker_state_changed says so
            self.post_message(msg.StoreFailed(describe(error)))
            return
        self.store = store
        self.seen_version = store.data_version()
        self.post_message(msg.StoreOpened(str(store.path), reason))

    @on(msg.StoreOpened)
    def _opened(self, message: msg.StoreOpened) -> None:
        self.opening = False
        self.read_only_reason = message.read_only_reason
        freeze_startup_objects()
        self.update_subtitle()
        self.refresh_bindings()
        self.load_tenants()
        self.load_tenant_views()  # of a tenant selected from the names
        if self.warm_on_start and self.store.embedder is not None:
            self.warm_model()
        if self.poll_seconds:
            self.set_interval(self.poll_seconds, self.poll_changes)

    @on(msg.StoreFailed)
    def _failed(self, message: msg.StoreFailed) -> None:
        self.opening = False
        if self.failed:
            return
        self.failed = message.error
        verb = "open" if self.store is None else "read"
        self.sub_title = "not opened" if self.store is None else "damaged"
        self.query_one("#main").display = False  # nothing in it may keep focus, and so keys, from the message
        from .screens import FatalScreen

        self.push_screen(FatalScreen(f"memlens cannot {verb} {shown(self.path)}", message.error))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so, and keep the app usable (the open worker: say why it failed)."""
        if event.state != WorkerState.ERROR:
            return
        worker, error = event.worker, event.worker.error
        if worker.group == "open" or is_damage(error):
            self.post_message(msg.StoreFailed(describe(error)))
            return
        if worker is self.searcher.worker:
            self.searcher.worker = None  # the next keystroke starts a new search thread
        self.notify(f"{worker.group}: {describe(error)}", title="failed", severity="error", timeout=15)

    def warm_model(self) -> None:
        # A daemon thread of its own, not a Textual worker: workers run in asyncio's executor, which
        # is joined at exit, so quitting during the one-time model export (~20 s) sat on a blank
        # screen until the export was done (9 s in the report; over 30 s on this busy machine).
        # run() ends the process instead (0.3 s from q to exit here, tests/test_e2e.py).
        self.model_thread = threading.Thread(target=self._warm_model, name="memlens-model", daemon=True)
        self.model_thread.start()

    def _warm_model(self) -> None:
        try:
            self.store.warm_model()
            if self.user_id is not NO_TENANT:
                self.store.warm_vectors(user_id=self.user_id)
        except Exception as error:  # a missing or broken model leaves keyword search working
            self.post_message(msg.ModelFailed(describe(error)))
            return
        self.post_message(msg.ModelReady(getattr(self.store.embedder, "active_backend", None) or "model"))

    @on(msg.ModelReady)
    def _model_ready(self) -> None:
        freeze_startup_objects()
        self.update_subtitle()
        if self.query("#search-view"):
            self.query_one("#search-view").request()

    @on(msg.ModelFailed)
    def _model_failed(self, message: msg.ModelFailed) -> None:
        self.notify(f"semantic search unavailable: {message.error}", severity="warning", timeout=8)

    def update_subtitle(self) -> None:
        if self.store is None:
            return
        # The model's state, not a search mode: the search line names the mode searched, which
        # ``m`` changes (a header saying "semantic + keyword" over VECTOR results contradicted it).
        model = "model ready" if self.store.model_ready else (
            "model warming…" if self.store.embedder is not None else "no model: keyword search only")
        access = " · read-only" if self.read_only_reason else ""
        self.sub_title = f"{shown(self.path)}{access} · {model}"

    def poll_changes(self) -> None:
        if not self.failed:
            self.run_worker(self._check_version, thread=True, group="poll", exclusive=True, exit_on_error=False)

    def _check_version(self) -> None:
        version = self.store.data_version()
        if version != self.seen_version:
            self.seen_version = version
            self.post_message(msg.StoreChanged(version))

    @on(msg.StoreChanged)
    def _store_changed(self) -> None:
        self.load_tenants()
        self.load_tenant_views()

    # --- generic loading -------------------------------------------------------------------------

    def call_store(self, what: str, call: Callable[[], Any], then: Callable[[Any], Any], *, group: str,
                   exclusive: bool = False, errors: tuple[type[BaseException], ...] = ()) -> None:
        """Run ``call`` in a thread worker, then ``then(result)`` there too; a message it returns
        is posted back. A store error (or one of ``errors``) becomes an ActionFailed notification,
        a damaged store the message that stays; anything else fails the worker, which
        ``on_worker_state_changed`` reports. The result of a worker replaced by a newer one in an
        exclusive group is dropped."""
        from store.errors import MemlensError

        def job() -> None:
            try:
                result = call()
            except (MemlensError, *errors) as error:
                self.post_message(msg.StoreFailed(str(error)) if is_damage(error) else msg.ActionFailed(what, str(error)))
                return
            if not get_current_worker().is_cancelled:
                message = then(result)
                if message is not None:
                    self.post_message(message)

        self.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def fetch(self, view: str, call: Callable[[], Any], make: Callable[[Any, Any], msg.TenantResult]) -> None:
        """Run ``call`` in a worker; ``make(tenant, result)`` is the message posted back."""
        tenant = self.user_id
        self.call_store(view, call, lambda data: make(tenant, data), group=f"view-{view}", exclusive=True)

    def load_tenants(self) -> None:
        self.call_store("tenants", self.store.tenants, msg.TenantsLoaded, group="tenants", exclusive=True)

    @on(msg.TenantsLoaded)
    def _tenants_loaded(self, message: msg.TenantsLoaded) -> None:
        self.tenants = message.tenants
        self.show_tenants()

    def show_tenants(self) -> None:
        options = self.query_one("#tenants", OptionList)
        wanted = self.query_one("#tenant-filter", Input).value.strip().lower()
        shown = [t for t in self.tenants if wanted in tenant_label(t.user_id).lower()]
        options.clear_options()
        for t in shown:
            c = t.counts
            label = Text(tenant_label(t.user_id), style="italic" if t.user_id is None else "bold")
            if c is None:  # the name only, while the store opens: as many lines, so nothing moves
                label.append("\ncounting…\n\n\n\n", style="dim")
            else:
                # Lines of at most 23 characters: the width of the list at 80 columns.
                label.append(f"\n{count(c.episodes, 'episodes')} · {count(c.facts, 'facts')}\n{count(c.sessions, 'sessions')} · "
                             f"{count(c.blocks, 'blocks')}\n{count(c.kv_entries, 'keys')} · {count(c.checkpoints, 'checkpoints')}", style="dim")
                label.append(f"\nactive {when(t.last_activity)}\n", style="dim italic")
            options.add_option(Option(label, id=self.tenant_option_id(t.user_id)))
        keys = [self.tenant_option_id(t.user_id) for t in shown]
        current = self.tenant_option_id(self.user_id) if self.user_id is not NO_TENANT else None
        if current in keys:
            options.highlighted = keys.index(current)
        elif self.user_id is not NO_TENANT:
            # Hidden by the filter, erased, or removed by another process: an action must never
            # reach a tenant the list does not show selected, so nothing stays selected.
            self.select_tenant(NO_TENANT)
        elif keys and not self.picked_a_tenant:
            options.highlighted = 0

    @staticmethod
    def tenant_option_id(user_id: Any) -> str:
        return "anonymous" if user_id is None else f"user:{user_id}"

    def visible_tenant(self, options: OptionList | None = None) -> Any:
        """The tenant highlighted in the list as shown, or NO_TENANT."""
        options = options or self.query_one("#tenants", OptionList)
        if options.highlighted is None:
            return NO_TENANT
        option_id = options.get_option_at_index(options.highlighted).id or ""
        return None if option_id == "anonymous" else option_id.removeprefix("user:")

    @on(Input.Changed, "#tenant-filter")
    def _filter_tenants(self, event: Input.Changed) -> None:
        event.stop()
        self.show_tenants()

    @on(Input.Submitted, "#tenant-filter")
    def action_pick_tenant(self) -> None:
        """From the filter into the list, on its first tenant if none is selected."""
        options = self.query_one("#tenants", OptionList)
        options.focus()
        if options.highlighted is None and options.option_count:
            options.highlighted = 0

    @on(OptionList.OptionHighlighted, "#tenants")
    def _tenant_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if not event.option_list.is_attached:
            return  # the App is closing and the list has gone (a query for it raised, now and then)
        user_id = self.visible_tenant(event.option_list)
        if user_id is not NO_TENANT and user_id != self.user_id:
            self.select_tenant(user_id)

    def select_tenant(self, user_id: Any) -> None:
        self.user_id = user_id
        self.picked_a_tenant = self.picked_a_tenant or user_id is not NO_TENANT
        self.marked_checkpoint = None
        self.session_names = []
        self.clear_views()
        self.refresh_bindings()
        self.load_tenant_views()

    def _search(self, m: Any) -> None:
        """A SearchView.Changed, handed over directly by the search view."""
        if self.store is None or self.user_id is NO_TENANT:
            return
        self.search_seq += 1
        # Until the model is warm every mode searches by keyword (the status line says so): the
        # semantic half would otherwise hold the search thread until the warm-up ends.
        mode = m.mode if self.store.model_ready else "keyword"
        self.searcher.submit((self.search_seq, self.user_id, mode, m))
        if self.searcher.worker is None:
            self.searcher.worker = self.run_worker(self.searcher.run, thread=True, group="search", exit_on_error=False)

    def run_search(self, request) -> None:
        """Runs on the search thread: one search, its result posted back unless already stale."""
        from store.errors import MemlensError

        seq, user, mode, m = request
        start = time.perf_counter()
        try:
            hits = self.store.recall(m.query, user_id=user, limit=SEARCH_LIMIT, kind=m.kind, session_id=m.session_id,
                                     time_range=(m.since, m.until), mode=mode, prefix=True)
        except MemlensError as error:
            self._search_failed(request, error)
            return
        if seq == self.search_seq:  # a newer keystroke has asked for its own search
            self.post_message(msg.SearchResults(seq, m.query, mode, hits, (time.perf_counter() - start) * 1000))

    def _search_failed(self, request, error: Exception) -> None:
        """On the search thread: this request failed; the next one is searched as usual."""
        self.post_message(msg.StoreFailed(str(error)) if is_damage(error) else msg.ActionFailed("search", describe(error)))

    @on(msg.SearchResults)
    def _search_results(self, m: msg.SearchResults) -> None:
        if m.seq != self.search_seq:
            return  # stale: never paint over newer results
        what = "most recent" if not m.query.strip() else f"{len(m.hits)} results"
        timing = f" · {m.elapsed_ms:.1f} ms" if self.show_timings else ""
        self.query_one("#search-view").show(m.hits, f"{search_status(what, m.mode, self.store)}{timing}")

    @on(msg.ActionFailed)
    def _action_failed(self, m: msg.ActionFailed) -> None:
        if m.what == "search" and self.query("#search-view"):
            self.query_one("#search-view").show_error(f"search failed: {m.error} (type to search again)")
        self.notify(f"{m.what}: {m.error}", title="failed", severity="error", timeout=15)

    # --- actions -------------------------------------------------------------------------------------

    def action_reload(self) -> None:
        if self.store is not None:
            self.load_tenants()
            self.load_tenant_views()

    def action_help(self) -> None:
        from .screens import HelpScreen

        self.push_screen(HelpScreen())

    @on(Button.Pressed, "#store-audit")
    def action_store_audit(self) -> None:
        if self.store is None:
            return
        from .screens import StoreAuditScreen

        self.push_screen(StoreAuditScreen())
        self.call_store("audit log", lambda: self.store.audit_log(all_tenants=True), msg.StoreAuditLoaded, group="store-audit")

    @on(msg.StoreAuditLoaded)
    def _store_audit_loaded(self, m: msg.StoreAuditLoaded) -> None:
        from .screens import StoreAuditScreen

        if isinstance(self.screen, StoreAuditScreen):
            self.screen.show(m.entries)

    async def on_unmount(self) -> None:
        gc.unfreeze()  # whatever this App leaves behind is garbage like any other (tests run many Apps)
        self.searcher.stop()
        if self.store is not None:
            self.store.close()

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
