"""syndarix's ``WorkingMemory`` (async) over a memlens session.

Scope levels map onto the store's partitions: the project is the tenant (``user_id``; no
project is the anonymous bucket) and the session, qualified by the agent instance when there
is one, is the memlens session. Storage, TTL, task state, scratchpad and checkpoints are the
session's own; this module converts shapes and keeps syndarix's rules (reserved ``_`` keys,
glob ``list_keys``, ``clear()`` keeping task state and scratchpad, ``update_task_progress``
returning None without a task).

Which store: ``WorkingMemory.create(scope, store=...)``; without one, the store at
``$MEMLENS_STORE`` (default ``./memlens.db``), opened once per process.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote

from ..errors import UnknownCheckpointError
from ..memory import MemoryStore

__all__ = ["WorkingMemory", "TaskState", "ScopeContext", "ScopeLevel", "MemoryNotFoundError", "session_key"]

# syndarix raises MemoryNotFoundError for an unknown checkpoint; memlens's is the same error.
MemoryNotFoundError = UnknownCheckpointError


class ScopeLevel(str, Enum):  # noqa: UP042 (declared as syndarix declares it; a StrEnum would change str() of a member)
    GLOBAL = "global"
    PROJECT = "project"
    AGENT_TYPE = "agent_type"
    AGENT_INSTANCE = "agent_instance"
    SESSION = "session"


@dataclass
class ScopeContext:
    scope_type: ScopeLevel
    scope_id: str
    parent: ScopeContext | None = None

    def find(self, level: ScopeLevel) -> str | None:
        scope: ScopeContext | None = self
        while scope is not None:
            if scope.scope_type == level:
                return scope.scope_id
            scope = scope.parent
        return None


@dataclass
class TaskState:
    """syndarix's task state; ``progress_percent`` is kept as given (0..100), never derived."""

    task_id: str
    task_type: str = ""
    description: str = ""
    status: str = "pending"
    current_step: int = 0
    total_steps: int = 0
    progress_percent: float = 0.0
    context: dict[str, Any] = field(default_factory=dict)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))


_default_store: MemoryStore | None = None


def _shared_store() -> MemoryStore:
    global _default_store
    if _default_store is None:
        _default_store = MemoryStore.open(Path(os.environ.get("MEMLENS_STORE", "memlens.db")))
    return _default_store


def _reserved(key: str, message: str) -> None:
    if isinstance(key, str) and key.startswith("_"):
        raise ValueError(message)


_P = ParamSpec("_P")
_R = TypeVar("_R")

# Characters a scope id may hold and still be written bare in a session key.
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@+~")


def session_key(scope: ScopeContext) -> str:
    """The memlens session id of a scope: every level below the project (the tenant), so two
    different scopes never share one.

    The plain shapes keep the ids earlier versions gave them, so their memory stays where it was:
    a session (``s``) and a session of an agent instance (``agent/s``), with ids of letters,
    digits and ``-_.:@+~``. Every other scope is written out level by level, each id
    percent-encoded (``agent_type=planner/session=s%2F1``): an ``=`` never appears in the plain
    shapes, and a ``/`` only between an agent and its session, so no two scopes meet."""
    chain: list[ScopeContext] = []
    level: ScopeContext | None = scope
    while level is not None:
        if level.scope_type != ScopeLevel.PROJECT:
            chain.append(level)
        level = level.parent
    chain.reverse()
    types = [c.scope_type for c in chain]
    bare = all(c.scope_id and set(c.scope_id) <= _BARE for c in chain)
    if bare and types in ([ScopeLevel.SESSION], [ScopeLevel.AGENT_INSTANCE, ScopeLevel.SESSION]):
        return "/".join(c.scope_id for c in chain)
    return "/".join(f"{c.scope_type.value}={quote(c.scope_id, safe='')}" for c in chain)


