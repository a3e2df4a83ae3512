"""Moving a whole store to another (an SQLite file to PostgreSQL and back): every tenant and
tier, facts' full history, sessions with their expiry times, checkpoints, the audit log (erased
tenants' entries included: a DPO's record survives the move) and the vectors, copied as they
are when both sides embed with the same model.

**One transaction, verified before it commits.** The destination is written in a single write
transaction, and each tenant is read back from it inside that transaction and compared with
the source; a kill, a refused record or any difference rolls everything back, so the
destination is exactly as it was (a store created for the copy stays empty, and a rerun fills
it). The alternative, committing tenant by tenant and marking the store incomplete until a last
step, would only be safe if every opener (the inspector, agents, older memlens versions, psql)
honoured the mark; a transaction asks nothing of them. Its costs: the destination's writers
wait for the whole copy (the destination is normally new), and one tenant's records are held in
memory at a time.

**What is compared.** Per tenant and section (as in exports): the record count and an
order-independent digest, the sum modulo 2^256 of each canonical record's sha256, with the
vectors' bytes inside the records when they are copied. Row keys and storage order may differ
between engines; content may not. The source is read from one snapshot, and every record is
held to the import checks first: a store file changed outside memlens is as untrusted as an
import file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from ..backend import Backend, sql
from ..errors import (
    ImportValidationError,
    InvalidInputError,
    MigrationMismatchError,
    MigrationSourceError,
    MigrationTargetError,
    ModelMismatchError,
)
from ..glance import ANONYMOUS_LABEL
from ..models import MigrationReport
from ..recall.indexing import Indexer, recorded_model
from ..schema import audit_t, tenants_t, vectors_t
from ..tenancy import Tenant, in_groups, tenants_with_history
from ..tiers.common import content_hash
from ..tiers.importing import WRITTEN
from ..tiers.registry import AUDIT, SECTION_OF, SECTIONS, VECTOR_TEXT
from ..validation import utcnow
from . import import_write
from .export import Digests, canonical, tenant_records
from .import_check import Checked, check_embedding_dims, validate
from .import_write import Vectors

VECTOR_KINDS = tuple(VECTOR_TEXT)
# What reading a row that memlens never wrote raises (bad JSON text, a key into a missing session).
_UNREADABLE = (ValueError, KeyError, TypeError, RecursionError)


def label(backend: Backend) -> str:
    """Where a store lives, for messages and the audit log: never a URL's password."""
    text = str(backend.path)
    if "://" not in text:
        return text
    try:
        return make_url(text).render_as_string(hide_password=True)
    except ArgumentError:
        return text.split("://", 1)[0] + "://…"


def _who(tenant: Tenant) -> str:
    return "the anonymous bucket" if tenant.is_anonymous else f"tenant {tenant.key!r}"


class _Contents:
    """Per section: how many records and an order-independent digest of them."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(SECTIONS, 0)
        self._sums = dict.fromkeys(SECTIONS, 0)

    def add(self, section: str, record: dict[str, Any]) -> None:
        self.counts[section] += 1
        value = int.from_bytes(hashlib.sha256(canonical(record).encode("utf-8")).digest(), "big")
        self._sums[section] = (self._sums[section] + value) % (1 << 256)

    def differences(self, other: _Contents) -> dict[str, tuple[int, int]]:
        return {
            s: (self.counts[s], other.counts[s]) for s in SECTIONS if (self.counts[s], self._sums[s]) != (other.counts[s], other._sums[s])
        }


@dataclass
class _Plan:
    source: Backend
    destination: Backend
    indexer: Indexer
    copy_vectors: bool
    source_model: str | None
    source_dim: int | None
    actor: str
    at: datetime
    max_bytes: int


def _copies_vectors(source_model: str | None, indexer: Indexer, reembed: bool, source: Backend, destination: Backend) -> bool:
    """Whether the source's vectors are copied as they are; refuses a model change not asked for."""
    embedder = indexer.embedder
    if reembed:
        if embedder is None:
            raise InvalidInputError("reembed needs an embedding model: open the destination with one")
        return False
    if source_model is None:
        return False  # the source has no vectors; the destination embeds, if it has a model
    if embedder is not None and embedder.name == source_model:
        return True
    target = "no model (keyword recall only)" if embedder is None else repr(embedder.name)
    raise ModelMismatchError(
        f"{label(source)} holds vectors made with {source_model!r} and the destination {label(destination)} embeds with "
        f"{target}; nothing was copied. Open the destination with {source_model!r} to copy the vectors as they are, "
        "or ask for re-embedding (reembed=True, --reembed) to embed everything again with the destination's model"
    )


