"""mem0's ``Memory`` kept in a memlens store: the one-line switch for an agent written on mem0.

    from store.compat.mem0 import MemlensMemory as Memory
    m = Memory("memory.db")          # instead of mem0's Memory() / Memory.from_config(...)
    m.add("I love pizza", user_id="alice", infer=False)
    m.search("food", filters={"user_id": "alice"})

Where a memory lives: as :mod:`.mem0_source` imports mem0's own files, so an imported memory and
one made here are the same thing. Its ``user_id`` is its tenant (a memory scoped only by agent or
run goes to the anonymous tenant); it is a fact whose subject is the memory's id, predicate
``memory`` (``memory (agent A, run R)`` when scoped so), object its text. ``update`` supersedes
the fact, so every text the memory held stays in its history, with the time it changed (time
travel, ``history``); ``delete`` ends it (the text leaves search, ``get`` and ``get_all`` and
stays in the history, as mem0 keeps it in its history database). Erasure is memlens's:
``store.forget(user_id=...)`` takes a user's memories, their history and every copy, with a
receipt.

What differs from mem0, each refused with a ValueError rather than ignored:

- ``infer=True`` (mem0's default) needs an LLM to extract memories from messages; memlens has
  none. Pass ``infer=False`` (each message is a memory, as mem0 does), or give
  ``MemlensMemory(extract=...)``, a function from the messages to the memories' texts.
- ``metadata``, ``expiration_date``, ``memory_type`` and metadata filters: a memlens fact holds
  a text, not a document; the message's ``role`` and ``name`` are in ``add``'s results, not kept.
- ``search`` ranks by memlens's hybrid score (meaning and words); ``threshold`` is compared with
  the cosine similarity when the store has its model (with none, the search is by words only and
  no threshold applies). ``rerank`` is refused.
- ``history`` is built from the fact's versions: ``ADD``, then ``UPDATE`` per new text, then
  ``DELETE`` once ended; mem0's history rows' own ids and actors are not kept.
- ``reset`` ends every open memory of every tenant (mem0 also drops its history database); to
  erase, ``forget`` each user.
- ``get``, ``update``, ``delete`` and ``history`` take a memory id alone, as mem0 does; the id is
  looked up tenant by tenant the first time (then remembered for this object), so in a store of
  many thousands of users they are faster with ``user_id=``, which they accept.

``AsyncMemlensMemory`` is the same surface as coroutines (mem0's ``AsyncMemory``): each call runs
on a worker thread, so an event loop never waits on the database. Nothing else is needed beside
memlens.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..memory import MemoryStore
from ..models import Fact

__all__ = ["AsyncMemlensMemory", "MemlensMemory"]

_SCOPE = re.compile(r"memory(?: \((?:agent (?P<agent>\S+?))?(?:, )?(?:run (?P<run>\S+))?\))?")
_ENTITIES = ("user_id", "agent_id", "run_id")
_MOST_HITS = 1000


def memory_predicate(agent_id: str | None, run_id: str | None) -> str:
    """The predicate of a memory scoped to an agent and a run (either may be None)."""
    scope = [f"{name} {value}" for name, value in (("agent", agent_id), ("run", run_id)) if value]
    return f"memory ({', '.join(scope)})" if scope else "memory"


def memory_scope(predicate: str) -> tuple[str | None, str | None] | None:
    """(agent, run) of a memory's predicate; None for a fact that is not a mem0 memory."""
    found = _SCOPE.fullmatch(predicate)
    if found is None or (predicate != "memory" and found["agent"] is None and found["run"] is None):
        return None
    if memory_predicate(found["agent"], found["run"]) != predicate:
        return None
    return found["agent"], found["run"]


def _entity(value: Any, name: str) -> str | None:
    """mem0's rule for an entity id: a string (a number is taken as one), trimmed, with no space."""
    if value is None:
        return None
    text = str(value).strip()
    if not text or any(c.isspace() for c in text):
        raise ValueError(f"Invalid {name}: cannot be empty or contain whitespace. Provide a valid identifier.")
    return text


def _stamp(moment: datetime) -> str:
    return moment.isoformat()