class WorkingMemory:
    """syndarix's ``WorkingMemory`` with its async signatures, over one memlens session."""

    def __init__(self, scope: ScopeContext, store: MemoryStore, default_ttl_seconds: int | None = None) -> None:
        self._scope = scope
        self._store = store
        self._default_ttl = default_ttl_seconds
        self._session = store.session(session_key(scope), user_id=scope.find(ScopeLevel.PROJECT))

    @classmethod
    async def create(
        cls, scope: ScopeContext, default_ttl_seconds: int | None = None, *, store: MemoryStore | None = None
    ) -> WorkingMemory:
        store = store if store is not None else await asyncio.to_thread(_shared_store)
        return cls(scope, store, default_ttl_seconds)

    @classmethod
    async def for_session(
        cls,
        session_id: str,
        project_id: str | None = None,
        agent_instance_id: str | None = None,
        *,
        store: MemoryStore | None = None,
        default_ttl_seconds: int | None = None,
    ) -> WorkingMemory:
        parent = ScopeContext(ScopeLevel.PROJECT, project_id) if project_id else None
        if agent_instance_id:
            parent = ScopeContext(ScopeLevel.AGENT_INSTANCE, agent_instance_id, parent)
        return await cls.create(ScopeContext(ScopeLevel.SESSION, session_id, parent), default_ttl_seconds, store=store)

    @property
    def scope(self) -> ScopeContext:
        return self._scope

    @property
    def is_using_fallback(self) -> bool:
        return False  # the store is the only storage; there is nothing to fall back from

    async def _run(self, fn: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    # --- key-value ----------------------------------------------------------------------

    async def set(self, key: str, value: Any, ttl_seconds: int | None = None) -> None:
        _reserved(key, "Keys starting with '_' are reserved for internal use")
        ttl = ttl_seconds if ttl_seconds is not None else self._default_ttl
        await self._run(self._session.set, key, value, ttl)

    async def get(self, key: str, default: Any = None) -> Any:
        result = await self._run(self._session.get, key)
        return result if result is not None else default

    async def delete(self, key: str) -> bool:
        _reserved(key, "Cannot delete internal keys directly")
        return await self._run(self._session.delete, key)

    async def exists(self, key: str) -> bool:
        return await self._run(self._session.exists, key)

    async def list_keys(self, pattern: str = "*") -> list[str]:
        keys = await self._run(self._session.list_keys)
        return [k for k in keys if fnmatch.fnmatchcase(k, pattern)]

    async def get_all(self) -> dict[str, Any]:
        return await self._run(self._session.get_all)

    async def clear(self) -> int:
        """Deletes the keys; task state and scratchpad stay, as in syndarix."""
        return await self._run(self._session.clear, keys_only=True)

    # --- task state -------------------------------------------------------------------

    async def set_task_state(self, state: TaskState) -> None:
        state.updated_at = datetime.now(UTC)
        record = asdict(state)
        record["started_at"] = state.started_at.isoformat()
        record["updated_at"] = state.updated_at.isoformat()
        await self._run(
            self._session.set_task_state,
            state.description or state.task_id,
            total_steps=state.total_steps,
            current_step=state.current_step,
            status=state.status,
            data={"syndarix": record},
        )
        # The store derives progress from steps when not told; syndarix keeps what it was given.
        await self._run(self._session.update_task_progress, progress_percent=state.progress_percent)

    async def get_task_state(self) -> TaskState | None:
        stored = await self._run(self._session.get_task_state)
        if stored is None or "syndarix" not in stored.data:
            return None
        record = dict(stored.data["syndarix"])
        record.update(current_step=stored.current_step, progress_percent=stored.progress_percent, status=stored.status)
        record["started_at"] = datetime.fromisoformat(record["started_at"])
        record["updated_at"] = stored.updated_at or datetime.fromisoformat(record["updated_at"])
        return TaskState(**record)

    async def update_task_progress(
        self, current_step: int | None = None, progress_percent: float | None = None, status: str | None = None
    ) -> TaskState | None:
        state = await self.get_task_state()
        if state is None:
            return None  # no task is invented
        if current_step is not None:
            state.current_step = current_step
        if progress_percent is not None:
            state.progress_percent = min(100.0, max(0.0, progress_percent))
        if status is not None:
            state.status = status
        await self.set_task_state(state)
        return state

    # --- scratchpad -------------------------------------------------------------------

    async def append_scratchpad(self, content: str) -> None:
        await self._run(self._session.append_scratchpad, content)

    async def get_scratchpad(self) -> list[str]:
        return [e.content for e in await self._run(self._session.get_scratchpad)]

    async def get_scratchpad_with_timestamps(self) -> list[dict[str, Any]]:
        entries = await self._run(self._session.get_scratchpad)
        return [{"content": e.content, "timestamp": e.created_at.isoformat()} for e in entries]

    async def clear_scratchpad(self) -> int:
        return await self._run(self._session.clear_scratchpad)

    # --- checkpoints ------------------------------------------------------------------

    async def create_checkpoint(self, description: str = "") -> str:
        return await self._run(self._session.create_checkpoint, description)

    async def restore_checkpoint(self, checkpoint_id: str) -> None:
        await self._run(self._session.restore_checkpoint, checkpoint_id)

    async def list_checkpoints(self) -> list[dict[str, Any]]:
        return [
            {"id": c.id, "description": c.description, "created_at": c.created_at.isoformat()}
            for c in await self._run(self._session.list_checkpoints)
        ]

    async def delete_checkpoint(self, checkpoint_id: str) -> bool:
        try:
            await self._run(self._session.delete_checkpoint, checkpoint_id)
        except UnknownCheckpointError:
            return False
        return True

    # --- health and lifecycle ---------------------------------------------------------

    async def is_healthy(self) -> bool:
        try:
            await self._run(self._session.get_stats)
        except Exception:  # any failure to read the store is "unhealthy", as syndarix reports Redis
            return False
        return True

    async def close(self) -> None:
        """A no-op: the store is shared by every session of the process (close the store itself)."""

    async def get_stats(self) -> dict[str, Any]:
        stats = await self._run(self._session.get_stats)
        return {
            "scope_type": self._scope.scope_type.value,
            "scope_id": self._scope.scope_id,
            "using_fallback": False,
            "total_keys": stats.keys + stats.checkpoints + int(stats.has_task_state) + int(stats.scratchpad_entries > 0),
            "user_keys": stats.keys,
            "checkpoint_count": stats.checkpoints,
            "scratchpad_entries": stats.scratchpad_entries,
            "has_task_state": stats.has_task_state,
        }