def _check_destination(conn: Connection, tenants: list[Tenant], into_existing: bool, destination: Backend) -> None:
    held = tenants_with_history(conn, tenants_t, audit_t)
    if not held:
        return

    def names(ts: list[Tenant]) -> str:
        shown = ", ".join(ANONYMOUS_LABEL if t.is_anonymous else repr(t.key) for t in ts[:5])
        return shown + (f" and {len(ts) - 5} more" if len(ts) > 5 else "")

    if not into_existing:
        raise MigrationTargetError(
            f"{label(destination)} already holds {len(held)} tenant(s) ({names(held)}); nothing was copied. Migrate into an "
            "empty store, or pass into_existing=True (--into-existing) to add the source's tenants beside these"
        )
    both = [t for t in tenants if t in set(held)]
    if both:
        raise MigrationTargetError(
            f"both stores hold {names(both)}; a migration never merges a tenant, so nothing was copied. Forget it on one "
            "side first, or move it with export and import (which keeps the newer state)"
        )


def _source_records(plan: _Plan, conn: Connection, tenant: Tenant) -> tuple[list[dict[str, Any]], _Contents, set[tuple[str, str]]]:
    """The tenant's records from the source, their contents, and the episodes and facts that
    have no vector there (the destination embeds those, so their vectors are not compared)."""
    records, contents, lacking = [], _Contents(), set()
    try:
        for section, record in tenant_records(conn, tenant, embeddings=plan.copy_vectors, now=plan.at):
            records.append(record)
            contents.add(section, record)
            if plan.copy_vectors and record["type"] in VECTOR_KINDS and "embedding" not in record:
                lacking.add((record["type"], record["id"]))
    except _UNREADABLE as error:
        raise MigrationSourceError(
            f"{_who(tenant)} of {label(plan.source)}: a record cannot be read ({type(error).__name__}: {error}); nothing was copied"
        ) from None
    return records, contents, lacking


def _checked(plan: _Plan, tenant: Tenant, records: list[dict[str, Any]]) -> Checked:
    digests = Digests()
    for record in records:
        digests.add(SECTION_OF[record["type"]], canonical(record))
    manifest = digests.manifest(label(plan.source), [tenant.user_id], plan.at, plan.source_model, plan.copy_vectors)
    try:
        checked = validate({"records": records, "manifest": manifest}, plan.max_bytes)
        if plan.copy_vectors:
            check_embedding_dims(checked, plan.source_dim or plan.indexer.model.dim)
    except (ImportValidationError, InvalidInputError) as error:
        raise MigrationSourceError(f"{_who(tenant)} of {label(plan.source)}: {error}; nothing was copied") from None
    return checked


def _vectors(plan: _Plan, conn: Connection, tenant: Tenant, checked: Checked) -> tuple[Vectors, int]:
    """The vectors to write, by (tenant, kind, id), and how many were embedded afresh."""
    if plan.copy_vectors:
        return {(tenant, r.type, r.id): r.embedding for _, r in checked.records if r.type in VECTOR_KINDS and r.embedding is not None}, 0
    if plan.indexer.embedder is None:
        return {}, 0
    vectors: Vectors = {}
    embedded = 0
    for kind in VECTOR_KINDS:
        todo = [r for _, r in checked.records if r.type == kind]
        texts = [VECTOR_TEXT[kind](r) for r in todo]
        hashes = [content_hash(t) for t in texts]
        vectors.update(
            ((tenant, kind, r.id), v) for r, v in zip(todo, plan.indexer.vectors_for(conn, tenant, kind, texts, hashes), strict=True)
        )
        embedded += len(set(hashes))
    return vectors, embedded


