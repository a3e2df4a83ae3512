"""LangGraph's long-term memory (a ``BaseStore``) kept in a memlens store.

``MemlensStore`` is a ``langgraph.store.base.BaseStore``: a graph compiled with
``store=MemlensStore("memory.db")`` runs unchanged, and everything it keeps is memlens memory
of a tenant, shown, searched, exported, imported and erased like any other.

Where an item lives:

- **Its tenant** is named by the namespace, by a rule stated once: ``user_at=1`` (the default)
  takes the namespace's second label, LangGraph's documented ``("memories", user_id)`` shape; a
  callable takes the namespace and returns the user id (or None). A namespace the rule finds no
  user in goes to the anonymous tenant, with a warning the first time.
- **Its place** is a session key: the session ``langgraph:`` plus the namespace's labels joined
  by ``.`` (labels may not hold a ``.``, so the join is undone exactly), the key the item's key,
  the value its JSON document. Session keys already are JSON documents under a key, with a time
  to live, creation and update times, export, import and erasure; a LangGraph item needs nothing
  more (docs/switching.md says why no tier of its own).
- **Its search text** is what its index fields hold (``index={"fields": [...]}`` at
  construction or ``index=[...]`` at ``put``; the whole document when neither is given; none for
  ``index=False``). memlens embeds it with its own local model and finds it hybrid (meaning and
  words), keyword or vector (``mode=``). A caller's ``index["embed"]`` is refused, not ignored:
  memlens embeds locally.

Reads see the store as it was before a batch's writes, and a batch's writes apply in order with
the last write to a key winning, as in LangGraph's own stores; they are not one transaction.
Needs ``langgraph`` (``pip install memlens[compat]``).
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)

from ..memory import MemoryStore
from .async_batches import TurnBatcher
from .langgraph_sqlite import SESSION_PREFIX

__all__ = ["SESSION_PREFIX", "MemlensStore"]

Mode = Literal["hybrid", "keyword", "vector"]
_RULE: Any = object()
UserRule = int | Callable[[tuple[str, ...]], str | None]


class MemlensStore(BaseStore):
    """A LangGraph ``BaseStore`` on a memlens store (an open :class:`~store.memory.MemoryStore`, or
    a path or URL to open and own). See the module's docstring for where items live."""

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore | str | Path = "memlens.db",
        *,
        user_at: UserRule = 1,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        mode: Mode = "hybrid",
    ) -> None:
        if not callable(user_at) and (isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0):
            raise ValueError(f"user_at must be a label position (0 or more) or a function of the namespace, not {user_at!r}")
        if mode not in ("hybrid", "keyword", "vector"):
            raise ValueError(f"mode must be hybrid, keyword or vector, not {mode!r}")
        self._owned = not isinstance(store, MemoryStore)
        self.memory_store: MemoryStore = store if isinstance(store, MemoryStore) else MemoryStore.open(store)
        self.user_at = user_at
        self.mode: Mode = mode
        self.index_config = self._checked_index(index)
        self.ttl_config = ttl
        self._fields = [tokenize_path(f) if f != "$" else "$" for f in (self.index_config or {}).get("fields") or ["$"]]
        self._warned: set[tuple[str, ...]] = set()
        self._turns: TurnBatcher[list[Op], list[Result]] = TurnBatcher(self._run_batch)

    def _checked_index(self, index: IndexConfig | None) -> IndexConfig | None:
        if index is None:
            return None
        if index.get("embed") is not None:
            raise ValueError(
                "MemlensStore embeds with memlens's own local model; an index's 'embed' is not used. "
                "Leave 'embed' (and 'dims') out of index, keeping 'fields' if you set them"
            )
        dims = index.get("dims")
        embedder = self.memory_store.embedder
        if dims is not None and (embedder is None or dims != embedder.dim):
            have = "no model" if embedder is None else f"{embedder.dim} dimensions"
            raise ValueError(f"index asks for {dims} dimensions; memlens's model gives {have}. Leave 'dims' out of index")
        return index

    def close(self) -> None:
        """Close the memlens store if this object opened it."""
        if self._owned:
            self.memory_store.close()

    def __enter__(self) -> MemlensStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- where an item lives --------------------------------------------------------------

    def user_of(self, namespace: tuple[str, ...]) -> str | None:
        """The tenant (user id) the namespace's items belong to; None: the anonymous tenant."""
        if callable(self.user_at):
            user = self.user_at(namespace)
            if user is not None and not isinstance(user, str):
                raise ValueError(f"user_at returned {type(user).__name__}, not a user id (str) or None")
        else:
            user = namespace[self.user_at] if len(namespace) > self.user_at else None
        if user is None and namespace[:1] not in self._warned:
            self._warned.add(namespace[:1])
            warnings.warn(
                f"namespace {namespace!r} names no user (user_at={self.user_at!r}): its items are kept in the anonymous tenant",
                stacklevel=4,
            )
        return user

    def _session(self, namespace: tuple[str, ...], user: Any = _RULE) -> Any:  # a SessionMemory
        """The session holding the namespace's items, of ``user`` (default: the one the rule names)."""
        owner = self.user_of(namespace) if user is _RULE else user
        return self.memory_store.session(SESSION_PREFIX + ".".join(namespace), user_id=owner)

    def _namespaces(self, prefix: tuple[str, ...], reads: _BatchReads) -> list[tuple[str | None, tuple[str, ...]]]:
        """Every (tenant, namespace) under ``prefix`` that holds an item, in no set order: the
        sessions of the one tenant the prefix names, or else of every tenant at once."""
        if not callable(self.user_at) and len(prefix) > self.user_at:
            named = prefix[self.user_at]
            held: list[tuple[str | None, str]] = [(named, info.session_id) for info in reads.sessions(named) if info.keys]
        else:
            held = reads.keyed_sessions(SESSION_PREFIX + ".".join(prefix))
        found: list[tuple[str | None, tuple[str, ...]]] = []
        for user, session_id in held:
            if session_id.startswith(SESSION_PREFIX):
                namespace = tuple(session_id[len(SESSION_PREFIX) :].split("."))
                if namespace[: len(prefix)] == prefix:
                    found.append((user, namespace))
        return found

    # --- the batch ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        (outcome,) = self._run_batch([list(ops)])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """As :meth:`batch`; every ``abatch`` (so every ``aget``, ``aput``, ``asearch`` ...) made in
        one turn of the event loop runs in one batch, as in LangGraph's ``AsyncSqliteStore``:
        their reads see the store as it was before any of their writes."""
        return await self._turns.submit(list(ops))

    def _run_batch(self, calls: list[list[Op]]) -> list[list[Result] | Exception]:
        """Runs calls as one batch: every read first, each distinct read once (none can change
        before the writes), then each call's writes in order, the last write to a key winning. An
        exception is the outcome of the call that raised it alone, and a call whose read failed
        writes nothing, as a ``batch`` that raises before its writes."""
        reads = _BatchReads(self.memory_store, self._session)
        outcomes: list[list[Result] | Exception] = []
        puts: dict[tuple[tuple[str, ...], str], tuple[int, PutOp]] = {}
        for number, ops in enumerate(calls):
            try:
                results: list[Result] = [None] * len(ops)
                mine: list[PutOp] = []
                for i, op in enumerate(ops):
                    if isinstance(op, PutOp):
                        _check_namespace(op.namespace)
                        mine.append(op)
                    else:
                        results[i] = reads.once(_read_key(op), functools.partial(self._read, op, reads))
            except Exception as error:
                outcomes.append(error)
                continue
            outcomes.append(results)
            for op in mine:
                puts.pop((op.namespace, op.key), None)  # the last write to a key wins, in its place
                puts[(op.namespace, op.key)] = (number, op)
        for number, op in puts.values():
            if isinstance(outcomes[number], Exception):
                continue  # that call stopped at its first failed write
            try:
                self._put(op)
            except Exception as error:
                outcomes[number] = error
        return outcomes

    def _read(self, op: Op, reads: _BatchReads) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op, reads)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op, reads)
        raise ValueError(f"Unknown operation type: {type(op)}")

    def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        session = self._session(op.namespace)
        entry = session.entry(op.key)
        if entry is None:
            return None
        if op.refresh_ttl and entry.ttl_seconds is not None:
            session.touch(op.key)
        item: Item = _item(Item, op.namespace, entry)
        return item

    def _put(self, op: PutOp) -> None:
        session = self._session(op.namespace)
        if op.value is None:
            session.delete(op.key)
            return
        ttl = None if op.ttl is None else op.ttl * 60  # LangGraph counts minutes
        session.set(op.key, dict(op.value), ttl=ttl, search_text=self._search_text(op))

    def _search_text(self, op: PutOp) -> str | None:
        if op.index is False:
            return None
        fields = self._fields if op.index is None else [tokenize_path(f) if f != "$" else "$" for f in op.index]
        texts = [text for field in fields for text in get_text_at_path(op.value, field)]
        return "\n".join(texts) if texts else None

    def _search(self, op: SearchOp, reads: _BatchReads) -> list[SearchItem]:
        candidates = []
        for user, namespace in self._namespaces(tuple(op.namespace_prefix), reads):
            for entry in reads.entries(user, namespace):
                if not op.filter or all(_matches(_at_path(entry.value, k), v) for k, v in op.filter.items()):
                    candidates.append((user, namespace, entry))
        if not op.query or not op.query.strip():
            # As LangGraph's SQLite and PostgreSQL stores list them: the latest written first.
            candidates.sort(key=lambda c: (-c[2].updated_at.timestamp(), c[1], c[2].key))
            found: list[tuple[tuple[str, ...], Any, float | None]] = [
                (namespace, entry, None) for _, namespace, entry in candidates[op.offset : op.offset + op.limit]
            ]
        else:
            found = self._ranked(op, candidates)
        if op.refresh_ttl:
            owner = {namespace: user for user, namespace, _ in candidates}
            self._touch((owner[namespace], namespace, entry) for namespace, entry, _ in found)
        return [_item(SearchItem, namespace, entry, score=score) for namespace, entry, score in found]

    def _ranked(self, op: SearchOp, candidates: list[Any]) -> list[tuple[tuple[str, ...], Any, float | None]]:
        """A query's hits, best first: every searchable candidate the search finds, then (as
        LangGraph does) candidates with no search text until the page is full."""
        query, wanted = op.query or "", op.offset + op.limit
        by_place = {(SESSION_PREFIX + ".".join(ns), e.key): (ns, e) for _, ns, e in candidates}
        scored: list[tuple[float, tuple[str, ...], Any]] = []
        for user in dict.fromkeys(user for user, _, e in candidates if e.search_text is not None):
            among = [(SESSION_PREFIX + ".".join(ns), e.key) for u, ns, e in candidates if u == user and e.search_text is not None]
            hits = self.memory_store.search_keys(
                query, user_id=user, among=among, limit=min(max(wanted, 1), 10_000), mode=self.mode, label="langgraph"
            )
            for hit in hits:
                namespace, entry = by_place[(hit.session_id or "", hit.id)]
                scored.append((hit.scores.score, namespace, entry))
        scored.sort(key=lambda s: -s[0])
        found: list[tuple[tuple[str, ...], Any, float | None]] = [(ns, e, score) for score, ns, e in scored]
        found += [(ns, e, None) for _, ns, e in candidates if e.search_text is None]
        return found[op.offset : wanted]

    def _touch(self, found: Iterable[tuple[str | None, tuple[str, ...], Any]]) -> None:
        keys: dict[tuple[str | None, tuple[str, ...]], list[str]] = {}
        for user, namespace, entry in found:
            if entry.ttl_seconds is not None:
                keys.setdefault((user, namespace), []).append(entry.key)
        for (user, namespace), names in keys.items():
            self._session(namespace, user).touch(*names)

    def _list_namespaces(self, op: ListNamespacesOp, reads: _BatchReads) -> list[tuple[str, ...]]:
        namespaces = {ns for _, ns in self._namespaces((), reads)}
        if op.match_conditions:
            namespaces = {ns for ns in namespaces if all(_namespace_matches(c, ns) for c in op.match_conditions)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    def sweep_ttl(self) -> int:
        """Delete every expired item now (reads already leave them out); returns how many went.
        The store also purges a namespace's expired items whenever it writes to it."""
        return self.memory_store.purge_expired()


