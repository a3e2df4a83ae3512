"""Writing a checked import file (see :mod:`store.rights.import_check`) in one transaction: each
tier's module writes its records (:mod:`store.tiers.importing` says what it is offered and the
rules for ids and newer state); here the vectors are prepared beforehand and saved with the rows,
the audit log's records are written, and each tenant gets its entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from ..backend import Backend
from ..errors import ImportMismatchError, InvalidInputError
from ..recall import indexing
from ..recall.indexing import Indexer
from ..schema import audit_t
from ..tenancy import Tenant
from ..tiers.common import content_hash, ids_present, touch_tenant
from ..tiers.importing import KEPT, UNCHANGED, WRITTEN, Importing
from ..tiers.registry import AUDIT, IMPORT_ORDER, SECTION_OF, SECTIONS, TABLE_OF, VECTOR_TEXT
from ..validation import check_int
from . import audit
from .import_check import Checked, check_embedding_dims


def _text_of(r: Any) -> str:
    return VECTOR_TEXT[r.type](r)


# The vectors an import writes, by (tenant, kind, record id): float32 bytes.
Vectors = dict[tuple[Tenant, str, str], bytes]


def vectors_needed(backend: Backend, indexer: Indexer, checked: Checked) -> tuple[Vectors, int]:
    """Vectors for the records the import will add whose vectors travel with them (episodes and facts), and how many were embedded
    afresh. Records the tenant already has need none; the file's own vectors are used when they
    come from the store's model (and have its dimension); content the tenant already has a
    vector for reuses it. Runs outside the write transaction, so embedding never holds the lock."""
    embedder = indexer.embedder
    if embedder is None:
        return {}, 0
    manifest = checked.manifest
    same_model = bool(manifest.get("includes_embeddings")) and manifest.get("embedding_model") == embedder.name
    if same_model:
        check_embedding_dims(checked, embedder.dim)
    wanted: dict[tuple[Tenant, str], list[Any]] = {}
    for _, r in checked.records:
        if r.type in VECTOR_TEXT:
            wanted.setdefault((checked.target(r), r.type), []).append(r)
    out: dict[tuple[Tenant, str, str], bytes] = {}
    embedded = 0
    with backend.read() as conn:
        indexing.check_model(conn, embedder, backend.path)
        for (tenant, kind), records in wanted.items():
            present = ids_present(conn, tenant, TABLE_OF[kind], [r.id for r in records])
            new = [r for r in records if r.id not in present]
            todo = []
            for r in new:
                if same_model and r.embedding is not None:
                    out[(tenant, kind, r.id)] = r.embedding
                else:
                    todo.append(r)
            hashes = {content_hash(_text_of(r)): r for r in todo}
            known = Indexer.known_vectors(conn, tenant, kind, set(hashes))
            missing = [h for h in hashes if h not in known]
            known.update(zip(missing, indexer.embed([_text_of(hashes[h]) for h in missing]), strict=True))
            embedded += len(missing)
            out.update(((tenant, kind, r.id), known[content_hash(_text_of(r))]) for r in todo)
    return out, embedded


class Writer:
    """An import's records written tier by tier (each tier's module writes its own, in the
    registry's import order), a tenant's at a time, counting what became of each."""

    def __init__(
        self,
        conn: Connection,
        indexer: Indexer,
        checked: Checked,
        vectors: Vectors,
        at: datetime,
        max_bytes: int,
        keep_origin: bool = False,
    ):
        self.conn, self.indexer, self.checked, self.vectors, self.at = conn, indexer, checked, vectors, at
        self.keep_origin = keep_origin
        self.importing = Importing(conn, at, max_bytes, self.save_vectors)
        self.outcomes = {key: {s: 0 for s in SECTIONS} for key in (WRITTEN, UNCHANGED, KEPT)}
        self.per_tenant: dict[Tenant, dict[str, int]] = {}
        self.records_of: dict[Tenant, int] = {}

    def run(self) -> None:
        grouped: dict[str, dict[Tenant, list[Any]]] = {}
        for _, r in self.checked.records:
            grouped.setdefault(r.type, {}).setdefault(self.checked.target(r), []).append(r)
        for tier in (*IMPORT_ORDER, AUDIT):
            for tenant, batch in grouped.get(tier.record_type, {}).items():
                outcomes = (
                    [self._write_audit(tenant, r) for r in batch] if tier.write is None else tier.write(self.importing, tenant, batch)
                )
                for r, outcome in zip(batch, outcomes, strict=True):
                    self._count(r, outcome)

    def _count(self, r: Any, outcome: str) -> None:
        tenant, section = self.checked.target(r), SECTION_OF[r.type]
        self.records_of[tenant] = self.records_of.get(tenant, 0) + 1
        self.outcomes[outcome][section] += 1
        if outcome == WRITTEN:
            self.per_tenant.setdefault(tenant, {s: 0 for s in SECTIONS})[section] += 1

    def save_vectors(self, tenant: Tenant, kind: str, pks: Sequence[int], ids: Sequence[str], texts: Sequence[str]) -> None:
        """The vectors prepared for the rows inserted (:func:`vectors_needed`), saved with them."""
        if self.indexer.embedder is None:
            return
        vectors: list[bytes | None] = [self.vectors.get((tenant, kind, record_id)) for record_id in ids]
        missing = [i for i, v in enumerate(vectors) if v is None]
        # An id present when vectors were prepared and erased since by another process:
        # embed those here rather than leave them unsearchable.
        for i, vector in zip(missing, self.indexer.embed([texts[i] for i in missing]), strict=True):
            vectors[i] = vector
        self.indexer.save(self.conn, tenant, kind, list(pks), [content_hash(t) for t in texts], [v for v in vectors if v is not None])

    def _write_audit(self, tenant: Tenant, r: Any) -> str:
        same = tenant.select(audit_t, audit_t.c.pk).where(audit_t.c.digest == r.digest, audit_t.c.action == r.action)
        if self.conn.execute(same).first():
            return UNCHANGED
        audit.record_imported(
            self.conn,
            tenant,
            action=r.action,
            actor=r.actor,
            scope=r.scope,
            counts=r.counts,
            at=r.at,
            digest=r.digest,
            origin=r.origin if self.keep_origin else "imported",
        )
        return WRITTEN


def apply(
    conn: Connection,
    store_path: Path | str,
    indexer: Indexer,
    checked: Checked,
    vectors: Vectors,
    *,
    actor: str,
    at: datetime,
    as_user: bool,
    max_bytes: int,
    action: str = "import",
    scope: dict[str, Any] | None = None,
) -> dict[str, dict[str, int]]:
    """Write the checked records; returns per outcome (written, unchanged, kept_existing) the
    count per section. Each target tenant gets one local audit entry for the ``action`` (with
    ``scope`` added to its scope). A migration (``action="migrate"``) moves the store itself, so
    its audit entries keep the origin they had there (a local erasure stays a local erasure);
    an import's are imported history."""
    indexing.check_model(conn, indexer.embedder, store_path)
    writer = Writer(conn, indexer, checked, vectors, at, max_bytes, keep_origin=action == "migrate")
    writer.run()
    source_of = {tenant: user_id for user_id, tenant in checked.targets.items()}
    for tenant in checked.targets.values():
        written = writer.per_tenant.get(tenant, {s: 0 for s in SECTIONS})
        if any(v for k, v in written.items() if k != "audit"):
            touch_tenant(conn, tenant, at)
        entry: dict[str, Any] = {"records": writer.records_of.get(tenant, 0), **(scope or {})}
        if as_user:
            entry["from_user"] = source_of[tenant]
        audit.record(conn, tenant, action=action, actor=actor, scope=entry, counts=written, at=at)
    return writer.outcomes


