"""Consolidation: a tenant's episodes turned into facts by the caller's extractor (an LLM call,
rules, anything), all or nothing, with the facts' vectors written in the same transaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import schema
from .backend import Backend
from .backend.shared import filtered
from .errors import InvalidInputError
from .models import Episode, Fact
from .recall.indexing import Indexer
from .tenancy import Tenant
from .tiers import episodes, facts
from .tiers.common import content_hash, touch_tenant
from .validation import check_text, utcnow


class Consolidation:
    """Consolidates one tenant at a time (see :meth:`store.memory.MemoryStore.consolidate`)."""

    def __init__(self, backend: Backend, indexer: Indexer, *, max_content_bytes: int):
        self._db = backend
        self._indexer = indexer
        self.max_content_bytes = max_content_bytes

    def run(self, extract: Callable[[Episode], Iterable[Any]], tenant: Tenant, session_id: str | None, limit: int) -> list[Fact]:
        """Show up to ``limit`` unconsolidated episodes to ``extract``, then store every fact and
        mark every episode shown in one transaction; the arguments are checked by the caller."""
        pending = self._unconsolidated(tenant, session_id, limit)
        if not pending:
            return []
        # The extractor may take seconds per episode (an LLM call): no transaction is open while it runs.
        flat = [(episode, item) for episode in pending for item in self._extracted(extract, episode)]
        texts = [facts.fact_text(subject, predicate, obj) for _, (subject, predicate, obj, _) in flat]
        digests = [content_hash(text) for text in texts]
        vectors = self._indexer.prepare(tenant, "fact", texts, digests)
        now = utcnow()
        e = schema.episodes_t
        ids = [episode.id for episode in pending]
        added: list[Fact] = []
        new_pks, new_digests, new_vectors = [], [], []
        with self._db.write(tenant) as conn:
            # Another process may have consolidated or erased some of them meanwhile: their facts
            # would be duplicates, or would cite an episode that no longer exists.
            still: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = e.c.id.in_(ids[start : start + 500])
                still.update(conn.execute(tenant.select(e, e.c.id).where(chunk, e.c.consolidated_at.is_(None))).scalars())
            touch_tenant(conn, tenant, now)
            for index, (episode, (subject, predicate, obj, confidence)) in enumerate(flat):
                if episode.id not in still:
                    continue
                fact, pk = facts.add_fact(
                    conn,
                    tenant,
                    subject=subject,
                    predicate=predicate,
                    object=obj,
                    confidence=confidence,
                    valid_from=episode.occurred_at,
                    recorded_at=now,
                    source_episode_ids=[episode.id],
                )
                added.append(fact)
                new_pks.append(pk)
                if vectors is not None:
                    new_digests.append(digests[index])
                    new_vectors.append(vectors[index])
            if new_pks:
                self._indexer.save(conn, tenant, "fact", new_pks, new_digests, None if vectors is None else new_vectors)
            marked = [i for i in ids if i in still]
            for start in range(0, len(marked), 500):
                conn.execute(tenant.update(e).where(e.c.id.in_(marked[start : start + 500])).values(consolidated_at=now))
        return added

    def _unconsolidated(self, tenant: Tenant, session_id: str | None, limit: int) -> list[Episode]:
        """Up to ``limit`` episodes never shown to an extractor, oldest first. Episodes a fact
        already cites are skipped too: consolidated before the store recorded consolidation
        (schema 4), or given as sources by hand."""
        e, f = schema.episodes_t, schema.facts_t
        with self._db.read() as conn:
            cited = {source for (sources,) in conn.execute(tenant.select(f, f.c.source_episode_ids)) for source in json.loads(sources)}
            stmt = filtered(tenant.select(e), session_id=session_id, since=None, until=None)
            stmt = stmt.where(e.c.consolidated_at.is_(None)).order_by(e.c.occurred_at, e.c.pk)
            found: list[Episode] = []
            for row in conn.execute(stmt).yield_per(500):
                if row.id not in cited:
                    found.append(episodes.to_model(row))
                    if len(found) == limit:
                        break
        return found

    def _extracted(self, extract: Callable[[Episode], Iterable[Any]], episode: Episode) -> list[tuple[str, str, str, float]]:
        """What ``extract`` made of one episode, every item checked before anything is written."""
        result = extract(episode)
        if result is None:
            return []
        if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
            raise InvalidInputError(f"extract returned a {type(result).__name__}; it must return or yield tuples")
        items = []
        for item in result:
            if not isinstance(item, (tuple, list)) or len(item) not in (3, 4):
                raise InvalidInputError("extract must yield (subject, predicate, object[, confidence]) tuples")
            subject, predicate, obj, *rest = item
            for value, field in ((subject, "subject"), (predicate, "predicate"), (obj, "object")):
                check_text(value, field, limit=self.max_content_bytes, allow_empty=False)
            confidence = rest[0] if rest else 1.0
            if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
                raise InvalidInputError("confidence must be a number from 0 to 1")
            items.append((subject, predicate, obj, float(confidence)))
        return items
