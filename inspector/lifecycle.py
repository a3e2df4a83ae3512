"""The store's life in the App: opened in a worker, the model warmed in a thread of its own,
changes by other processes polled, and a failure (to open, or found later) shown for good.

Mixed into the App. Handlers use Textual's naming convention (``on_store_opened``), since
``@on`` is only collected from the App's own class body.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

from textual import work
from textual.worker import Worker

from . import messages
from .failures import describe, is_damage
from .locations import shown
from .widgets.tenant_list import NO_TENANT
from .workers import report_failure


def freeze_startup_objects() -> None:
    """Leave what start-up built (Textual, SQLAlchemy, the model's runtime: ~140k objects) out of
    every later garbage collection. Scanning them made each full collection a 130-270 ms pause
    in the middle of typing, every few seconds; frozen, the same collections took 7-60 ms."""
    gc.freeze()


class StoreLifecycleMixin:
    """Mixed into the App; uses only host.Host, its own state below and Textual's App API
    (tests/test_inspector_layout.py)."""

    path: Path | str
    """The store's file, or a server URL."""
    embedder_spec: Any
    warm_on_start: bool
    """Warm the model as soon as the store has opened (off in most tests)."""
    poll_seconds: float
    """How often to look for commits by other processes; 0: never."""
    seen_version: int | None
    """The store's data version the views show."""
    model_thread: threading.Thread | None

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
        if m.what == "search" and self.query("#search-view"):
            self.query_one("#search-view").show_error(f"search failed: {m.error} (type to search again)")
        self.notify(f"{m.what}: {m.error}", title="failed", severity="error", timeout=15)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_failure(self, event)

    def on_worker_failed(self, m: messages.WorkerFailed) -> None:
        """A worker (the App's or a widget's) raised: say so, and keep the app usable (the open
        worker: say why it failed)."""
        worker, error = m.worker, m.error
        if worker.group == "open" or is_damage(error):
            self.post_message(messages.StoreFailed(describe(error)))
            return
        self.search.forget_thread(worker)  # the next keystroke starts a new search thread
        self.notify(f"{worker.group}: {describe(error)}", title="failed", severity="error", timeout=15)

    def warm_model(self) -> None:
        # A daemon thread of its own, not a Textual worker: workers run in asyncio's executor, which
        # is joined at exit, so quitting during the one-time model export (~20 s) sat on a blank
        # screen until the export was done (9 s in the report; over 30 s on this busy machine).
        # MemlensApp.run() ends the process instead (tests/test_e2e.py).
        self.model_thread = threading.Thread(target=self._warm_model, name="memlens-model", daemon=True)
        self.model_thread.start()

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
            self.query_one("#search-view").request()

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