def check_expected(expect_counts: Any) -> dict[str, int] | None:
    """``expect_counts`` as given to ``import_``: section names to counts, checked before any write."""
    if expect_counts is None:
        return None
    if not isinstance(expect_counts, Mapping):
        raise InvalidInputError("expect_counts must map section names (episodes, facts, blocks, ...) to counts")
    for section, count in expect_counts.items():
        if section not in SECTIONS:
            raise InvalidInputError(f"expect_counts names {section!r}, which is not a section; sections are {', '.join(SECTIONS)}")
        check_int(count, f"expect_counts[{section!r}]", minimum=0)
    return dict(expect_counts)


def require_held(outcomes: dict[str, dict[str, int]], expected: dict[str, int] | None) -> None:
    """Each expected section's records are all held as the file has them (written now, or
    already held unchanged); anything else raises, inside the caller's transaction."""
    if expected is None:
        return
    held = {s: outcomes[WRITTEN][s] + outcomes[UNCHANGED][s] for s in expected}
    short = {s: (n, held[s]) for s, n in expected.items() if held[s] != n}
    if short:
        detail = "; ".join(
            f"{s}: {n} expected, {h} held as given"
            + (
                f" ({outcomes[KEPT][s]} kept as the store has them, newer or different under the same id or name)"
                if outcomes[KEPT][s]
                else ""
            )
            for s, (n, h) in short.items()
        )
        raise ImportMismatchError(f"the import would not hold every record ({detail}); nothing was imported", mismatches=short)
