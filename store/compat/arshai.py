"""Arshai's ``IMemoryManager`` over a memlens store, with Arshai's own types.

One memory per conversation and memory type, as in Arshai's ``InMemoryManager``: the
conversation is a memlens session of the tenant given at construction (default the anonymous
bucket) and each memory type one key in it, so the TTL is the store's key TTL. Needs the
``arshai`` package (``pip install memlens[compat]``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from arshai.core.interfaces.imemorymanager import IMemoryInput, IMemoryManager, IWorkingMemory

from ..memory import MemoryStore

__all__ = ["MemlensMemoryManager"]

logger = logging.getLogger(__name__)

# Arshai's reference default: 12 hours.
DEFAULT_TTL_SECONDS = 60 * 60 * 12


class MemlensMemoryManager(IMemoryManager):
    """``store`` / ``retrieve`` / ``update`` / ``delete`` with ``IMemoryInput``; synchronous like Arshai's."""

    def __init__(
        self,
        store: MemoryStore | str | Path = "memlens.db",
        *,
        ttl: int | None = DEFAULT_TTL_SECONDS,
        user_id: str | None = None,
        **_arshai_options: Any,
    ):
        self.memory_store = store if isinstance(store, MemoryStore) else MemoryStore.open(store)
        self.ttl = ttl
        self.user_id = user_id
        self.prefix = "memory"

    def _key(self, input: IMemoryInput) -> str:
        return f"{self.prefix}:{input.memory_type}"

    def _session(self, input: IMemoryInput) -> Any:  # a SessionMemory (compat names only the public API)
        return self.memory_store.session(input.conversation_id, user_id=self.user_id)

    def store(self, input: IMemoryInput) -> str:
        if not input.data:
            raise ValueError("No data provided to store")
        now = datetime.now(UTC).isoformat()
        record = {
            "data": {"working_memory": input.data[-1].working_memory},
            "metadata": input.metadata or {},
            "created_at": now,
            "last_update": now,
        }
        self._session(input).set(self._key(input), record, ttl=self.ttl)
        return f"{self.prefix}:{input.memory_type}:{input.conversation_id}"

    def retrieve(self, input: IMemoryInput) -> list[IWorkingMemory]:
        record = self._session(input).get(self._key(input))
        return [] if record is None else [IWorkingMemory(working_memory=record["data"]["working_memory"])]

    def update(self, input: IMemoryInput) -> None:
        """Like Arshai's reference: no data is a ValueError, a missing memory is left missing (logged)."""
        if not input.data:
            raise ValueError("No data provided to update")
        session = self._session(input)
        entry = session.entry(self._key(input))
        if entry is None:
            logger.warning("No existing data found for key: %s", self._key(input))
            return
        record = dict(entry.value)
        record["data"] = {"working_memory": input.data[-1].working_memory}
        record["last_update"] = datetime.now(UTC).isoformat()
        # The TTL runs from when the memory was stored; an update does not extend it.
        remaining = None if entry.expires_at is None else max(entry.expires_at - datetime.now(UTC), timedelta(microseconds=1))
        session.set(self._key(input), record, ttl=remaining)

    def delete(self, input: IMemoryInput) -> None:
        self._session(input).delete(self._key(input))

    @property
    def storage(self) -> Mapping[str, dict[str, Any]]:
        """What Arshai's ``InMemoryManager.storage`` holds: every live memory of this manager's
        tenant by Arshai's key (``memory:TYPE:conversation``), read from the store when asked.
        Read-only: a change to it would change nothing stored, so it raises instead."""
        found: dict[str, dict[str, Any]] = {}
        for info in self.memory_store.sessions(user_id=self.user_id):
            for key, value in self.memory_store.session(info.session_id, user_id=self.user_id).get_all().items():
                if key.startswith(f"{self.prefix}:"):
                    found[f"{key}:{info.session_id}"] = value
        return MappingProxyType(found)

    def _clear_expired_memory(self) -> None:
        """Arshai's clean-up of memories past their TTL, which its documentation tells users to
        call. Reads already hide them; this deletes them from the store's files too (with every
        tenant's other expired keys, as the store's own purge does)."""
        self.memory_store.purge_expired()
