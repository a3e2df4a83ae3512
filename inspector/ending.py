"""How the inspector ends on SIGTERM or SIGHUP, even once its terminal is gone.

A terminal that disappears without a hangup (or before the hangup arrives) fails Textual's next
write: its writer thread ends, the event loop then blocks for good on the writer's full queue,
and the input thread spins on the dead terminal at a full core. Signal handlers installed on the
event loop never run there, so the process stayed, holding the store and any private copy of
another library's memory, and ignored SIGTERM. Here the signals are caught at Python's level (the
main thread is interrupted even while it blocks), the App is asked to end as on ``q``, and if it
has not ended ``GRACE`` seconds later, memlens's private copies are deleted and the process ends.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable

GRACE = 5.0
"""Seconds the App has to end as on ``q`` after SIGTERM or SIGHUP before the process is ended."""
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def end_on_signals(request_exit: Callable[[], None], loop: asyncio.AbstractEventLoop) -> None:
    """From now on SIGTERM and SIGHUP end the App (``request_exit`` on ``loop``), or the process.
    Where signals cannot be caught here (not POSIX, or not the main thread), nothing changes."""

    def handler(signum: int, _frame: object) -> None:
        try:
            loop.call_soon_threadsafe(request_exit)
        except RuntimeError:
            pass  # the loop has closed: the App has ended, the process is on its way out
        threading.Thread(target=_end_after_grace, args=(signum,), name="memlens-ending", daemon=True).start()

    try:
        for signum in SIGNALS:
            signal.signal(signum, handler)
    except (AttributeError, ValueError):
        pass


def _end_after_grace(signum: int) -> None:
    time.sleep(GRACE)
    from store.compat.private_copies import remove_open_copies

    remove_open_copies()
    os._exit(128 + signum)
