"""Recall over each tier: candidates from both lists, fused, then turned into hits."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from functools import cached_property, lru_cache
from types import SimpleNamespace
from typing import Any, Literal, Protocol

import numpy as np
from sqlalchemy import Connection, Integer, Row, Select, bindparam, or_, type_coerce

from ..backend import Backend, KeywordIndex, ServerVectorIndex
from ..backend.shared import filtered
from ..models import Episode, RecallHit, ScoreBreakdown
from ..schema import blocks_t, episodes_t, facts_t, from_micros, kv_t, scratch_t, sessions_t
from ..tenancy import Tenant
from ..tiers import blocks, episodes, facts
from ..tiers.sessions import kv_entry
from . import (
    fusion,
    in_memory,  # called through the module, so a test can watch it
)
from .cosines import cosines
from .indexing import Indexer
from .query import MIN_PREFIX, query_terms
from .ranking import Ranked, fuse
from .split_rows import Rows

Mode = Literal["hybrid", "keyword", "vector"]
_ENCODER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlens-query-encode")


class _Inline:
    """An executor's face over running the work at once, on the calling thread: vector-only recall
    has no keyword half to overlap with the encoding, and handing the encoding and the scan to the
    encoder thread and waking up for the result cost 0.5-0.65 ms of its p50 and p95 (100k
    episodes, 400 queries, both ways interleaved in one process, load 0.9)."""

    def submit(self, work: Callable[..., Any], *args: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(work(*args))
        except Exception as error:  # raised where the result is asked for, as from the thread
            done.set_exception(error)
        return done


_AT_ONCE = _Inline()


# What a server's index searches; blocks and notes are few, ranked in memory after the read
# transaction has ended (see Recall.blocks), so they keep their in-process matrices.
SERVER_KINDS = ("episode", "fact")


def server_index_of(backend: Backend, conn: Connection, tenant: Tenant) -> ServerVectorIndex | None:
    """The database's approximate vector index, if the tenant has one (PostgreSQL, built on request)."""
    index = backend.vector_index
    return index if index is not None and index.has_index(conn, tenant) else None


def candidate_depth(limit: int) -> int:
    return max(50, limit * 5)


class _Search(Protocol):
    """A vector search under way: a Future, or an :class:`_OnDemand`."""

    def done(self) -> bool: ...

    def result(self) -> list[tuple[int, float]]: ...


class _OnDemand:
    """A search run when its result is first asked for, on the asking thread (a Future's face)."""

    def __init__(self, search: Callable[[], list[tuple[int, float]]]):
        self._search = search
        self._result: list[tuple[int, float]] | None = None

    def done(self) -> bool:
        return self._result is not None

    def result(self) -> list[tuple[int, float]]:
        if self._result is None:
            self._result = self._search()
        return self._result


