"""The search as the user types: one long-lived search thread that runs the newest query only,
and its results painted unless a newer keystroke has asked for its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.worker import Worker, get_current_worker

from . import messages
from .failures import describe, is_damage
from .time_travel import up_to
from .widgets.tenant_list import NO_TENANT

SEARCH_LIMIT = 25  # about a screenful; more costs time on every keystroke
KEYWORD_HALF_AFTER = 0.03
"""Seconds a hybrid search may be expected to take before its keyword half is searched and painted
first. Where the hybrid search is quicker (a tenant of a few thousand memories), the keyword half
is not even searched: painted at every keystroke, it was a third of the inspector's own CPU (a
frame of the results, the status line and the table's rows, 9-10 ms a key) for results replaced
a few milliseconds later."""
PAINT_WAIT = 0.05
"""Seconds the hybrid half waits at most for the keyword half to be on screen. Painted while the
hybrid half was searched, the frame shared the interpreter with it and took 10-30 ms instead of
10; the hybrid half starts that much later and arrives about as soon."""
SMOOTHING = 0.3  # the weight of the newest hybrid search in the time expected of the next


def search_status(what: str, searched: str, store: Any, joining: bool = False) -> str:
    """The search line: the mode searched first, in capitals, so a presenter pressing ``m`` sees it change."""
    if joining:
        how = "keyword first · semantic joining…"
    elif searched == "hybrid":
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
        self.worker: Worker | None = None
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

    def abandon(self) -> None:
        """The thread is gone: what it held or had waiting is dropped."""
        with self._condition:
            self._pending = None
            self._handling = False

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


class Search:
    """The search as the user types, held by the search view, which numbers its requests (its
    ``seq``, the one count of the newest request) and hands them over; this runs the newest on
    the view's search thread and posts its results back to the view, which paints them unless it
    has asked for a newer one. The store is the main screen's, given by the App.

    Uses only what ``host.Host`` states of the main screen (tests/test_inspector_layout.py)."""

    def __init__(self, host: Any, view: Any):
        self.host = host
        self.view = view
        self.last_asked = 0.0
        """When the newest request was handed over (``time.monotonic()``): the user is typing."""
        self.thread = LatestOnly(self.run, self.failed)
        self.hybrid_seconds: tuple[Any, float] | None = None
        """The tenant last searched and the time its hybrid search is expected to take, from the
        ones it took: one tenant's, so neither the state nor the user ids it holds grow with the
        tenants browsed (another tenant's first search starts afresh)."""

    @property
    def busy(self) -> bool:
        return self.thread.busy

    def stop(self) -> None:
        self.thread.stop()

    def forget_thread(self, worker: Any) -> None:
        """``worker`` ended with an error: if it was the search thread, the request it left is
        dropped (nothing is searching) and the next keystroke starts a new thread. Not at once:
        a thread that fails at every start would fail, and say so, forever."""
        if worker is self.thread.worker:
            self.thread.worker = None
            self.thread.abandon()

    def request(self, m: Any) -> None:
        """A SearchView.Changed from the view, handed over directly."""
        if self.host.store is None or self.host.user_id is NO_TENANT:
            return
        self.last_asked = time.monotonic()
        # Until the model is warm every mode searches by keyword (the status line says so): the
        # semantic half would otherwise hold the search thread until the warm-up ends.
        mode = m.mode if self.host.store.model_ready else "keyword"
        self.thread.submit((self.host.user_id, mode, m, self.host.as_of))
        if self.thread.worker is None:
            self.thread.worker = self.view.run_worker(self.thread.run, thread=True, group="search", exit_on_error=False)

    def run(self, request: Any) -> None:
        """Runs on the search thread: the search, its results posted back unless already stale.

        Where a hybrid search is expected to take longer than ``KEYWORD_HALF_AFTER``, it first
        ranks by FTS5 alone, in a few milliseconds, where the whole hybrid search (the query
        encoded, the vectors searched, both fused) takes 2-3 times as long. That keyword half is
        painted at once, and the hybrid half waits until it is on screen (``PAINT_WAIT`` at
        most): the user sees results soon, and one set of them when the hybrid search is quick.
        Nothing is posted once a newer keystroke has asked for its own search. A keyword half
        with no match is not posted: an empty list between two full ones would only flicker."""
        from store.errors import MemlensError

        view = self.view
        user, mode, m, at = request
        store = self.host.store
        expected = self.hybrid_seconds[1] if self.hybrid_seconds is not None and self.hybrid_seconds[0] == user else None
        quick = expected is not None and expected < KEYWORD_HALF_AFTER
        phases = ("keyword", mode) if mode == "hybrid" and m.query.strip() and not quick else (mode,)
        for phase in phases:
            joining = phase != mode  # the keyword half, painted while the hybrid half is searched
            if m.seq != view.seq:
                return  # a newer keystroke has asked for its own search
            start = time.perf_counter()
            try:
                hits = store.recall(
                    m.query,
                    user_id=user,
                    limit=SEARCH_LIMIT,
                    # In the past only episodes are searched, up to the moment: blocks, facts and
                    # notes are searched as they are now, which the past must not show.
                    kind=m.kind if at is None else "episodic",
                    session_id=m.session_id,
                    time_range=(m.since, up_to(m.until, at)),
                    mode=phase,
                    prefix=True,
                )
            except MemlensError as error:
                self.failed(request, error)
                return
            if phase == "hybrid" and m.query.strip():
                took = time.perf_counter() - start
                self.hybrid_seconds = (user, took if expected is None else (1 - SMOOTHING) * expected + SMOOTHING * took)
            if joining and not hits:
                continue  # no keyword match: the results on screen stay until the hybrid ones replace them
            if m.seq != view.seq:
                return
            what = "most recent" if not m.query.strip() else f"{len(hits)} results"
            if at is not None:
                what += " · episodes up to the moment only"
            timing = f" · {(time.perf_counter() - start) * 1000:.1f} ms" if self.host.show_timings else ""
            painted = threading.Event() if joining else None
            view.post_message(messages.SearchResults(m.seq, hits, f"{search_status(what, phase, store, joining)}{timing}", painted))
            if painted is not None:
                painted.wait(PAINT_WAIT)

    def failed(self, request: Any, error: Exception) -> None:
        """On the search thread: this request failed; the next one is searched as usual."""
        self.host.post_message(messages.StoreFailed(str(error)) if is_damage(error) else messages.ActionFailed("search", describe(error)))