class _BatchReads:
    """One batch's reads. Each distinct read runs once, and the batch's searches and listings
    share one reading of the sessions and of each namespace's items: nothing a batch reads
    changes before its writes."""

    def __init__(self, memory_store: MemoryStore, session: Callable[[tuple[str, ...], str | None], Any]) -> None:
        self._memory_store = memory_store
        self._session = session
        self._done: dict[Any, tuple[bool, Any]] = {}

    def once(self, key: Any, read: Callable[[], Any]) -> Any:
        """``read()``, or what it gave (or raised) the first time this batch asked for ``key``."""
        if key not in self._done:
            try:
                self._done[key] = (True, read())
            except Exception as error:
                self._done[key] = (False, error)
        ok, value = self._done[key]
        if not ok:
            raise value
        return value

    def keyed_sessions(self, prefix: str) -> list[tuple[str | None, str]]:
        return self.once(("keyed", prefix), lambda: self._memory_store.keyed_sessions(prefix))  # type: ignore[no-any-return]

    def sessions(self, user: str | None) -> list[Any]:
        return self.once(("sessions", user), lambda: self._memory_store.sessions(user_id=user))  # type: ignore[no-any-return]

    def entries(self, user: str | None, namespace: tuple[str, ...]) -> list[Any]:
        return self.once(("entries", user, namespace), lambda: self._session(namespace, user).entries())  # type: ignore[no-any-return]