class MemlensMemory:
    """mem0's ``Memory`` surface on a memlens store (an open :class:`~store.memory.MemoryStore`, or
    a path or URL to open and own). See the module's docstring for what differs."""

    def __init__(
        self, store: MemoryStore | str | Path = "memlens.db", *, extract: Callable[[list[dict[str, Any]]], Iterable[str]] | None = None
    ):
        if extract is not None and not callable(extract):
            raise ValueError("extract must be a function from the messages to the memories' texts")
        self._owned = not isinstance(store, MemoryStore)
        self.memory_store: MemoryStore = store if isinstance(store, MemoryStore) else MemoryStore.open(store)
        self.extract = extract
        self._owner: dict[str, str | None] = {}

    def close(self) -> None:
        """Close the memlens store if this object opened it."""
        if self._owned:
            self.memory_store.close()

    def __enter__(self) -> MemlensMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- writing ---------------------------------------------------------------------------

    def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: Any = None,
        agent_id: Any = None,
        run_id: Any = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Each message (a string is one user message) becomes a memory, as mem0's ``infer=False``
        does; system messages are skipped. Returns mem0's ``{"results": [...]}``."""
        user, agent, run = (_entity(v, n) for v, n in zip((user_id, agent_id, run_id), _ENTITIES, strict=True))
        if user is None and agent is None and run is None:
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")
        for given, name in (
            (metadata, "metadata"),
            (expiration_date, "expiration_date"),
            (memory_type, "memory_type"),
            (timestamp, "timestamp"),
        ):
            if given:
                raise ValueError(f"memlens keeps a memory's text, not its {name}; leave {name} out")
        if prompt is not None:
            raise ValueError("prompt instructs mem0's LLM, which memlens does not have; leave prompt out")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        elif isinstance(messages, dict):
            messages = [messages]
        elif not isinstance(messages, list):
            raise ValueError("messages must be str, dict, or list[dict]")
        if infer:
            if self.extract is None:
                raise ValueError(
                    "infer=True asks an LLM to pick the memories out of the messages, and memlens has none: "
                    "pass infer=False (each message is a memory), or give MemlensMemory(extract=...) a function that does it"
                )
            said = [{"role": "user", "content": text, "name": None} for text in self.extract(messages)]
        else:
            said = [m for m in messages if isinstance(m, dict) and m.get("role") not in (None, "system") and m.get("content") is not None]
        predicate = memory_predicate(agent, run)
        results = []
        for message in said:
            text = message["content"]
            if not isinstance(text, str):
                raise ValueError("a message's content must be text")
            memory_id = str(uuid.uuid4())
            self.memory_store.add_fact(memory_id, predicate, text, user_id=user)
            self._owner[memory_id] = user
            results.append({"id": memory_id, "memory": text, "event": "ADD", "actor_id": message.get("name"), "role": message["role"]})
        return {"results": results}

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        data: str | None = None,
        user_id: Any = None,
    ) -> dict[str, str]:
        """The memory's text is now ``text``; the old one stays in its history."""
        text = data if text is None else text
        if metadata:
            raise ValueError("memlens keeps a memory's text, not its metadata; leave metadata out")
        if text is None:
            raise ValueError("At least one of text, metadata, or expiration_date must be provided.")
        user, versions = self._located(memory_id, user_id)
        current = _open(versions)
        if current is None:
            raise ValueError(f"Memory with id {memory_id} not found. Please provide a valid 'memory_id'")
        self.memory_store.add_fact(memory_id, current.predicate, text, user_id=user)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str, *, user_id: Any = None) -> dict[str, str]:
        """The memory ends: gone from search and listings, kept in its history (forget erases it)."""
        user, versions = self._located(memory_id, user_id)
        current = _open(versions)
        if current is None:
            raise ValueError(f"Memory with id {memory_id} not found")
        self.memory_store.end_fact(current.id, user_id=user)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: Any = None, agent_id: Any = None, run_id: Any = None) -> dict[str, str]:
        """Every open memory of the user, agent or run ends (at least one of them is required)."""
        filters = {n: v for n, v in zip(_ENTITIES, (user_id, agent_id, run_id), strict=True) if v is not None}
        if not filters:
            raise ValueError(
                "At least one filter is required to delete all memories. If you want to delete all memories, use the `reset()` method."
            )
        for user, current, _ in self._matching(filters):
            self.memory_store.end_fact(current.id, user_id=user)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Every open memory of every tenant ends (kept in history; ``forget`` erases)."""
        for user in self.memory_store.tenant_names():
            for current, _ in self._memories_of(user):
                self.memory_store.end_fact(current.id, user_id=user)
        self._owner.clear()

    # --- reading ---------------------------------------------------------------------------

    def get(self, memory_id: str, *, user_id: Any = None) -> dict[str, Any] | None:
        """The memory as mem0 gives it, or None if there is none (or it was deleted)."""
        user, versions = self._located(memory_id, user_id)
        current = _open(versions)
        return None if current is None else _item(user, current, versions)

    def get_all(
        self, *, filters: dict[str, Any] | None = None, top_k: int = 20, show_expired: bool = False, **kwargs: Any
    ) -> dict[str, list[dict[str, Any]]]:
        """The memories of a user, agent or run (``filters`` names at least one), up to ``top_k``."""
        _no_top_level_entities(kwargs, "get_all")
        wanted = _checked_filters(filters)
        _check_top_k(top_k)
        found = [_item(user, current, versions) for user, current, versions in self._matching(wanted)]
        found.sort(key=lambda item: (item["created_at"], item["id"]))
        return {"results": found[:top_k]}

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, list[dict[str, Any]]]:
        """The user's (agent's, run's) memories best matching ``query``, best first, with a ``score``."""
        _no_top_level_entities(kwargs, "search")
        wanted = _checked_filters(filters)
        _check_top_k(top_k)
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 <= threshold <= 1:
            raise ValueError("threshold must be a number from 0 to 1")
        if rerank:
            raise ValueError("memlens ranks by its own hybrid score; rerank is not available")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        users = [wanted["user_id"]] if "user_id" in wanted else self.memory_store.tenant_names()
        hits: list[tuple[float, dict[str, Any]]] = []
        for user in users:
            hits += self._search_tenant(query, user, wanted, top_k, threshold, explain)
        hits.sort(key=lambda hit: -hit[0])
        return {"results": [item for _, item in hits[:top_k]]}

    def history(self, memory_id: str, *, user_id: Any = None) -> list[dict[str, Any]]:
        """What happened to the memory, oldest first: ADD, an UPDATE per new text, DELETE once ended."""
        _, versions = self._located(memory_id, user_id)
        events: list[dict[str, Any]] = []
        previous: Fact | None = None
        for fact in versions:
            if previous is not None and previous.valid_until != fact.valid_from:
                events.append(
                    _event(f"{previous.id}/end", memory_id, "DELETE", previous.object, None, previous.valid_until or fact.valid_from)
                )
                previous = None
            kind = "ADD" if previous is None else "UPDATE"
            events.append(_event(fact.id, memory_id, kind, None if previous is None else previous.object, fact.object, fact.valid_from))
            previous = fact
        if previous is not None and previous.valid_until is not None:
            events.append(_event(f"{previous.id}/end", memory_id, "DELETE", previous.object, None, previous.valid_until))
        return events

    # --- where a memory is -------------------------------------------------------------------

    def _search_tenant(
        self, query: str, user: str | None, wanted: dict[str, str], top_k: int, threshold: float, explain: bool
    ) -> list[tuple[float, dict[str, Any]]]:
        store = self.memory_store
        limit = min(_MOST_HITS, max(top_k * 4, 20))
        versions: dict[str, list[Fact]] | None = None  # read once, when the first hit needs its first version
        while True:
            hits = store.recall_facts(query, user_id=user, limit=limit, label="mem0")
            kept = []
            for hit in hits:
                fact = hit.fact
                if fact is None or not _matches(fact, wanted):
                    continue
                cosine = hit.scores.vector
                if cosine is not None and store.embedder is not None and cosine < threshold:
                    continue
                versions = self._versions_by_memory(user) if versions is None else versions
                item = _item(user, fact, versions.get(fact.subject, [fact])) | {"score": hit.scores.score}
                if explain:
                    item["score_details"] = hit.scores.model_dump()
                kept.append((hit.scores.score, item))
            if len(kept) >= top_k or len(hits) < limit or limit >= _MOST_HITS:
                return kept
            limit = min(_MOST_HITS, limit * 4)

    def _versions_by_memory(self, user: str | None) -> dict[str, list[Fact]]:
        """Every version of each of the tenant's memories, oldest first: one read of its facts."""
        found: dict[str, list[Fact]] = {}
        for fact in self.memory_store.facts(user_id=user, include_history=True):
            if memory_scope(fact.predicate) is not None:
                found.setdefault(fact.subject, []).append(fact)
        for versions in found.values():
            versions.sort(key=_oldest_first)
        return found

    def _memories_of(self, user: str | None) -> list[tuple[Fact, list[Fact]]]:
        """The tenant's open memories, each with its versions."""
        return [(current, versions) for versions in self._versions_by_memory(user).values() if (current := _open(versions))]

    def _matching(self, wanted: dict[str, str]) -> list[tuple[str | None, Fact, list[Fact]]]:
        users = [wanted["user_id"]] if "user_id" in wanted else self.memory_store.tenant_names()
        return [(user, current, versions) for user in users for current, versions in self._memories_of(user) if _matches(current, wanted)]

    def _located(self, memory_id: str, user_id: Any) -> tuple[str | None, list[Fact]]:
        """The tenant holding the memory (None: the anonymous one) and its versions, oldest first;
        no versions if no tenant holds it. Without ``user_id`` the tenants are asked in turn, once
        per id: the one found is remembered."""
        if not isinstance(memory_id, str) or not memory_id:
            raise ValueError("memory_id must be a non-empty string")
        if user_id is not None:
            user = _entity(user_id, "user_id")
            return user, self._versions(user, memory_id)
        if memory_id in self._owner:
            user = self._owner[memory_id]
            return user, self._versions(user, memory_id)
        for user in self.memory_store.tenant_names():
            versions = self._versions(user, memory_id)
            if versions:
                self._owner[memory_id] = user
                return user, versions
        return None, []

    def _versions(self, user: str | None, memory_id: str) -> list[Fact]:
        facts = self.memory_store.facts(user_id=user, subject=memory_id, include_history=True)
        return sorted((f for f in facts if memory_scope(f.predicate) is not None), key=_oldest_first)


