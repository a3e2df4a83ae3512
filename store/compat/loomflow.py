"""loomflow's ``Memory`` protocol over a memlens store: ``Agent(memory=LoomflowMemory(path))``.

Takes and returns loomflow's own models (``Episode``, ``Fact``, ``Message``, ...), so loomflow
must be installed (``pip install memlens[compat]``); it is imported when this module is, and
``import store`` never imports this module. Every method is a shape conversion around one
store call run in a worker thread; differences from loomflow's own backends are listed in
docs/switching.md.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.from_thread
import numpy as np
from loomflow.core.context import IsolationWarning
from loomflow.core.types import (
    Episode,
    EpisodeMatch,
    Fact,
    MemoryBlock,
    MemoryExport,
    MemoryProfile,
    Message,
    Role,
    ToolCall,
    _normalize_predicate,  # loomflow's own rule, so both stores agree
)

from ..errors import UnknownSessionError, UnknownTenantError
from ..memory import MemoryStore
from ..models import Block, Profile, RecallHit
from ..models import Episode as StoredEpisode
from ..models import Fact as StoredFact

__all__ = ["LoomflowMemory", "LoomflowEmbedder"]

# loomflow's profile shows this many recent sessions and sample facts.
_PROFILE_SAMPLE = 10

_R = TypeVar("_R")
Mode = Literal["hybrid", "keyword", "vector"]  # MemoryStore.recall's modes


def _in_loop_thread(coroutine_fn: Callable[..., Coroutine[Any, Any, _R]], *args: Any) -> _R:
    """Run a loomflow coroutine from the store's worker thread on the caller's event loop
    (its HTTP clients belong to that loop); outside one, on a loop of its own."""
    try:
        return anyio.from_thread.run(coroutine_fn, *args)
    except RuntimeError:  # not in a worker thread anyio started
        return asyncio.run(coroutine_fn(*args))


class LoomflowEmbedder:
    """A loomflow embedder (``async embed`` / ``embed_batch``) as a memlens embedder."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = f"loomflow:{getattr(inner, 'name', type(inner).__name__)}"
        self._dim = getattr(inner, "dimensions", None)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    @property
    def is_warm(self) -> bool:
        return True

    def warm(self) -> None:
        return None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        batch = getattr(self.inner, "embed_batch", None)
        if batch is not None:
            vectors = _in_loop_thread(batch, texts)
        else:
            vectors = [_in_loop_thread(self.inner.embed, t) for t in texts]
        array = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        return array / np.where(norms == 0, 1, norms)


def _embedder_spec(embedder: Any) -> Any:
    if embedder is None or isinstance(embedder, (str, Path)):
        return "default" if embedder is None else embedder
    if all(hasattr(embedder, a) for a in ("name", "embed", "dim")) and not asyncio.iscoroutinefunction(embedder.embed):
        return embedder  # already a memlens embedder
    return LoomflowEmbedder(embedder)


def _to_episode(e: StoredEpisode) -> Episode:
    transcript = e.metadata.get("tool_transcript")
    return Episode(
        id=e.id,
        session_id=e.session_id or "",
        user_id=e.user_id,
        occurred_at=e.occurred_at,
        input=e.input,
        output=e.output,
        tool_calls=[ToolCall.model_validate(c) for c in e.tool_calls],
        tool_transcript=None if transcript is None else [_to_message(m) for m in transcript],
    )


def _episode_of(hit: RecallHit) -> StoredEpisode:
    if hit.episode is None:  # never: recall()'s default kind returns episodes alone
        raise TypeError(f"recall returned a {hit.kind}, not an episode")
    return hit.episode


def _fact_of(hit: RecallHit) -> StoredFact:
    if hit.fact is None:  # never: recall_facts() returns facts alone
        raise TypeError(f"recall_facts returned a {hit.kind}, not a fact")
    return hit.fact


def _to_message(m: Any) -> Message:
    data = m if isinstance(m, dict) else m.model_dump()
    return Message(
        role=Role(data["role"]),
        content=data.get("content") or "",
        name=data.get("name"),
        tool_call_id=data.get("tool_call_id"),
        tool_calls=tuple(ToolCall.model_validate(c) for c in data.get("tool_calls") or ()),
    )


def _from_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role.value, "content": m.content}
    if m.name is not None:
        out["name"] = m.name
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.tool_calls:
        out["tool_calls"] = [c.model_dump(mode="json", exclude={"tool_def"}) for c in m.tool_calls]
    return out


