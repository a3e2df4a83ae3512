"""The recall service: search a tenant's memories, keep its vectors current, re-embed the store."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func

from .. import schema
from ..backend import Backend, ServerVectorIndex
from ..embedding import Embedder
from ..errors import InvalidInputError, UnsupportedByBackendError
from ..models import RecallHit, VectorIndexReport
from ..tenancy import Tenant, all_tenants, require_tenant
from ..tiers import episodes, facts
from ..tiers.common import content_hash
from ..validation import check_flag, check_int, check_name, check_optional_datetime, check_optional_name, check_text, utcnow
from . import hits
from .hits import Mode
from .indexing import Indexer, record_model
from .query import query_terms

RecallScope = Literal["episodic", "facts", "working", "scratchpad", "all"]
RECALL_SCOPES = ("episodic", "facts", "working", "scratchpad", "all")
# A key search ranks every searchable key it is given in memory (LangGraph asks for offset + limit).
MAX_KEY_HITS = 10_000


def _check_mode(mode: object) -> None:
    if mode not in ("hybrid", "keyword", "vector"):
        raise InvalidInputError("mode must be 'hybrid', 'keyword' or 'vector'")


class RecallService:
    """Recall over one backend with one indexer, for a tenant the façade has resolved."""

    def __init__(self, backend: Backend, indexer: Indexer):
        self._db = backend
        self._indexer = indexer

    def recall(
        self,
        query: str,
        tenant: Tenant,
        *,
        limit: int = 5,
        session_id: str | None = None,
        time_range: tuple[datetime | None, datetime | None] | None = None,
        kind: RecallScope = "episodic",
        mode: Mode = "hybrid",
        prefix: bool = False,
    ) -> list[RecallHit]:
        """Search the tenant's memories; every hit carries its score breakdown; see :meth:`store.memory.MemoryStore.recall`."""
        query = check_text(query, "query", limit=10_000)
        since, until = self._time_range(time_range)
        check_optional_name(session_id, "session_id")
        check_int(limit, "limit", minimum=1, maximum=1000)
        check_flag(prefix, "prefix")
        if kind not in RECALL_SCOPES:
            raise InvalidInputError(f"kind must be one of {', '.join(RECALL_SCOPES)}")
        _check_mode(mode)
        if query_terms(query) and mode != "keyword" and self._indexer.enabled:
            # Blocks and notes are embedded on first search (and after edits); do it before the
            # read snapshot below is taken, so the search sees the vectors.
            for small, scopes in (("block", ("working", "all")), ("scratchpad", ("scratchpad", "all"))):
                if kind in scopes:
                    self.ensure_vectors(tenant, small)
        with self._db.read() as conn:
            if not query_terms(query):
                return hits.recency(conn, tenant, limit, session_id, since, until) if kind in ("episodic", "all") else []
            run = hits.Recall(self._indexer, self._db.keyword, conn, tenant, query, mode, prefix)
            lists, rank_later = [], []
            if kind in ("episodic", "all"):
                lists.append(run.episodes(limit, session_id, since, until))
            if kind in ("facts", "all"):
                lists.append(run.facts(limit, None))
            if kind in ("working", "all"):
                rank_later.append(run.blocks(limit))
            if kind in ("scratchpad", "all"):
                rank_later.append(run.scratchpad(limit, session_id))
        # Out of the read transaction: blocks and notes are ranked in memory (see Recall.blocks).
        lists += [rank() for rank in rank_later]
        return hits.merge(lists, limit)

    def recall_facts(
        self, query: str, tenant: Tenant, *, limit: int = 5, valid_at: datetime | None = None, mode: Mode = "hybrid"
    ) -> list[RecallHit]:
        """Search the facts believed at ``valid_at`` (default: the current ones)."""
        query = check_text(query, "query", limit=10_000)
        valid_at = check_optional_datetime(valid_at, "valid_at")
        check_int(limit, "limit", minimum=1, maximum=1000)
        _check_mode(mode)
        with self._db.read() as conn:
            if not query_terms(query):
                return []
            return hits.Recall(self._indexer, self._db.keyword, conn, tenant, query, mode, False).facts(limit, valid_at)

    def search_keys(
        self, query: str, tenant: Tenant, *, among: Iterable[tuple[str, str]] | None = None, limit: int = 10, mode: Mode = "hybrid"
    ) -> list[RecallHit]:
        """The tenant's live session keys that have a search text, best match first; see
        :meth:`store.memory.MemoryStore.search_keys`."""
        query = check_text(query, "query", limit=10_000)
        check_int(limit, "limit", minimum=1, maximum=MAX_KEY_HITS)
        _check_mode(mode)
        wanted = None
        if among is not None:
            wanted = set()
            for pair in among:
                if not isinstance(pair, tuple) or len(pair) != 2:
                    raise InvalidInputError("among must hold (session_id, key) pairs")
                wanted.add((check_name(pair[0], "session_id"), check_name(pair[1], "key")))
        if not query_terms(query):
            return []
        if mode != "keyword" and self._indexer.enabled:
            self.ensure_vectors(tenant, "key")
        with self._db.read() as conn:
            rank = hits.Recall(self._indexer, self._db.keyword, conn, tenant, query, mode, False).keys(limit, wanted, utcnow())
        return rank()

    @staticmethod
    def _time_range(time_range: Any) -> tuple[datetime | None, datetime | None]:
        if time_range is None:
            return None, None
        if not isinstance(time_range, (tuple, list)) or len(time_range) != 2:
            raise InvalidInputError("time_range must be a (since, until) pair; either may be None")
        return check_optional_datetime(time_range[0], "time_range[0]"), check_optional_datetime(time_range[1], "time_range[1]")

    def ensure_vectors(self, tenant: Tenant, kind: str) -> None:
        """Embed the tenant's blocks or notes whose vector is missing or stale (text changed since)."""
        version = self._db.data_version()
        checked = self._indexer.cache.checked
        if checked.get((tenant.key, kind)) == version:
            return  # nothing was committed since the last check: search as you type skips it
        with self._db.read() as conn:
            self._indexer.cache.notice_erasures(conn)
            documents = hits.small_corpus(conn, tenant, kind)
            hashes = {pk: content_hash(text) for pk, text in documents.items()}
            have: dict[int, str] = dict(
                conn.execute(
                    tenant.select(schema.vectors_t, schema.vectors_t.c.item_pk, schema.vectors_t.c.content_hash).where(
                        schema.vectors_t.c.kind == kind, schema.vectors_t.c.item_pk.in_(list(documents))
                    )
                ).all()
            )
        stale = [pk for pk in documents if have.get(pk) != hashes[pk]]
        if not stale or self._db.read_only:
            # Versions are read before the check: a commit that lands meanwhile forces a new one.
            checked[(tenant.key, kind)] = version
            return
        vectors = self._indexer.prepare(tenant, kind, [documents[pk] for pk in stale], [hashes[pk] for pk in stale])
        with self._db.write(tenant) as conn:
            self._indexer.save(conn, tenant, kind, stale, [hashes[pk] for pk in stale], vectors)
        checked[(tenant.key, kind)] = self._db.data_version()

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model (None: keyword recall only)."""
        return self._indexer.embedder

    @property
    def model_ready(self) -> bool:
        """True once the embedding model is loaded: semantic recall costs milliseconds from then on."""
        return self._indexer.enabled and self._indexer.model.is_warm

    def warm_model(self) -> None:
        """Load the embedding model now (blocking); call it from a worker thread to warm in the background."""
        if self._indexer.enabled:
            self._indexer.model.warm()

    def warm_vectors(self, tenant: Tenant) -> int:
        """Load the tenant's episode vectors into memory now, so its first search does not wait; see :meth:`store.memory.MemoryStore.warm_vectors`."""
        if not self._indexer.enabled:
            return 0
        with self._db.read() as conn:
            if hits.server_index_of(self._db, conn, tenant) is not None:
                return 0  # the server searches them
            pks, _ = self._indexer.cache.get(conn, tenant, "episode", self._indexer.model.dim)
        return len(pks)

    def build_vector_index(self, tenant: Tenant, *, sample: int = 100) -> VectorIndexReport:
        """Build the tenant's server-side vector index and measure it; see :meth:`store.memory.MemoryStore.build_vector_index`."""
        check_int(sample, "sample", minimum=1, maximum=10_000)
        index = self._server_index()
        started = time.perf_counter()
        with self._db.read() as conn:
            require_tenant(conn, tenant)
        index.build(tenant)
        with self._db.read() as conn:
            vectors = conn.execute(tenant.select(schema.vectors_t, func.count()).where(schema.vectors_t.c.kind == "episode")).scalar_one()
            recall, queries = index.sampled_recall(conn, tenant, "episode", sample)
        return VectorIndexReport(
            user_id=tenant.user_id, vectors=vectors, recall_at_10=recall, queries=queries, seconds=time.perf_counter() - started
        )

    def drop_vector_index(self, tenant: Tenant) -> bool:
        """Drop the tenant's server-side vector index; see :meth:`store.memory.MemoryStore.drop_vector_index`."""
        index = self._server_index()
        with self._db.read() as conn:
            require_tenant(conn, tenant)
            had = index.has_index(conn, tenant)
        index.drop(tenant)
        return had

    def _server_index(self) -> ServerVectorIndex:
        if self._db.vector_index is None:
            raise UnsupportedByBackendError(
                f"{self._db.path}: server-side vector indexes need PostgreSQL; this store's tenants of 20,000 vectors "
                "or more get an in-memory approximate index by themselves. Nothing was changed"
            )
        if not self._indexer.enabled:
            raise InvalidInputError("this store was opened with embedder=None; its searches use no vectors to index")
        return self._db.vector_index

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every episode and fact of every tenant with the current model; see :meth:`store.memory.MemoryStore.reembed`."""
        if not self._indexer.enabled:
            raise InvalidInputError("this store was opened with embedder=None; there is nothing to re-embed with")
        e, f, v = schema.episodes_t, schema.facts_t, schema.vectors_t
        items: list[tuple[str, int, Tenant, str]] = []
        with self._db.read() as conn:
            for tenant in all_tenants(conn, schema.tenants_t):
                items += [
                    ("episode", r.pk, tenant, episodes.embed_text(r.input, r.output))
                    for r in conn.execute(tenant.select(e, e.c.pk, e.c.input, e.c.output))
                ]
                items += [("fact", r.pk, tenant, facts.fact_text(r.subject, r.predicate, r.object)) for r in conn.execute(tenant.select(f))]
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress(done, len(items))

        if progress:
            progress(0, len(items))
        vectors = self._indexer.embed([text for *_, text in items], advance)
        with self._db.write() as conn:
            conn.execute(v.delete())
            record_model(conn, self._indexer.model)
            for (kind, pk, tenant, text), vector in zip(items, vectors, strict=True):
                self._indexer.insert(conn, tenant, kind, [pk], [content_hash(text)], [vector])
        self._indexer.cache.clear()
        return len(items)