def _read_key(op: Op) -> Any:
    """Equal for two reads that must give the same result (a read whose parts cannot be hashed
    is not shared)."""
    key: Any = (type(op).__name__, op)
    if isinstance(op, SearchOp):
        parts = (tuple(op.namespace_prefix), op.query, op.limit, op.offset, op.refresh_ttl)
        key = ("search", parts, json.dumps(op.filter, sort_keys=True, default=repr))
    try:
        hash(key)
    except TypeError:
        return ("unshared", id(op))
    return key


def _check_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(f"Namespace labels must be non-empty strings without periods; got {namespace!r}")


def _at_path(value: dict[str, Any], key: str) -> Any:
    """A filter key's value: a dotted key reaches into nested objects, as LangGraph's SQLite and
    PostgreSQL stores read it (``"user.level"`` is ``value["user"]["level"]``)."""
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)  # type: ignore[assignment]
    return value


def _item(kind: type[Any], namespace: tuple[str, ...], entry: Any, **extra: Any) -> Any:
    created: datetime = entry.created_at or entry.updated_at
    return kind(value=entry.value, key=entry.key, namespace=namespace, created_at=created, updated_at=entry.updated_at, **extra)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        part = namespace[: len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path) :]
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(want == "*" or want == have for want, have in zip(path, part, strict=True))