def _oldest_first(fact: Fact) -> tuple[datetime, datetime]:
    return fact.valid_from, fact.recorded_at


def _open(versions: list[Fact]) -> Fact | None:
    """The version believed now; None once the memory was deleted (ended)."""
    return next((f for f in versions if f.valid_until is None), None)


def _item(user: str | None, fact: Fact, versions: list[Fact]) -> dict[str, Any]:
    """A memory as mem0 gives it: created when its first version was, updated when ``fact`` was."""
    scope = memory_scope(fact.predicate) or (None, None)
    item: dict[str, Any] = {
        "id": fact.subject,
        "memory": fact.object,
        "hash": hashlib.md5(fact.object.encode(), usedforsecurity=False).hexdigest(),
        "created_at": _stamp(versions[0].valid_from if versions else fact.valid_from),
        "updated_at": _stamp(fact.valid_from),
    }
    for key, value in (("user_id", user), ("agent_id", scope[0]), ("run_id", scope[1])):
        if value is not None:
            item[key] = value
    return item


class AsyncMemlensMemory:
    """mem0's ``AsyncMemory`` surface: :class:`MemlensMemory`'s methods as coroutines, each run on
    a worker thread. Takes what :class:`MemlensMemory` takes."""

    def __init__(
        self, store: MemoryStore | str | Path = "memlens.db", *, extract: Callable[[list[dict[str, Any]]], Iterable[str]] | None = None
    ):
        self.sync = MemlensMemory(store, extract=extract)
        self.memory_store = self.sync.memory_store

    def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> AsyncMemlensMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.close)

    def __getattr__(self, name: str) -> Any:
        if name not in _ASYNC_METHODS:
            raise AttributeError(name)
        method = getattr(self.sync, name)

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