class Recall:
    """One query's recall inside one read transaction: a method per tier."""

    def __init__(self, indexer: Indexer, index: KeywordIndex, conn: Connection, tenant: Tenant, query: str, mode: Mode, prefix: bool):
        self.indexer, self.index, self.conn, self.tenant, self.query = indexer, index, conn, tenant, query
        self.use_vectors = mode in ("hybrid", "vector") and indexer.enabled and bool(query.strip())
        self.use_keywords = mode in ("hybrid", "keyword")
        self.prefix = prefix
        # The halves alone keep their own order; hybrid needs both (without an embedder it is keyword-only).
        self.mode: Mode = "hybrid" if self.use_vectors and self.use_keywords else "vector" if self.use_vectors else "keyword"
        self._matrices: dict[str, tuple[np.ndarray, Rows]] = {}
        self._candidates: dict[int, Row[Any]] = {}
        # Encode the query in the background while the keyword side runs: onnxruntime and
        # the database both release the GIL, so the two overlap on two cores.
        known = indexer.known_query(query) if self.use_vectors else None
        self._query_vector: Future[np.ndarray] | None = None
        self._encoder = _ENCODER if self.use_keywords else _AT_ONCE
        if known is not None:
            self._query_vector = Future()
            self._query_vector.set_result(known)
        elif self.use_vectors:
            self._query_vector = self._encoder.submit(indexer.encode_query, query)

    @cached_property
    def expression(self) -> str | None:
        """The keyword index's query for episodes and facts; blocks and notes, ranked in memory, never need it."""
        typing = self.prefix and not self.query.endswith((" ", "\t"))
        return self.index.expression(
            self.conn, self.tenant, query_terms(self.query), min_prefix=MIN_PREFIX if typing else None, cut_common=self.use_keywords
        )

    @cached_property
    def fusion_query(self) -> fusion.Query:
        return fusion.Query.of(self.query)

    @property
    def query_vector(self) -> np.ndarray:
        if self._query_vector is None:
            raise RuntimeError("this search uses no vectors")  # only the vector side asks
        return self._query_vector.result()

    def vector_hits(self, kind: str, limit: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        job = self.vector_job(kind, limit, allowed)
        return [] if job is None else job.result()

    @cached_property
    def server_index(self) -> ServerVectorIndex | None:
        """The database's approximate index, when the tenant has one: its episodes and facts are
        then searched by the server and never loaded here."""
        return server_index_of(self.indexer.backend, self.conn, self.tenant) if self.use_vectors else None

    def vector_job(self, kind: str, limit: int, allowed: np.ndarray | None) -> _Search | None:
        """Start the scan of ``kind`` on the encoder thread, queued behind the query's encoding
        (or, with the server's index, a search run on this thread when its result is asked for:
        the read transaction's connection cannot leave it)."""
        if not self.use_vectors:
            return None
        server = self.server_index
        if kind in SERVER_KINDS and server is not None:
            keys = None if allowed is None else allowed.tolist()
            return _OnDemand(lambda: server.nearest(self.conn, self.tenant, kind, self.query_vector, limit, keys))
        # The matrix is fetched here: the read transaction's connection stays on this thread.
        vectors = self.indexer.cache.searchable(self.conn, self.tenant, kind, self.indexer.model.dim)
        pks = vectors.pks
        self._matrices[kind] = (pks, vectors.matrix)

        def scan() -> list[tuple[int, float]]:
            mask = None if allowed is None else np.isin(pks, allowed)
            best, scores = vectors.top_k(self.query_vector, limit, mask)
            return [(int(pks[i]), float(s)) for i, s in zip(best, scores, strict=True)]

        return self._encoder.submit(scan)

    def fill_cosines(self, kind: str, candidates: list[Ranked]) -> None:
        """The cosine of every candidate the vector list did not hold (keyword-only, exact), which
        hybrid fusion scores them by; one dot product each. Row keys in a cached matrix ascend
        (loaded in key order, appended above the maximum); a key not found keeps None."""
        missing = [c for c in candidates if c.vector is None]
        if missing and kind in SERVER_KINDS and self.server_index is not None:
            found = self.server_index.similarities(self.conn, self.tenant, kind, self.query_vector, [c.pk for c in missing])
            for c in missing:
                c.vector = found.get(c.pk)
            return
        if not missing or kind not in self._matrices:
            return
        pks, matrix = self._matrices[kind]
        if not len(pks):
            return
        want = np.fromiter((c.pk for c in missing), dtype=np.int64, count=len(missing))
        at = np.minimum(np.searchsorted(pks, want), len(pks) - 1)
        found = pks[at] == want
        sims = cosines(matrix[at[found]], self.query_vector)
        for c, sim in zip((c for c, ok in zip(missing, found, strict=True) if ok), sims, strict=True):
            c.vector = float(sim)

    def hybrid_candidates(self, candidates: list[Ranked], extra: list[int]) -> list[Ranked]:
        """The fused lists plus memories only the exact channel found."""
        seen = {c.pk for c in candidates}
        return candidates + [Ranked(pk=pk) for pk in dict.fromkeys(extra) if pk not in seen]

    # --- tiers ---------------------------------------------------------------------

    def episodes(self, limit: int, session_id: str | None, since: datetime | None, until: datetime | None) -> list[RecallHit]:
        depth = candidate_depth(limit)
        allowed = None
        if self.use_vectors and (session_id is not None or since is not None or until is not None):
            stmt = filtered(self.tenant.select(episodes_t, episodes_t.c.pk), session_id=session_id, since=since, until=until)
            allowed = np.fromiter(self.conn.execute(stmt).scalars(), dtype=np.int64)
        # The vector side (encode, then scan) runs on the encoder thread while this thread
        # runs the keyword query: the two halves overlap on two cores.
        vector_job = self.vector_job("episode", depth, allowed)
        keyword = []
        if self.use_keywords and self.expression:
            keyword = self.index.episodes(self.conn, self.tenant, self.expression, depth, session_id, since, until)
        # Keyword mode keeps the keyword order: highlight its best hits while the vector job (if
        # any) finishes. Hybrid marks its fused hits once, after ordering: its top hits are rarely
        # the keyword side's, and marking both sets cost a second highlight query in nine searches
        # of ten (cProfile, 10k episodes: highlights were a quarter of a hybrid search).
        early = keyword[:limit] if self.mode == "keyword" else []
        marked = self._highlights([pk for pk, _, _ in early]) if early and self.expression else {}
        phrases = self.fusion_query.phrases if self.mode == "hybrid" else None
        extra = (
            self.index.phrase_episodes(self.conn, self.tenant, list(phrases), fusion.EXACT_CANDIDATES, session_id, since, until)
            if phrases
            else []
        )
        texts: dict[int, str] = {}
        if self.mode == "hybrid" and self._query_vector is not None and not self._query_vector.done():
            # The query is still being encoded: read the texts of the candidates already named
            # meanwhile (half of them or more), instead of after the wait (1-1.5 ms for ~100 rows).
            # Decided by the encoding, not by the scan: a kept query vector reads every text at
            # once, however far the scan thread has got (it lags on a loaded machine).
            texts = self.episode_texts([pk for pk, _, _ in keyword] + extra)
        vector = vector_job.result() if vector_job is not None else []
        candidates = fuse(vector, keyword)
        if self.mode == "hybrid":
            # Hybrid judges every candidate by its text (coverage, exact ids) and its cosine.
            candidates = self.hybrid_candidates(candidates, extra)
            texts.update(self.episode_texts([c.pk for c in candidates if c.pk not in texts]))
            self.fill_cosines("episode", candidates)
        ranked = fusion.order(candidates, texts, self.fusion_query, self.mode)[:limit]
        late = [c.pk for c in ranked if (c.keyword_rank or c.exact) and c.pk not in marked]
        if late and self.expression:
            marked.update(self._highlights(late))
        for c in ranked:
            c.matched = marked.get(c.pk, [])
        found = self._episodes([c.pk for c in ranked])
        hits = []
        for c in ranked:
            episode = found[c.pk]
            hits.append(
                RecallHit(
                    kind="episode",
                    id=episode.id,
                    text=episodes.embed_text(episode.input, episode.output),
                    session_id=episode.session_id,
                    occurred_at=episode.occurred_at,
                    episode=episode,
                    scores=_scores(c),
                    matched_terms=c.matched,
                )
            )
        return hits

    def episode_texts(self, pks: list[int]) -> dict[int, str]:
        """Searchable text by key. The rows are kept, so the hits among them are not read again."""
        return {row.pk: episodes.embed_text(row.input, row.output) for row in self._read_candidates(pks)}

    def _read_candidates(self, pks: list[int]) -> list[Row[Any]]:
        rows = list(self.conn.execute(_candidates_by_key(self.tenant), {"keys": pks})) if pks else []
        self._candidates.update((row.pk, row) for row in rows)
        return rows

    def _highlights(self, pks: list[int]) -> dict[int, list[str]]:
        """The matched words of these episodes, marked in the rows this search reads for its hits
        anyway (marking read the same ten rows again: about 0.5 ms of a keyword search at 100k)."""
        self._read_candidates([pk for pk in pks if pk not in self._candidates])
        texts = {pk: (row.input, row.output) for pk in pks if (row := self._candidates.get(pk)) is not None}
        return self.index.episode_highlights(self.conn, self.tenant, self.expression or "", pks, texts)

    def _episodes(self, pks: list[int]) -> dict[int, Episode]:
        """The episodes by key: the candidates' rows kept by :meth:`episode_texts`, the rest read."""
        found = {pk: _candidate_episode(self._candidates[pk]) for pk in pks if pk in self._candidates}
        rows = self._episode_rows([pk for pk in pks if pk not in found])
        return found | {pk: episodes.to_model(row) for pk, row in rows.items()}

    def _episode_rows(self, pks: list[int]) -> dict[int, Row[Any]]:
        if not pks:
            return {}
        return {r.pk: r for r in self.conn.execute(_episodes_by_key(self.tenant), {"keys": pks})}

    def facts(self, limit: int, valid_at: datetime | None) -> list[RecallHit]:
        depth = candidate_depth(limit)
        stmt = self.tenant.select(facts_t).where(facts.valid_at_clause(valid_at)) if valid_at is not None else _current_facts(self.tenant)
        rows = {r.pk: r for r in self.conn.execute(stmt)}
        if not rows:
            # A tenant with no facts (then) has no fact hits: the vector search, the keyword query
            # and the fusion ran for nothing, 0.9 ms of a facts search at 100k episodes.
            return []
        allowed = np.fromiter(rows, dtype=np.int64)
        vector = self.vector_hits("fact", depth, allowed)
        keyword = []
        if self.use_keywords and self.expression:
            keyword = self.index.facts(self.conn, self.tenant, self.expression, depth, set(rows))
        candidates = fuse(vector, keyword)
        texts = {}
        if self.mode == "hybrid":
            texts = {pk: facts.fact_text(r.subject, r.predicate, r.object) for pk, r in rows.items()}
            candidates = self._small_candidates("fact", candidates, texts)
        hits = []
        for c in fusion.order(candidates, texts, self.fusion_query, self.mode)[:limit]:
            fact = facts.to_model(rows[c.pk])
            hits.append(
                RecallHit(
                    kind="fact",
                    id=fact.id,
                    text=facts.fact_text(fact.subject, fact.predicate, fact.object),
                    occurred_at=fact.valid_from,
                    fact=fact,
                    scores=_scores(c),
                    matched_terms=c.matched,
                )
            )
        return hits

    # Blocks and notes have no keyword index: they are read here, inside the read transaction,
    # and ranked in memory by the function returned, which the caller runs after the transaction
    # ends. Ranking is pure computation (a 10 KB query over 200 blocks), and a snapshot held
    # through it would keep forget from truncating the WAL.

    def blocks(self, limit: int) -> Callable[[], list[RecallHit]]:
        rows = {r.pk: r for r in self.conn.execute(_blocks_of(self.tenant))}
        rank = self._small_corpus("block", {pk: block_text(r) for pk, r in rows.items()}, limit)

        def hits() -> list[RecallHit]:
            out = []
            for c in rank():
                block = blocks.to_model(rows[c.pk])
                out.append(
                    RecallHit(
                        kind="block",
                        id=block.name,
                        text=block.content,
                        occurred_at=block.updated_at,
                        block=block,
                        scores=_scores(c),
                        matched_terms=c.matched,
                    )
                )
            return out

        return hits

    def scratchpad(self, limit: int, session_id: str | None) -> Callable[[], list[RecallHit]]:
        from ..models import ScratchpadEntry

        stmt = _notes_of(self.tenant)
        if session_id is not None:
            stmt = stmt.where(sessions_t.c.session_id == session_id)
        rows = {pk: (content, micros, session) for pk, content, micros, session in self.conn.execute(stmt)}
        rank = self._small_corpus("scratchpad", {pk: row[0] for pk, row in rows.items()}, limit)

        def hits() -> list[RecallHit]:
            out = []
            for c in rank():
                content, micros, session = rows[c.pk]
                note = ScratchpadEntry(id=c.pk, created_at=from_micros(micros), content=content)
                out.append(
                    RecallHit(
                        kind="scratchpad",
                        id=str(c.pk),
                        text=content,
                        session_id=session,
                        occurred_at=note.created_at,
                        note=note,
                        scores=_scores(c),
                        matched_terms=c.matched,
                    )
                )
            return out

        return hits

    def keys(self, limit: int, among: set[tuple[str, str]] | None, now: datetime) -> Callable[[], list[RecallHit]]:
        """Session keys that have a search text (live ones), of the sessions and keys in ``among`` (None: all)."""
        stmt = self.tenant.select(kv_t, kv_t, sessions_t.c.session_id).join(sessions_t, sessions_t.c.pk == kv_t.c.session_pk)
        stmt = stmt.where(kv_t.c.search_text.is_not(None), or_(kv_t.c.expires_at.is_(None), kv_t.c.expires_at > now))
        rows = {r.pk: r for r in self.conn.execute(stmt) if among is None or (r.session_id, r.key) in among}
        rank = self._small_corpus("key", {pk: r.search_text for pk, r in rows.items()}, limit)

        def hits() -> list[RecallHit]:
            out = []
            for c in rank():
                row = rows[c.pk]
                entry = kv_entry(row)
                out.append(
                    RecallHit(
                        kind="key",
                        id=entry.key,
                        text=row.search_text,
                        session_id=row.session_id,
                        occurred_at=entry.updated_at,
                        entry=entry,
                        scores=_scores(c),
                        matched_terms=c.matched,
                    )
                )
            return out

        return hits

    def _small_corpus(self, kind: str, documents: dict[int, str], limit: int) -> Callable[[], list[Ranked]]:
        if not documents:
            # Most tenants keep no blocks or notes: their matrix checks and the encoder thread's
            # turn cost ~0.8 ms of every all-tier search for nothing (100k episodes, while typing).
            return list
        # The vector matrix is fetched now (it needs the connection); the scan runs on the encoder thread.
        vector = self.vector_job(kind, candidate_depth(limit), np.fromiter(documents, dtype=np.int64))

        def rank() -> list[Ranked]:
            keyword = in_memory.bm25_small(self.query, documents, prefix_last=self.prefix) if self.use_keywords else []
            # As deep as the vector list and the episodes' keyword list: fusing every match of a
            # common word cost more than ranking them.
            keyword = keyword[: candidate_depth(limit)]
            candidates = fuse(vector.result() if vector is not None else [], keyword)
            if self.mode == "hybrid":
                candidates = self._small_candidates(kind, candidates, documents)
            return fusion.order(candidates, documents, self.fusion_query, self.mode)[:limit]

        return rank

    def _small_candidates(self, kind: str, candidates: list[Ranked], texts: dict[int, str]) -> list[Ranked]:
        """Hybrid candidates of a tier held in memory whole: every text can be checked for an exact id."""
        query = self.fusion_query
        extra = [pk for pk, text in texts.items() if query.exact(text)] if query.pattern is not None else []
        candidates = self.hybrid_candidates(candidates, extra)
        self.fill_cosines(kind, candidates)
        return candidates


# Hybrid reads every candidate's text; the same read brings the rest of the row but the time raw:
# converting ~100 rows' times (and every column) was most of what fusion added to a search
# (cProfile, 100k episodes), and only the hits' are needed, converted in _candidate_episode.
_CANDIDATE_COLUMNS = (
    *(episodes_t.c[name] for name in ("pk", "input", "output", "id", "user_id", "session_id", "tool_calls", "metadata")),
    type_coerce(episodes_t.c.occurred_at, Integer).label("occurred_micros"),
)


# Every search reads its hits' rows by key: building the statement each time cost about 0.25 ms
# of a 100k vector search's ~3 ms beside the encoding (cProfile); built once per tenant, with the
# keys bound, it costs its execution only.
@lru_cache(maxsize=256)
def _episodes_by_key(tenant: Tenant) -> Select[Any]:
    return tenant.select_keys(episodes_t, episodes_t.c.pk, bindparam("keys", expanding=True))


# The other tiers' statements are built once per tenant too: building them was most of what a
# search of a tenant without facts, blocks or notes spent on those tiers (~0.7 ms a search).
@lru_cache(maxsize=256)
def _current_facts(tenant: Tenant) -> Select[Any]:
    return tenant.select(facts_t).where(facts_t.c.valid_until.is_(None))


@lru_cache(maxsize=256)
def _blocks_of(tenant: Tenant) -> Select[Any]:
    return tenant.select(blocks_t)


@lru_cache(maxsize=256)
def _notes_of(tenant: Tenant) -> Select[Any]:
    # Times stay raw microseconds until a note is a hit: converting 3,000 of them was a third
    # of a search over 3,000 notes.
    created = type_coerce(scratch_t.c.created_at, Integer)
    stmt = tenant.select(scratch_t, scratch_t.c.pk, scratch_t.c.content, created, sessions_t.c.session_id)
    return stmt.join(sessions_t, sessions_t.c.pk == scratch_t.c.session_pk)


@lru_cache(maxsize=256)
def _candidates_by_key(tenant: Tenant) -> Select[Any]:
    return _episodes_by_key(tenant).with_only_columns(*_CANDIDATE_COLUMNS)


def _candidate_episode(row: Row[Any]) -> Episode:
    micros = row.occurred_micros
    return episodes.to_model(SimpleNamespace(**row._asdict(), occurred_at=None if micros is None else from_micros(micros)))


def small_corpus(conn: Connection, tenant: Tenant, kind: str) -> dict[int, str]:
    """The searchable text of every block, scratchpad note or searchable session key of the tenant, by row key."""
    if kind == "block":
        return {r.pk: block_text(r) for r in conn.execute(tenant.select(blocks_t))}
    if kind == "key":
        stmt = tenant.select(kv_t, kv_t.c.pk, kv_t.c.search_text).where(kv_t.c.search_text.is_not(None))
        return {pk: text for pk, text in conn.execute(stmt)}
    return {r.pk: r.content for r in conn.execute(tenant.select(scratch_t))}


def block_text(row: Row[Any]) -> str:
    return f"{row.name}\n{row.content}"


def _scores(c: Ranked) -> ScoreBreakdown:
    return ScoreBreakdown(
        vector=c.vector,
        keyword=c.keyword,
        fused=c.fused,
        vector_rank=c.vector_rank,
        keyword_rank=c.keyword_rank,
        score=c.score,
        coverage=c.coverage,
        exact=c.exact,
        keyword_standout=c.keyword_standout,
        vector_standout=c.vector_standout,
    )


def merge(hit_lists: list[list[RecallHit]], limit: int) -> list[RecallHit]:
    """Results of several tiers, best score first: in hybrid and vector modes the score is
    comparable across tiers (see :mod:`store.recall.fusion`); keyword mode compares ranks."""
    merged = [hit for hits in hit_lists for hit in hits]
    return sorted(merged, key=lambda h: -h.scores.score)[:limit]


def recency(
    conn: Connection, tenant: Tenant, limit: int, session_id: str | None, since: datetime | None, until: datetime | None
) -> list[RecallHit]:
    page = episodes.page_episodes(conn, tenant, session_id=session_id, since=since, until=until, limit=limit, cursor=None)
    return [
        RecallHit(
            kind="episode",
            id=e.id,
            text=episodes.embed_text(e.input, e.output),
            session_id=e.session_id,
            occurred_at=e.occurred_at,
            episode=e,
            scores=ScoreBreakdown(),
        )
        for e in page.items
    ]
