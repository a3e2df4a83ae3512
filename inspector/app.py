"""The memlens inspector. The App keeps the store's life: it opens the store in a worker, warms
the model, polls for other processes' changes and shows a failure for good. What is on screen,
the tenant list and the selected tenant's views with the tenant and moment they show, is the
main screen's (``screens.main``), which the App tells when the store opened, changed or failed.
Every store call runs in a thread worker that posts a message back; handlers update the widgets."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
from pathlib import Path
from typing import Any

from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from . import config, messages
from .collecting import PAUSE, IdleCollection
from .commands import system_commands
from .ending import end_on_signals
from .failures import describe, is_damage
from .locations import is_server_url, shown
from .opening import Glance
from .printable import printable
from .screens.main import MainScreen
from .searching import SEARCH_LIMIT
from .widgets.tenant_list import NO_TENANT

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
    searching = app.main_screen.search_view()
    busy = searching is not None and searching.search.busy
    return not app.opening and not busy and not any(w.is_running for w in app.workers if w.group not in LONG_LIVED)


def freeze_startup_objects() -> None:
    """Leave what start-up built (Textual, SQLAlchemy, the model's runtime: ~140k objects) out of
    every later garbage collection. Scanning them made each full collection a 130-270 ms pause
    in the middle of typing, every few seconds; frozen, the same collections took 7-60 ms."""
    gc.freeze()


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
        self.failed: str | None = None
        self.opening = True  # until the store has opened or failed to
        self.seen_version: int | None = None
        self.show_timings = show_timings
        """Whether the search line shows the time a search took (off for snapshots, where it would differ per run)."""
        self.model_thread: threading.Thread | None = None
        saved_theme = config.load().get("theme")
        if saved_theme in self.available_themes:
            self.theme = saved_theme
        self.glance = Glance(self.path)

    def on_mount(self) -> None:
        if not self.is_headless:
            # A closed terminal (SIGHUP) or a kill (SIGTERM) ends the app as `q` does, so the store
            # is closed and a view's private copy of another library's memory deleted; where it
            # cannot (the terminal gone), ending.py ends the process. Not POSIX, or not the main
            # thread: the default ending, and the next start's sweep.
            end_on_signals(self.exit, asyncio.get_running_loop())
        self.sub_title = f"{shown(self.path)} · opening…"

    def on_views_ready(self) -> None:
        """The main screen's views are whole (after the first frame: the open would compete with
        it for the GIL): open the store."""
        self.open_store()

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
        return MainScreen(self.glance, show_timings=self.show_timings, id="_default")

    @property
    def main_screen(self) -> MainScreen:
        """The screen of the tenants and their views, under any dialog."""
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
        freeze_startup_objects()
        self.main_screen.store_opened(self.store, message.read_only_reason)  # the screen keeps why it is read-only
        self.update_subtitle()
        if self.warm_on_start and self.store.embedder is not None:
            self.warm_model()
        if self.poll_seconds:
            self.set_interval(self.poll_seconds, self.poll_changes)
        self.idle_collection.defer()
        self.set_interval(PAUSE / 2, self._collect_if_paused)

    def _collect_if_paused(self) -> None:
        if not self.screen_stack:
            return  # exiting: Textual removes the screens before it stops the App's timers (seen on CI)
        searching = self.main_screen.search_view()
        self.idle_collection.collect_if_paused(0.0 if searching is None else searching.search.last_asked)

    def on_store_failed(self, message: messages.StoreFailed) -> None:
        self.opening = False
        if self.failed:
            return
        self.failed = message.error
        verb = "open" if self.store is None else "read"
        self.sub_title = "not opened" if self.store is None else "damaged"
        self.main_screen.store_failed(message.error)
        from .screens.dialogs import FatalScreen

        self.push_screen(FatalScreen(f"memlens cannot {verb} {shown(self.path)}", message.error))

    def on_action_failed(self, m: messages.ActionFailed) -> None:
        searching = self.main_screen.search_view()
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
            user = self.main_screen.user_id  # the tenant selected by now (the export takes seconds)
            if user is not NO_TENANT:
                self.store.warm_vectors(user_id=user)
        except Exception as error:  # a missing or broken model leaves keyword search working
            self.post_message(messages.ModelFailed(describe(error)))
            return
        self.post_message(messages.ModelReady(getattr(self.store.embedder, "active_backend", None) or "model"))

    def on_model_ready(self) -> None:
        freeze_startup_objects()
        self.update_subtitle()
        self.main_screen.model_ready()

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
        screen = self.main_screen
        access = " · read-only" if screen.read_only_reason else ""
        moment = screen.as_of
        if moment is not None:
            from .time_travel import moment_label

            access = f" · AS OF {moment_label(moment)} (read-only)"
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
        if self.screen_stack:  # a poll that ends as the App exits finds no screen to tell
            self.main_screen.store_changed()

    def on_moment_shown(self) -> None:
        self.update_subtitle()

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
