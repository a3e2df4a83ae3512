"""The memlens inspector. The App owns the store: every store call runs in a thread worker
that posts a message back; handlers update the widgets."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.lazy import Lazy
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from . import messages as msg
from .commands import system_commands
from .formatting import tenant_label, when
from .actions import NO_TENANT, ActionsMixin
from .screens import HelpScreen
from .views import AuditView, BlocksView, EpisodesView, FactsView, SearchView, SessionsView, ShowDetail, session_rows

VIEWS = ["search", "blocks", "episodes", "facts", "sessions", "audit"]
LONG_LIVED = ("poll", "model", "search", "vectors")  # worker groups that are not one-off loads


def is_idle(app: "MemlensApp") -> bool:
    """No view load, action or search is under way (for tests, screenshots and benchmarks)."""
    return not app.searcher.busy and not any(w.is_running for w in app.workers if w.group not in LONG_LIVED)
SEARCH_LIMIT = 25  # about a screenful; more costs time on every keystroke


class LatestOnly:
    """One long-lived thread that runs the newest request, dropping any it never got to.

    Starting a Textual worker (and a thread) per keystroke cost ~7 ms before the search even
    began; typing faster than searches finish now skips the stale ones instead of queueing them.
    """

    def __init__(self, handle: Callable[[Any], None]):
        self.handle = handle
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
            finally:
                self._handling = False


class ContentArea(Vertical):
    def __init__(self, on_search: Callable[[Any], None], **kwargs: Any):
        super().__init__(**kwargs)
        self.on_search = on_search

    def compose(self) -> ComposeResult:
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
        with VerticalScroll(id="detail"):
            yield Static("Select a record to see it whole.", id="detail-body")

    def on_mount(self) -> None:
        self.query_one("#detail").border_title = "detail"


class MemlensApp(ActionsMixin, App):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "memlens"
    AUTO_FOCUS = "#tenants"
    BINDINGS = [
        Binding("slash", "focus_search", "Search"),
        Binding("t", "focus_tenants", "Tenants"),
        Binding("escape", "focus_tenants", "Leave the field", show=False),
        Binding("e", "export", "Export"),
        Binding("f", "forget", "Forget"),
        Binding("d", "diff", "Diff"),
        Binding("m", "mark", "Mark", show=False),
        Binding("r", "restore", "Restore"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+r", "reload", "Reload", show=False),
        *[Binding(str(i + 1), f"show_view('{name}')", name.title(), show=False) for i, name in enumerate(VIEWS)],
    ]

    def __init__(self, path: str | Path, *, embedder: Any = "default", warm_model: bool = True, poll_seconds: float = 1.0,
                 show_timings: bool = True):
        super().__init__()
        self.path = Path(path)
        self.embedder_spec = embedder
        self.warm_on_start = warm_model
        self.poll_seconds = poll_seconds
        self.show_timings = show_timings  # off for snapshots, where a measured time would differ per run
        self.store = None
        self.tenants: list[Any] = []
        self.user_id: Any = NO_TENANT
        self.search_seq = 0
        self.search_mode = "keyword"
        self.marked_checkpoint: Any = None
        self.seen_version: int | None = None
        self.session_names: list[str] = []
        self.searcher = LatestOnly(self.run_search)

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="sidebar"):
                yield Input(placeholder="filter tenants", id="tenant-filter")
                yield OptionList(id="tenants")
            # The content area mounts just after the first frame: the frame comes sooner, and the
            # tier views are there long before the store has opened (that waits for the frame too).
            yield Lazy(ContentArea(self._search, id="content"))
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.path.name} · opening…"
        self.query_one("#sidebar").border_title = "tenants"
        # Open after the first frame: the frame needs nothing from the store, and opening it
        # (SQLAlchemy's import alone is ~0.4 s) would compete with the frame for the GIL.
        self.call_after_refresh(self.open_store)

    def now(self) -> datetime:
        from store.validation import utcnow

        return utcnow()

    def get_system_commands(self, screen):
        yield from super().get_system_commands(screen)
        yield from system_commands(self)

    # --- store lifecycle --------------------------------------------------------------------

    @work(thread=True, group="open", exit_on_error=False)
    def open_store(self) -> None:
        # Imported here, in the worker, so the first paint waits for neither SQLAlchemy nor numpy.
        from store import MemoryStore
        from store.errors import MemlensError

        try:
            store = MemoryStore.open(self.path, embedder=self.embedder_spec, create=False)
        except MemlensError as error:
            self.post_message(msg.StoreFailed(str(error)))
            return
        self.store = store
        self.seen_version = store.data_version()
        self.post_message(msg.StoreOpened(str(store.path)))

    @on(msg.StoreOpened)
    def _opened(self, message: msg.StoreOpened) -> None:
        self.update_subtitle()
        self.load_tenants()
        if self.warm_on_start and self.store.embedder is not None:
            self.warm_model()
        if self.poll_seconds:
            self.set_interval(self.poll_seconds, self.poll_changes)

    @on(msg.StoreFailed)
    def _failed(self, message: msg.StoreFailed) -> None:
        self.query_one("#main").display = False
        self.mount(Static(f"memlens cannot open {self.path}\n\n{message.error}\n\nPress q to quit.", id="fatal"), before=self.query_one(Footer))
        self.sub_title = "not opened"

    @work(thread=True, group="model", exit_on_error=False)
    def warm_model(self) -> None:
        try:
            self.store.warm_model()
            if self.user_id is not NO_TENANT:
                self.store.warm_vectors(user_id=self.user_id)
        except Exception as error:  # a missing or broken model leaves keyword search working
            self.post_message(msg.ModelFailed(str(error)))
            return
        self.post_message(msg.ModelReady(getattr(self.store.embedder, "active_backend", None) or "model"))

    @on(msg.ModelReady)
    def _model_ready(self) -> None:
        self.update_subtitle()
        self.query_one(SearchView).request()

    @on(msg.ModelFailed)
    def _model_failed(self, message: msg.ModelFailed) -> None:
        self.notify(f"semantic search unavailable: {message.error}", severity="warning", timeout=8)

    def update_subtitle(self) -> None:
        if self.store is None:
            return
        mode = "semantic + keyword search" if self.store.model_ready else (
            "keyword search (model warming…)" if self.store.embedder is not None else "keyword search")
        self.sub_title = f"{self.path.name} · {mode}"

    def poll_changes(self) -> None:
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
        is posted back. A store error (or one of ``errors``) becomes an ActionFailed notification;
        the result of a worker replaced by a newer one in an exclusive group is dropped."""
        from store.errors import MemlensError

        def job() -> None:
            try:
                result = call()
            except (MemlensError, *errors) as error:
                self.post_message(msg.ActionFailed(what, str(error)))
                return
            if not get_current_worker().is_cancelled:
                message = then(result)
                if message is not None:
                    self.post_message(message)

        self.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def fetch(self, view: str, call: Callable[[], Any], *, append: bool = False) -> None:
        """Run ``call`` in a worker; its result arrives as ViewLoaded for ``view`` and this tenant."""
        tenant = self.user_id
        self.call_store(view, call, lambda data: msg.ViewLoaded(view, tenant, data, append), group=f"view-{view}", exclusive=True)

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
            label.append(f"\n{c.episodes} ep · {c.facts} facts · {c.sessions} sess\n{c.blocks} blocks · {c.kv_entries} keys · {c.checkpoints} ckpt", style="dim")
            label.append(f"\nactive {when(t.last_activity)}\n", style="dim italic")
            options.add_option(Option(label, id=self.tenant_option_id(t.user_id)))
        keys = [self.tenant_option_id(t.user_id) for t in shown]
        current = self.tenant_option_id(self.user_id) if self.user_id is not NO_TENANT else None
        if current in keys:
            options.highlighted = keys.index(current)
        elif keys and self.user_id is NO_TENANT:
            options.highlighted = 0
        elif self.user_id is not NO_TENANT and current not in [self.tenant_option_id(t.user_id) for t in self.tenants]:
            self.select_tenant(NO_TENANT)  # it was erased, or another process removed it
            if keys:
                options.highlighted = 0

    @staticmethod
    def tenant_option_id(user_id: Any) -> str:
        return "anonymous" if user_id is None else f"user:{user_id}"

    @on(Input.Changed, "#tenant-filter")
    def _filter_tenants(self, event: Input.Changed) -> None:
        event.stop()
        self.show_tenants()

    @on(OptionList.OptionHighlighted, "#tenants")
    def _tenant_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        option_id = event.option.id or ""
        user_id = None if option_id == "anonymous" else option_id.removeprefix("user:")
        if user_id != self.user_id:
            self.select_tenant(user_id)

    def select_tenant(self, user_id: Any) -> None:
        self.user_id = user_id
        self.marked_checkpoint = None
        if self.query("#detail-body"):
            self.query_one("#detail-body", Static).update("Select a record to see it whole.")
        self.load_tenant_views()

    def load_tenant_views(self) -> None:
        if self.store is None or self.user_id is NO_TENANT:
            return
        if not self.query(AuditView):  # the lazily mounted content area is not there yet
            self.call_after_refresh(self.load_tenant_views)
            return
        user, store = self.user_id, self.store
        if store.model_ready:
            self.run_worker(lambda: store.warm_vectors(user_id=user), thread=True, group="vectors", exclusive=True, exit_on_error=False)
        self.fetch("blocks", lambda: store.working(user_id=user))
        self.fetch("sessions", lambda: store.sessions(user_id=user))
        self.fetch("audit", lambda: store.audit_log(user_id=user))
        self.query_one(EpisodesView).request(None)
        self.query_one(FactsView).request()
        self.query_one(SearchView).request()

    # --- view requests ----------------------------------------------------------------------------

    @on(EpisodesView.Wanted)
    def _episodes_wanted(self, m: EpisodesView.Wanted) -> None:
        if self.store is None or self.user_id is NO_TENANT:
            return
        user, store = self.user_id, self.store
        self.fetch("episodes", lambda: store.episodes(user_id=user, session_id=m.session_id, since=m.since, until=m.until,
                                                      limit=100, cursor=m.cursor), append=m.cursor is not None)

    @on(FactsView.Wanted)
    def _facts_wanted(self, m: FactsView.Wanted) -> None:
        if self.store is None or self.user_id is NO_TENANT:
            return
        user, store = self.user_id, self.store
        self.fetch("facts", lambda: (store.facts(user_id=user, valid_at=m.valid_at, include_history=m.history and m.valid_at is None), m.valid_at))

    @on(SessionsView.Picked)
    def _session_picked(self, m: SessionsView.Picked) -> None:
        self.load_session(m.session_id)

    def load_session(self, session_id: str) -> None:
        user, store = self.user_id, self.store

        def call():
            memory = store.session(session_id, user_id=user)
            return {"session_id": session_id, "task": memory.get_task_state(), "entries": memory.entries(),
                    "notes": memory.get_scratchpad(), "checkpoints": memory.list_checkpoints()}

        self.fetch("session", call)

    def _search(self, m: SearchView.Changed) -> None:
        if self.store is None or self.user_id is NO_TENANT:
            return
        self.search_seq += 1
        mode = "hybrid" if self.store.model_ready else "keyword"
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
            self.post_message(msg.ActionFailed("search", str(error)))
            return
        if seq == self.search_seq:  # a newer keystroke has asked for its own search
            self.post_message(msg.SearchResults(seq, m.query, mode, hits, (time.perf_counter() - start) * 1000))

    @on(msg.SearchResults)
    def _search_results(self, m: msg.SearchResults) -> None:
        if m.seq != self.search_seq:
            return  # stale: never paint over newer results
        what = "most recent" if not m.query.strip() else f"{len(m.hits)} results"
        mode = "semantic + keyword" if m.mode == "hybrid" else "keyword only (model warming)" if self.store.embedder else "keyword only"
        timing = f" · {m.elapsed_ms:.1f} ms" if self.show_timings else ""
        self.query_one(SearchView).show(m.hits, f"{what} · {mode}{timing}")

    @on(msg.ViewLoaded)
    def _view_loaded(self, m: msg.ViewLoaded) -> None:
        if m.tenant_key != self.user_id:
            return  # for a tenant no longer selected
        if m.view == "blocks":
            self.query_one(BlocksView).show(m.data)
        elif m.view == "episodes":
            self.query_one(EpisodesView).show(m.data, m.append)
        elif m.view == "facts":
            self.query_one(FactsView).show(*m.data)
        elif m.view == "audit":
            self.query_one(AuditView).show(m.data)
        elif m.view == "sessions":
            self.session_names = [s.session_id for s in m.data]
            view = self.query_one(SessionsView)
            view.show_sessions(m.data)
            for target in (self.query_one(SearchView), self.query_one(EpisodesView)):
                target.set_sessions(self.session_names)
            chosen = view.selected_session()
            if chosen:
                self.load_session(chosen)
        elif m.view == "session":
            d = m.data
            rows = session_rows(d["entries"], d["notes"], d["checkpoints"], self.now())
            self.query_one(SessionsView).show_session(d["session_id"], {"task": d["task"], **rows})

    @on(ShowDetail)
    def _show_detail(self, m: ShowDetail) -> None:
        self.query_one("#detail").border_title = m.title
        self.query_one("#detail-body", Static).update(m.body)

    @on(msg.ActionFailed)
    def _action_failed(self, m: msg.ActionFailed) -> None:
        self.notify(f"{m.what}: {m.error}", severity="error", timeout=8)

    # --- actions -------------------------------------------------------------------------------------

    def action_show_view(self, name: str) -> None:
        self.query_one("#tabs", TabbedContent).active = name

    def action_focus_search(self) -> None:
        self.action_show_view("search")
        self.query_one("#query", Input).focus()

    def action_focus_tenants(self) -> None:
        self.query_one("#tenants", OptionList).focus()

    def action_reload(self) -> None:
        if self.store is not None:
            self.load_tenants()
            self.load_tenant_views()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def on_unmount(self) -> None:
        self.searcher.stop()
        if self.store is not None:
            self.store.close()


def make_app(path: str | Path, **options: Any) -> MemlensApp:
    """The one factory the CLI, the tests and the screenshot script use."""
    return MemlensApp(path, **options)
