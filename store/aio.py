"""``AsyncMemoryStore``: the same methods as coroutines, each run in a worker thread so
the event loop never waits on SQLite or the model."""

from __future__ import annotations

import asyncio
import functools
import inspect
from pathlib import Path
from typing import Any

from .memory import MemoryStore
from .tiers.sessions import SessionMemory


def _wrap_methods(cls, target_cls, exclude=()):
    """Give ``cls`` an async twin of every public method of ``target_cls``."""
    for name, method in inspect.getmembers(target_cls, inspect.isfunction):
        if name.startswith("_") or name in exclude or hasattr(cls, name):
            continue

        def make(name=name, method=method):
            @functools.wraps(method)
            async def call(self, *args, **kwargs):
                return await asyncio.to_thread(getattr(self._sync, name), *args, **kwargs)

            return call

        setattr(cls, name, make())
    return cls


class AsyncSessionMemory:
    def __init__(self, sync: SessionMemory):
        self._sync = sync
        self.session_id = sync.session_id
        self.user_id = sync.user_id


class AsyncMemoryStore:
    """Asynchronous façade over :class:`MemoryStore`; open it with ``await AsyncMemoryStore.open(...)``."""

    def __init__(self, sync: MemoryStore):
        self._sync = sync

    @classmethod
    async def open(cls, path_or_url: str | Path, **options: Any) -> AsyncMemoryStore:
        return cls(await asyncio.to_thread(MemoryStore.open, path_or_url, **options))

    @property
    def sync(self) -> MemoryStore:
        """The synchronous store underneath, for code that runs in threads already."""
        return self._sync

    @property
    def path(self) -> Path:
        return self._sync.path

    def session(self, session_id: str, **kwargs: Any) -> AsyncSessionMemory:
        # Creating the handle touches no database unless create=False; that check is cheap and local.
        return AsyncSessionMemory(self._sync.session(session_id, **kwargs))

    async def close(self) -> None:
        await asyncio.to_thread(self._sync.close)

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


_wrap_methods(AsyncMemoryStore, MemoryStore, exclude={"open", "close", "session"})
_wrap_methods(AsyncSessionMemory, SessionMemory)