def _to_fact(f: StoredFact) -> Fact:
    return Fact(
        id=f.id,
        user_id=f.user_id,
        subject=f.subject,
        predicate=f.predicate,
        object=f.object,
        confidence=f.confidence,
        valid_from=f.valid_from,
        valid_until=f.valid_until,
        recorded_at=f.recorded_at,
        sources=list(f.source_episode_ids),
    )


def _utc(value: Any) -> Any:
    """loomflow reads a naive datetime as UTC; memlens refuses naive ones, so say it here."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if isinstance(value, tuple):
        return tuple(_utc(v) for v in value)
    return value


def _mode(alpha: float) -> Mode:
    # loomflow: 0.0 is pure BM25, 1.0 pure cosine, anything between a fusion of both.
    return "keyword" if alpha <= 0.0 else "vector" if alpha >= 1.0 else "hybrid"


class LoomflowFacts:
    """``memory.facts``: loomflow's ``FactStore`` calls over the store's facts."""

    def __init__(self, memory: LoomflowMemory):
        self._memory = memory

    async def append(self, fact: Fact) -> str:
        return (await self._memory._run(self._memory._append_fact, fact)).id

    async def append_many(self, facts: list[Fact]) -> list[str]:
        return [await self.append(f) for f in facts]

    async def query(
        self,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object_: str | None = None,
        valid_at: datetime | None = None,
        limit: int = 10,
        user_id: str | None = None,
    ) -> list[Fact]:
        # As loomflow's stores: without valid_at every fact, superseded ones included; a predicate
        # in loomflow's canonical form ("Lives In" finds "lives_in").
        canonical = None if predicate is None else _normalize_predicate(predicate)
        found = await self._memory._run(
            lambda: self._memory.store.facts(
                user_id=user_id,
                subject=subject,
                predicate=canonical,
                object=object_,
                valid_at=_utc(valid_at),
                include_history=valid_at is None,
            )
        )
        found.sort(key=lambda f: f.recorded_at, reverse=True)
        return [_to_fact(f) for f in found[:limit]]

    async def all_facts(self) -> list[Fact]:
        """Every fact of every tenant, superseded ones included (loomflow's consolidation reads them)."""

        def read() -> list[StoredFact]:
            store = self._memory.store
            return [f for t in store.tenants() for f in store.facts(user_id=t.user_id, include_history=True)]

        return [_to_fact(f) for f in await self._memory._run(read)]

    async def recall_text(self, query: str, *, limit: int = 5, valid_at: datetime | None = None, user_id: str | None = None) -> list[Fact]:
        return await self._memory.recall_facts(query, limit=limit, valid_at=valid_at, user_id=user_id)

    async def delete(self, *, user_id: str | None = None, before: datetime | None = None) -> int:
        """Erase the tenant's facts (those recorded before ``before``, if given), as loomflow's
        fact stores do; a memlens erasure: audited, scrubbed from the files, the history rule
        applied to the facts that stay. Returns how many were erased."""
        receipt = await self._memory._run(
            lambda: self._memory.store.forget(user_id=user_id, before=_utc(before), facts_only=True, missing_ok=True, actor="loomflow")
        )
        erased: int = receipt.counts["facts"]
        return erased

    async def count(self, *, user_id: str | None = None) -> int:
        """Every fact of the tenant, superseded ones included, as loomflow counts."""
        return len(await self._memory._run(lambda: self._memory.store.facts(user_id=user_id, include_history=True)))

    async def aclose(self) -> None:
        return None


class LoomflowMemory:
    """loomflow's ``Memory`` protocol, backed by a memlens store.

    ``store`` is an open :class:`~store.memory.MemoryStore` or a path to open one at.
    ``embedder``: a loomflow embedder (``HashEmbedder``, ``OpenAIEmbedder``, ...) or anything
    ``MemoryStore.open`` takes; default memlens's own model. ``consolidator``: a loomflow
    ``Consolidator`` used by :meth:`consolidate`. ``fact_store``: a loomflow ``FactStore`` to
    keep facts in instead of the memlens store (as loomflow's backends accept): ``memory.facts``
    is then that store, and recall of facts, profile, export, consolidation and ``forget`` go to
    it (``forget`` calls its ``delete``, so what that store keeps is its own erasure's to reach).
    """

    def __init__(self, store: MemoryStore | str | Path, *, embedder: Any = None, consolidator: Any = None, fact_store: Any = None):
        self.store = store if isinstance(store, MemoryStore) else MemoryStore.open(store, embedder=_embedder_spec(embedder))
        self._consolidator = consolidator
        self._own_facts = fact_store is None
        self.facts: Any = LoomflowFacts(self) if fact_store is None else fact_store

    async def _run(self, fn: Callable[..., _R], *args: Any) -> _R:
        return await anyio.to_thread.run_sync(fn, *args)

    async def aclose(self) -> None:
        await self._run(self.store.close)

    # --- working blocks ---------------------------------------------------------------

    async def working(self, *, user_id: str | None = None) -> list[MemoryBlock]:
        blocks = await self._run(lambda: self.store.working(user_id=user_id))
        return [MemoryBlock(name=b.name, content=b.content, updated_at=b.updated_at, pinned_order=b.pinned_order) for b in blocks]

    async def update_block(self, name: str, content: str, *, user_id: str | None = None) -> None:
        await self._run(lambda: self.store.update_block(name, content, user_id=user_id))

    async def append_block(self, name: str, content: str, *, user_id: str | None = None) -> None:
        # loomflow concatenates with nothing between.
        await self._run(lambda: self.store.append_block(name, content, user_id=user_id, separator=""))

    # --- episodes ---------------------------------------------------------------------

    async def remember(self, episode: Episode) -> str:
        transcript: list[Mapping[str, Any]] | None = (
            None if episode.tool_transcript is None else [_from_message(m) for m in episode.tool_transcript]
        )
        await self._run(
            lambda: self.store.remember(
                episode.input,
                episode.output,
                user_id=episode.user_id,
                session_id=episode.session_id or None,
                occurred_at=_utc(episode.occurred_at),
                id=episode.id,
                tool_calls=[c.model_dump(mode="json", exclude={"tool_def"}) for c in episode.tool_calls],
                tool_transcript=transcript,
                on_duplicate="replace",  # loomflow's INSERT OR REPLACE
            )
        )
        stored_id: str = episode.id
        return stored_id

    async def recall(
        self,
        query: str,
        *,
        kind: str = "episodic",
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        user_id: str | None = None,
    ) -> list[Episode]:
        matches = await self.recall_scored(query, kind=kind, limit=limit, time_range=time_range, user_id=user_id)
        return [m.episode for m in matches]

    async def recall_scored(
        self,
        query: str,
        *,
        kind: str = "episodic",
        limit: int = 5,
        time_range: tuple[datetime, datetime] | None = None,
        user_id: str | None = None,
        alpha: float = 0.5,
    ) -> list[EpisodeMatch]:
        """loomflow's conventions: an empty query is recency at score 1.0; a query with no
        keyword match and no positive cosine is recency at 0.0; otherwise ``score`` is
        memlens's fused (reciprocal rank) score."""
        if user_id is None:
            await self._warn_if_named_users()
        time_range = _utc(time_range)
        if limit <= 0:
            return []
        if not query.strip():
            recent = await self._run(lambda: self.store.recall("", user_id=user_id, limit=limit, time_range=time_range, label="loomflow"))
            return [EpisodeMatch(episode=_to_episode(_episode_of(h)), score=1.0) for h in recent]
        hits = await self._run(
            lambda: self.store.recall(query, user_id=user_id, limit=limit, time_range=time_range, mode=_mode(alpha), label="loomflow")
        )
        # loomflow counts a hit as signal only on a keyword match or a positive cosine.
        hits = [h for h in hits if h.scores.keyword is not None or (h.scores.vector or 0.0) > 0.0]
        if not hits:
            recent = await self._run(lambda: self.store.recall("", user_id=user_id, limit=limit, time_range=time_range, label="loomflow"))
            return [EpisodeMatch(episode=_to_episode(_episode_of(h)), score=0.0) for h in recent]
        return [
            EpisodeMatch(
                episode=_to_episode(_episode_of(h)), score=h.scores.fused, vector_score=h.scores.vector, bm25_score=h.scores.keyword
            )
            for h in hits
        ]

    async def _warn_if_named_users(self) -> None:
        # loomflow's footgun warning: its user_id defaults to None, so the store cannot tell
        # "anonymous on purpose" from "forgot user_id" the way memlens's own API does.
        tenants = await self._run(self.store.tenants)
        if any(t.user_id is not None for t in tenants):
            warnings.warn(
                "Memory.recall called without user_id, but the store contains episodes for one or more "
                "named users; this query only sees the anonymous bucket. Did you forget to pass user_id=?",
                IsolationWarning,
                stacklevel=3,
            )

    async def recall_facts(self, query: str, *, limit: int = 5, valid_at: datetime | None = None, user_id: str | None = None) -> list[Fact]:
        if not self._own_facts:
            return list(await self.facts.recall_text(query, limit=limit, valid_at=valid_at, user_id=user_id))
        hits = await self._run(
            lambda: self.store.recall_facts(query, user_id=user_id, limit=limit, valid_at=_utc(valid_at), label="loomflow")
        )
        return [_to_fact(_fact_of(h)) for h in hits]

    def _append_fact(self, fact: Fact) -> StoredFact:
        return self.store.add_fact(
            fact.subject,
            fact.predicate,
            fact.object,
            user_id=fact.user_id,
            confidence=fact.confidence,
            valid_from=fact.valid_from,
            source_episode_ids=fact.sources,
            id=fact.id,
        )

    async def consolidate(self) -> None:
        """Every tenant's episodes not yet consolidated go to the consolidator once each."""
        if self._consolidator is None:
            return
        consolidator = self._consolidator

        class Collect:
            def __init__(self) -> None:
                self.facts: list[Fact] = []

            async def append(self, fact: Fact) -> None:
                self.facts.append(fact)

        collected: list[Fact] = []

        def extract(episode: StoredEpisode) -> list[tuple[str, str, str, float]]:
            sink = Collect()
            _in_loop_thread(lambda: consolidator.consolidate([_to_episode(episode)], store=sink))
            if not self._own_facts:
                collected.extend(sink.facts)  # for the caller's fact store, once the episodes are marked
                return []
            return [(f.subject, f.predicate, f.object, f.confidence) for f in sink.facts]

        await self._run(lambda: self.store.consolidate(extract, all_tenants=True))
        # With a fact store of the caller's, memlens marks the episodes shown (each is shown once)
        # and the facts go to that store afterwards: not one transaction with the marks.
        for fact in collected:
            await self.facts.append(fact)

    # --- sessions, profile, GDPR ---------------------------------------------------------

    async def session_messages(self, session_id: str, *, user_id: str | None = None, limit: int = 20) -> list[Message]:
        # loomflow keeps limit // 2 turns (at least one), each user + assistant.
        turns = max(1, limit // 2)
        messages = await self._run(lambda: self.store.session_messages(session_id, user_id=user_id, limit=2 * turns))
        return [_to_message(m.model_dump()) for m in messages]

    async def profile(self, *, user_id: str | None = None) -> MemoryProfile:
        def read() -> tuple[list[StoredEpisode], Profile]:
            page = self.store.episodes(user_id=user_id, limit=10_000)
            return page.items, self.store.profile(user_id=user_id)

        items, summary = await self._run(read)
        recent = list(dict.fromkeys(e.session_id for e in items if e.session_id))[:_PROFILE_SAMPLE]
        return MemoryProfile(
            user_id=user_id,
            episode_count=summary.counts.episodes,
            # The store's counts already hold every fact row, superseded ones included.
            fact_count=summary.counts.facts if self._own_facts else await self.facts.count(user_id=user_id),
            last_seen=items[0].occurred_at if items else None,
            recent_sessions=recent,
            sample_facts=list(await self.facts.query(user_id=user_id, limit=_PROFILE_SAMPLE)),
        )

    async def forget(self, *, user_id: str | None = None, session_id: str | None = None, before: datetime | None = None) -> int:
        """Returns episodes + facts + blocks erased, as loomflow counts."""
        try:
            receipt = await self._run(
                lambda: self.store.forget(user_id=user_id, session_id=session_id, before=_utc(before), missing_ok=True, actor="loomflow")
            )
        except UnknownSessionError:
            return 0
        erased = sum(receipt.counts.get(k, 0) for k in ("episodes", "facts", "blocks"))
        if not self._own_facts and session_id is None:  # facts have no session, as in loomflow
            erased += await self.facts.delete(user_id=user_id, before=before)
        return erased

    async def export(self, *, user_id: str | None = None) -> MemoryExport:
        def read() -> tuple[list[StoredEpisode], list[StoredFact], list[Block]]:
            found: list[StoredEpisode] = []
            cursor = None
            while True:
                page = self.store.episodes(user_id=user_id, limit=10_000, cursor=cursor)
                found += page.items
                if page.next_cursor is None:
                    own = self.store.facts(user_id=user_id, include_history=True) if self._own_facts else []
                    return found, own, self.store.working(user_id=user_id)
                cursor = page.next_cursor

        try:
            found, stored, blocks = await self._run(read)
        except UnknownTenantError:
            found, stored, blocks = [], [], []
        # Every fact of the store's own; a fact store of the caller's is read as loomflow reads it.
        facts = [_to_fact(f) for f in stored] if self._own_facts else await self.facts.query(user_id=user_id, limit=100_000)
        return MemoryExport(
            user_id=user_id,
            episodes=sorted((_to_episode(e) for e in found), key=lambda e: e.occurred_at),
            facts=sorted(facts, key=lambda f: f.recorded_at),
            blocks=[MemoryBlock(name=b.name, content=b.content, updated_at=b.updated_at, pinned_order=b.pinned_order) for b in blocks],
        )