def _verify(plan: _Plan, conn: Connection, tenant: Tenant, expected: _Contents, lacking: set[tuple[str, str]]) -> None:
    # This migration's own entry is the tenant's newest (it was written last, in this transaction);
    # matched by digest and skipped once, since a copied entry may look the same (a frozen clock).
    own = conn.execute(
        tenant.select(audit_t, audit_t.c.digest).where(audit_t.c.action == "migrate").order_by(audit_t.c.pk.desc()).limit(1)
    ).scalar()
    held = _Contents()
    for section, record in tenant_records(conn, tenant, embeddings=plan.copy_vectors, now=plan.at):
        if record["type"] == "audit" and record["action"] == "migrate" and record["digest"] == own and record["origin"] == "local":
            own = None
            continue
        if (record["type"], record.get("id")) in lacking:
            record.pop("embedding", None)
        held.add(section, record)
    mismatches = {f"{tenant.key}/{s}": pair for s, pair in expected.differences(held).items()}
    if not plan.copy_vectors and plan.indexer.embedder is not None:
        items = held.counts["episodes"] + held.counts["facts"]
        stored: int = conn.execute(tenant.select(vectors_t, func.count()).where(vectors_t.c.kind.in_(VECTOR_KINDS))).scalar_one()
        if stored != items:
            mismatches[f"{tenant.key}/vectors"] = (items, stored)
    if mismatches:
        detail = "; ".join(f"{key}: {a} in the source, {b} in the destination (or different content)" for key, (a, b) in mismatches.items())
        raise MigrationMismatchError(
            f"after copying {_who(tenant)}, {label(plan.destination)} did not hold what {label(plan.source)} holds ({detail}); "
            "the copy was rolled back and the destination is as it was",
            mismatches=mismatches,
        )


def copy_tenant(plan: _Plan, source: Connection, destination: Connection, tenant: Tenant) -> tuple[dict[str, int], int]:
    records, expected, lacking = _source_records(plan, source, tenant)
    checked = _checked(plan, tenant, records)
    vectors, embedded = _vectors(plan, destination, tenant, checked)
    outcomes = import_write.apply(
        destination,
        plan.destination.path,
        plan.indexer,
        checked,
        vectors,
        actor=plan.actor,
        at=plan.at,
        as_user=False,
        max_bytes=plan.max_bytes,
        action="migrate",
        scope={"from": label(plan.source)},
    )
    # The tenant row keeps its own times (when the tenant started, when it was last active).
    row = source.execute(tenant.select(tenants_t)).first()
    if row is not None:
        times = {"created_at": row.created_at, "last_activity": row.last_activity}
        sql(destination).upsert(destination, tenants_t, tenant.stamp(times), tenant.key_columns(), times)
    _verify(plan, destination, tenant, expected, lacking)
    return outcomes[WRITTEN], embedded


def migrate(
    source: Backend,
    destination: Backend,
    indexer: Indexer,
    *,
    into_existing: bool = False,
    reembed: bool = False,
    actor: str = "api",
    max_bytes: int,
    progress: Callable[[int, int], None] | None = None,
) -> MigrationReport:
    """Copy every tenant of ``source`` into ``destination`` (whose indexer embeds), verified;
    see :meth:`store.memory.MemoryStore.migrate_from`."""
    at = utcnow()
    # One snapshot of the source for the whole copy, read a group of tenants per transaction: a
    # PostgreSQL source locks each tenant's partitions it reads until its transaction ends.
    with source.snapshot_reads() as source_read:
        with source_read() as source_conn:
            tenants = tenants_with_history(source_conn, tenants_t, audit_t)
            source_model, source_dim = recorded_model(source_conn)
        copy_vectors = _copies_vectors(source_model, indexer, reembed, source, destination)
        plan = _Plan(source, destination, indexer, copy_vectors, source_model, source_dim, actor, at, max_bytes)
        totals, embedded, history_only = dict.fromkeys(SECTIONS, 0), 0, []
        # Naming the tenants lets a PostgreSQL destination attach their partitions first (in
        # their own short transactions: empty partitions are all a kill can leave behind).
        # A store-wide write: the destination's emptiness check holds only while no one writes.
        with destination.write(*tenants, whole_store=True) as destination_conn:
            _check_destination(destination_conn, tenants, into_existing, destination)
            done = 0
            for group in in_groups(tenants, source.tenants_per_read):
                with source_read() as source_conn:
                    for tenant in group:
                        done += 1
                        counts, made = copy_tenant(plan, source_conn, destination_conn, tenant)
                        totals = {s: totals[s] + counts[s] for s in SECTIONS}
                        if not any(n for s, n in counts.items() if s != AUDIT.section):
                            history_only.append(tenant.user_id)  # erased: its audit entries alone
                        embedded += made
                        if progress:
                            progress(done, len(tenants))
    vectors = "copied" if copy_vectors else ("embedded" if indexer.embedder is not None else "none")
    return MigrationReport(
        source=label(source),
        destination=label(destination),
        tenants=[t.user_id for t in tenants],
        history_only=history_only,
        counts=totals,
        vectors=vectors,
        embedded=embedded,
        at=at,
    )
