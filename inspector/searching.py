"""The search as the user types: one long-lived search thread that runs the newest query only,
and its results painted unless a newer keystroke has asked for its own.

Mixed into the App. Handlers use Textual's naming convention (``on_search_results``), since
``@on`` is only collected from the App's own class body.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.worker import Worker, get_current_worker

from . import messages
from .failures import describe, is_damage
from .loading import NO_TENANT, up_to

SEARCH_LIMIT = 25  # about a screenful; more costs time on every keystroke
PAINT_WAIT = 0.05  # seconds the hybrid half waits at most for the keyword half to be painted


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


class SearchMixin:
    """Mixed into the App; uses only host.Host, its own state below and Textual's App API
    (tests/test_inspector_layout.py). Its thread is host.Host.searcher, made by the App as
    ``LatestOnly(self.run_search, self.search_failed)``."""

    search_seq: int
    """Number of the newest search asked for: results of any other are stale."""
    show_timings: bool
    """Whether the search line shows the time a search took (off for snapshots)."""

    def request_search(self, m: Any) -> None:
        """A SearchView.Changed, handed over directly by the search view."""
        if self.store is None or self.user_id is NO_TENANT:
            return
        self.search_seq += 1
        # Until the model is warm every mode searches by keyword (the status line says so): the
        # semantic half would otherwise hold the search thread until the warm-up ends.
        mode = m.mode if self.store.model_ready else "keyword"
        self.searcher.submit((self.search_seq, self.user_id, mode, m, self.as_of))
        if self.searcher.worker is None:
            self.searcher.worker = self.run_worker(self.searcher.run, thread=True, group="search", exit_on_error=False)

    def run_search(self, request) -> None:
        """Runs on the search thread: the search, its results posted back unless already stale.

        A hybrid search paints its keyword half first: ranked by FTS5 alone it is on screen in a
        few milliseconds, where the whole hybrid search (the query encoded, the vectors searched,
        both fused) took 2-3 times as long on every keystroke. The hybrid results then replace
        it, unless a newer keystroke has asked for its own search meanwhile. A keyword half with
        no match is not painted: an empty list between two full ones would only flicker."""
        from store.errors import MemlensError

        seq, user, mode, m, at = request
        phases = ("keyword", mode) if mode == "hybrid" and m.query.strip() else (mode,)
        for phase in phases:
            if seq != self.search_seq:
                return  # a newer keystroke has asked for its own search
            start = time.perf_counter()
            try:
                hits = self.store.recall(
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
                self.search_failed(request, error)
                return
            if phase != mode and not hits:
                continue  # no keyword match: the results on screen stay until the hybrid ones replace them
            if seq == self.search_seq:
                elapsed = (time.perf_counter() - start) * 1000
                painted = threading.Event() if phase != mode else None
                self.post_message(messages.SearchResults(seq, m.query, phase, hits, elapsed, at, joining=phase != mode, painted=painted))
                if painted is not None:
                    # The keyword half is painted before the hybrid half starts: run side by side,
                    # the encoding's Python and the paint took turns on the GIL, and the first
                    # results reached the screen ~10 ms later (pty timelines, 100k episodes).
                    painted.wait(PAINT_WAIT)

    def search_failed(self, request, error: Exception) -> None:
        """On the search thread: this request failed; the next one is searched as usual."""
        self.post_message(messages.StoreFailed(str(error)) if is_damage(error) else messages.ActionFailed("search", describe(error)))

    def on_search_results(self, m: messages.SearchResults) -> None:
        if m.painted is not None:
            self.call_after_refresh(m.painted.set)
        if m.seq != self.search_seq:
            return  # stale: never paint over newer results
        what = "most recent" if not m.query.strip() else f"{len(m.hits)} results"
        if m.as_of is not None:
            what += " · episodes up to the moment only"
        timing = f" · {m.elapsed_ms:.1f} ms" if self.show_timings else ""
        self.query_one("#search-view").show(m.hits, f"{search_status(what, m.mode, self.store, m.joining)}{timing}")

    def on_action_failed(self, m: messages.ActionFailed) -> None:
        if m.what == "search" and self.query("#search-view"):
            self.query_one("#search-view").show_error(f"search failed: {m.error} (type to search again)")
        self.notify(f"{m.what}: {m.error}", title="failed", severity="error", timeout=15)