_ASYNC_METHODS = frozenset({"add", "search", "get", "get_all", "update", "delete", "delete_all", "history", "reset"})


def _matches(fact: Fact, wanted: dict[str, str]) -> bool:
    scope = memory_scope(fact.predicate)
    if scope is None:
        return False
    agent, run = scope
    return wanted.get("agent_id", agent) == agent and wanted.get("run_id", run) == run


def _checked_filters(filters: dict[str, Any] | None) -> dict[str, str]:
    if not isinstance(filters, dict):
        raise ValueError("filters must contain at least one of: user_id, agent_id, run_id. Example: filters={'user_id': 'u1'}")
    other = sorted(set(filters) - set(_ENTITIES))
    if other:
        raise ValueError(f"memlens filters memories by user_id, agent_id and run_id only, not {', '.join(other)}")
    wanted = {name: _entity(value, name) for name, value in filters.items() if value is not None}
    if not wanted:
        raise ValueError("filters must contain at least one of: user_id, agent_id, run_id. Example: filters={'user_id': 'u1'}")
    return {k: v for k, v in wanted.items() if v is not None}


def _check_top_k(top_k: Any) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError("top_k must be a positive integer")


def _no_top_level_entities(kwargs: dict[str, Any], method: str) -> None:
    for name in kwargs:
        if name in _ENTITIES:
            raise ValueError(f"{method}() takes {name} in filters, not as an argument: filters={{'{name}': ...}}")
        raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")


def _event(event_id: str, memory_id: str, kind: str, old: str | None, new: str | None, at: datetime) -> dict[str, Any]:
    return {
        "id": event_id,
        "memory_id": memory_id,
        "old_memory": old,
        "new_memory": new,
        "event": kind,
        "created_at": _stamp(at),
        "updated_at": _stamp(at),
        "is_deleted": kind == "DELETE",
        "actor_id": None,
        "role": None,
    }
