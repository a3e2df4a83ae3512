"""Full garbage collections while the user pauses, not between a keystroke and its results.

A full collection scans every object made since start-up (Textual's line caches hold tens of
thousands: each drawn line keeps its own small caches), 10-30 ms at 100k episodes, and Python
runs one whenever enough young objects have survived: every few seconds of typing, as often in
the middle of a keystroke as anywhere. Here the automatic full collections wait while searches
are being asked for and run once the typing has paused; the young generations are collected as
ever (under a millisecond each). Deferred at most ``MOST_DEFERRED`` times, so memory held by
garbage cycles stays bounded however long the user types without a pause.
"""

from __future__ import annotations

import gc
import time

PAUSE = 1.0
"""Seconds without a search asked for after which a pending full collection runs."""
MOST_DEFERRED = 100
"""Young collections (of the middle generation) after which the full one runs even while typing:
Python's own rule waits for 10."""
NEVER = 1 << 30  # a threshold for the oldest generation that Python never reaches on its own


class IdleCollection:
    def __init__(self) -> None:
        self.thresholds: tuple[int, int, int] | None = None  # Python's, while deferred

    def defer(self) -> None:
        """From now on the full collections wait for ``collect_if_paused``."""
        if self.thresholds is None:
            self.thresholds = gc.get_threshold()
            young, middle, _ = self.thresholds
            gc.set_threshold(young, middle, NEVER)

    def restore(self) -> None:
        """Python's own thresholds again (tests run many Apps in one process)."""
        if self.thresholds is not None:
            gc.set_threshold(*self.thresholds)
            self.thresholds = None

    def collect_if_paused(self, last_asked: float) -> bool:
        """Run the pending full collection if the user has paused since ``last_asked`` (a
        ``time.monotonic()``), or if it has waited ``MOST_DEFERRED`` young collections. Whether it ran."""
        pending = gc.get_count()[2]
        if self.thresholds is None or pending == 0:
            return False
        if pending < MOST_DEFERRED and time.monotonic() - last_asked < PAUSE:
            return False
        gc.collect()
        return True
