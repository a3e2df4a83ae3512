"""Every call an event loop makes in one turn, run as one batch in one worker thread.

LangGraph's stores are asked for one operation at a time (``aget``, ``aput``, ``asearch`` each
make a batch of one), and a graph's parallel nodes or an ``asyncio.gather`` ask for hundreds at
once. Handed to a thread each, they queue for the store one by one, each with its own reads;
gathered per turn of the loop (as LangGraph's own ``AsyncBatchedBaseStore`` does), they are one
batch whose repeated reads run once. Batches of one loop run one after another, in the order
their first call was made.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Call = TypeVar("Call")
Outcome = TypeVar("Outcome")

# Runs the calls of one batch; returns each call's outcome in order: its result, or the
# exception that call alone raised (it is raised to that caller only).
Runner = Callable[[list[Call]], Sequence[Outcome | Exception]]


class _LoopQueue(Generic[Call, Outcome]):
    """The calls one event loop has made and not yet had answered."""

    def __init__(self, run: Runner[Call, Outcome]) -> None:
        self._run = run
        self._waiting: list[tuple[Call, asyncio.Future[Outcome]]] = []
        self._draining: asyncio.Task[None] | None = None

    async def submit(self, call: Call) -> Outcome:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Outcome] = loop.create_future()
        self._waiting.append((call, answer))
        if self._draining is None:
            # Runs after every step already scheduled in this turn: their calls join this batch.
            self._draining = loop.create_task(self._drain())
        return await answer

    async def _drain(self) -> None:
        batch: list[tuple[Call, asyncio.Future[Outcome]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                outcomes = await asyncio.to_thread(self._run, [call for call, _ in batch])
                for (_, answer), outcome in zip(batch, outcomes, strict=True):
                    if answer.done():  # its caller was cancelled
                        continue
                    if isinstance(outcome, Exception):
                        answer.set_exception(outcome)
                    else:
                        answer.set_result(outcome)
                batch = []
        except BaseException as error:
            # The batch itself failed (or the loop is ending): no caller may wait for good.
            for _, answer in batch + self._waiting:
                if answer.done():
                    continue
                if isinstance(error, asyncio.CancelledError):
                    answer.cancel()
                else:
                    answer.set_exception(error)
            self._waiting = []
            if not isinstance(error, Exception):
                raise
        finally:
            self._draining = None


class TurnBatcher(Generic[Call, Outcome]):
    """Gathers the calls each running event loop makes in one turn and runs them through
    ``run`` together, in a worker thread; each caller gets its own call's outcome."""

    def __init__(self, run: Runner[Call, Outcome]) -> None:
        self._run = run
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue[Call, Outcome]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def submit(self, call: Call) -> Outcome:
        loop = asyncio.get_running_loop()
        with self._lock:  # loops in other threads share this store
            queue = self._queues.get(loop)
            if queue is None:
                queue = self._queues[loop] = _LoopQueue(self._run)
        return await queue.submit(call)