def _number(value: Any) -> float | None:
    """A value as SQLite's CAST to REAL reads it (true is 1, "7" is 7); None: not a number."""
    if not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _compared(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An order comparison as LangGraph's SQLite store makes it: text against text (ISO dates
    order so), otherwise as numbers; a field that is missing or not comparable matches nothing, as
    a NULL compares in SQL (InMemoryStore raises TypeError on a missing field)."""

    def compare(have: Any, want: Any) -> bool:
        if isinstance(want, str) and isinstance(have, str):
            return bool(test(have, want))
        a, b = _number(have), _number(want)
        return a is not None and b is not None and bool(test(a, b))

    return compare


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda have, want: have == want,
    "$ne": lambda have, want: have != want,
    "$gt": _compared(lambda a, b: a > b),
    "$gte": _compared(lambda a, b: a >= b),
    "$lt": _compared(lambda a, b: a < b),
    "$lte": _compared(lambda a, b: a <= b),
}


def _matches(have: Any, want: Any) -> bool:
    """LangGraph's filter rule: a dict of ``$`` operators compares, any other dict matches the
    fields it names, a list matches element by element, anything else by equality."""
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            for operator, operand in want.items():
                if operator not in _OPERATORS:
                    raise ValueError(f"Unsupported operator: {operator}")
                if not _OPERATORS[operator](have, operand):
                    return False
            return True
        return isinstance(have, dict) and all(_matches(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return isinstance(have, (list, tuple)) and len(have) == len(want) and all(map(_matches, have, want))
    return bool(have == want)
