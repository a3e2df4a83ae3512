"""``AsyncMemoryStore``: the same methods as coroutines, each run in a worker thread so
the event loop never waits on SQLite or the model.

The methods themselves are written out in :mod:`store.aio_methods` (generated from the sync
classes, and kept in step by a test), so every signature is visible to a type checker."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

from .aio_methods import AsyncMemoryStoreMethods, AsyncSessionMemoryMethods
from .memory import MemoryStore
from .tenancy import UNSET
from .tiers.blocks import DEFAULT_VERSIONS_KEPT
from .tiers.sessions import SessionMemory
from .tiers.traces import DEFAULT_KEPT, DEFAULT_TTL
from .validation import DEFAULT_MAX_CONTENT_BYTES


class AsyncSessionMemory(AsyncSessionMemoryMethods):
    """Asynchronous working memory of one session; get it from :meth:`AsyncMemoryStore.session`."""

    def __init__(self, sync: SessionMemory):
        self._sync = sync
        self.session_id = sync.session_id
        self.user_id = sync.user_id


class AsyncMemoryStore(AsyncMemoryStoreMethods):
    """Asynchronous façade over :class:`MemoryStore`; open it with ``await AsyncMemoryStore.open(...)``."""

    def __init__(self, sync: MemoryStore):
        self._sync = sync

    @classmethod
    async def open(
        cls,
        path_or_url: str | Path,
        *,
        read_only: bool = False,
        create: bool = True,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        scratchpad_limit: int = 100,
        embedder: Any = "default",
        check_model: bool = True,
        block_versions_kept: int = DEFAULT_VERSIONS_KEPT,
        trace: bool | None = None,
        traces_kept: int = DEFAULT_KEPT,
        trace_ttl: timedelta = DEFAULT_TTL,
    ) -> AsyncMemoryStore:
        """:meth:`MemoryStore.open`, in a worker thread."""
        sync = await asyncio.to_thread(
            MemoryStore.open,
            path_or_url,
            read_only=read_only,
            create=create,
            max_content_bytes=max_content_bytes,
            scratchpad_limit=scratchpad_limit,
            embedder=embedder,
            check_model=check_model,
            block_versions_kept=block_versions_kept,
            trace=trace,
            traces_kept=traces_kept,
            trace_ttl=trace_ttl,
        )
        return cls(sync)

    @property
    def sync(self) -> MemoryStore:
        """The synchronous store underneath, for code that runs in threads already."""
        return self._sync

    @property
    def path(self) -> Path | str:
        return self._sync.path

    def session(self, session_id: str, *, user_id: str | None = UNSET, create: bool = True) -> AsyncSessionMemory:
        # Creating the handle touches no database unless create=False; that check is cheap and local.
        return AsyncSessionMemory(self._sync.session(session_id, user_id=user_id, create=create))

    async def close(self) -> None:
        await asyncio.to_thread(self._sync.close)

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
