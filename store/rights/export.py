"""Everything the store holds for a tenant, as records: one JSON document or streaming JSONL.

A record is a flat dict with ``type`` and ``user_id``. Each section's sha256 is taken over
its records' canonical JSON lines, so the JSON and JSONL forms of an export share digests.
The JSONL form ends with the manifest, since counts and digests are known only at the end.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import IO, Any

from sqlalchemy import Column, Connection, Select, func, or_, select

from .. import schema
from ..backend import Backend
from ..schema import (
    audit_t,
    block_versions_t,
    blocks_t,
    checkpoints_t,
    episodes_t,
    fact_changes_t,
    facts_t,
    kv_t,
    scratch_t,
    sessions_t,
    task_t,
    vectors_t,
)
from ..tenancy import Tenant
from ..tiers.registry import EXPORTED, SECTIONS
from ..validation import utcnow

FORMAT = "memlens-export"
FORMAT_VERSION = 1
_CHUNK = 2000


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _pages(conn: Connection, stmt: Select[Any], key: Column[Any]) -> Iterator[Any]:
    """Rows of ``stmt`` in key order, a chunk at a time, so huge tenants stream in constant memory."""
    last = None
    while True:
        page = stmt if last is None else stmt.where(key > last)
        rows = conn.execute(page.order_by(key).limit(_CHUNK)).all()
        yield from rows
        if len(rows) < _CHUNK:
            return
        last = rows[-1].pk


def _vectors(conn: Connection, tenant: Tenant, kind: str, pks: list[int]) -> dict[int, str]:
    rows = conn.execute(
        tenant.select(vectors_t, vectors_t.c.item_pk, vectors_t.c.vector).where(vectors_t.c.kind == kind, vectors_t.c.item_pk.in_(pks))
    )
    return {pk: base64.b64encode(vector).decode() for pk, vector in rows}


def tenant_records(
    conn: Connection, tenant: Tenant, *, embeddings: bool, now: datetime | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(section, record) pairs for everything one tenant owns, section by section. Key-value
    entries expired at ``now`` (default: the clock's now) are left out."""
    base = {"user_id": tenant.user_id}
    for r in conn.execute(tenant.select(blocks_t).order_by(blocks_t.c.pinned_order)):
        yield (
            "blocks",
            {
                **base,
                "type": "block",
                "name": r.name,
                "content": r.content,
                "pinned_order": r.pinned_order,
                "updated_at": iso(r.updated_at),
            },
        )
    v = block_versions_t
    for r in conn.execute(tenant.select(v).order_by(v.c.name, v.c.replaced_at, v.c.pk)):
        yield (
            "block_versions",
            {
                **base,
                "type": "block_version",
                "name": r.name,
                "content": r.content,
                "pinned_order": r.pinned_order,
                "written_at": iso(r.written_at),
                "replaced_at": iso(r.replaced_at),
                "replaced_by": r.replaced_by,
                "earlier_dropped": bool(r.earlier_dropped),
            },
        )
    batch: list[Any] = []

    def flush_episodes() -> Iterator[tuple[str, dict[str, Any]]]:
        vectors = _vectors(conn, tenant, "episode", [r.pk for r in batch]) if embeddings else {}
        for r in batch:
            record = {
                **base,
                "type": "episode",
                "id": r.id,
                "session_id": r.session_id,
                "occurred_at": iso(r.occurred_at),
                "input": r.input,
                "output": r.output,
                "tool_calls": json.loads(r.tool_calls),
                "metadata": json.loads(r.metadata),
            }
            if r.pk in vectors:
                record["embedding"] = vectors[r.pk]
            yield "episodes", record
        batch.clear()

    for row in _pages(conn, tenant.select(episodes_t), episodes_t.c.pk):
        batch.append(row)
        if len(batch) >= _CHUNK:
            yield from flush_episodes()
    yield from flush_episodes()
    facts = conn.execute(tenant.select(facts_t).order_by(facts_t.c.pk)).all()
    fact_vectors = _vectors(conn, tenant, "fact", [r.pk for r in facts]) if embeddings else {}
    for r in facts:
        record = {
            **base,
            "type": "fact",
            "id": r.id,
            "subject": r.subject,
            "predicate": r.predicate,
            "object": r.object,
            "confidence": r.confidence,
            "valid_from": iso(r.valid_from),
            "valid_until": iso(r.valid_until),
            "recorded_at": iso(r.recorded_at),
            "source_episode_ids": json.loads(r.source_episode_ids),
        }
        if r.pk in fact_vectors:
            record["embedding"] = fact_vectors[r.pk]
        yield "facts", record
    c = fact_changes_t
    for r in conn.execute(tenant.select(c).order_by(c.c.changed_at, c.c.pk)):
        change = {
            **base,
            "type": "fact_change",
            "fact_id": r.fact_id,
            "valid_until_before": iso(r.valid_until_before),
            "changed_at": iso(r.changed_at),
            "caused_by": r.caused_by,
        }
        yield "fact_changes", change
    sessions = conn.execute(tenant.select(sessions_t).order_by(sessions_t.c.session_id)).all()
    names = {s.pk: s.session_id for s in sessions}
    for s in sessions:
        yield (
            "sessions",
            {**base, "type": "session", "session_id": s.session_id, "created_at": iso(s.created_at), "updated_at": iso(s.updated_at)},
        )
    # An expired entry is gone for every reader, exports included, even before it is purged.
    now = utcnow() if now is None else now
    live = or_(kv_t.c.expires_at.is_(None), kv_t.c.expires_at > now)
    for r in conn.execute(tenant.select(kv_t).where(live).order_by(kv_t.c.session_pk, kv_t.c.key)):
        yield (
            "kv_entries",
            {
                **base,
                "type": "kv",
                "session_id": names[r.session_pk],
                "key": r.key,
                "value": json.loads(r.value),
                "expires_at": iso(r.expires_at),
                "updated_at": iso(r.updated_at),
            },
        )
    for r in conn.execute(tenant.select(task_t).order_by(task_t.c.session_pk)):
        yield (
            "task_states",
            {
                **base,
                "type": "task_state",
                "session_id": names[r.session_pk],
                "state": json.loads(r.state),
                "updated_at": iso(r.updated_at),
            },
        )
    for r in conn.execute(tenant.select(scratch_t).order_by(scratch_t.c.pk)):
        yield (
            "scratchpad",
            {**base, "type": "note", "session_id": names[r.session_pk], "created_at": iso(r.created_at), "content": r.content},
        )
    for r in conn.execute(tenant.select(checkpoints_t).order_by(checkpoints_t.c.created_at, checkpoints_t.c.pk)):
        yield (
            "checkpoints",
            {
                **base,
                "type": "checkpoint",
                "id": r.id,
                "session_id": names[r.session_pk],
                "description": r.description,
                "created_at": iso(r.created_at),
                "snapshot": json.loads(r.snapshot),
            },
        )
    for r in conn.execute(tenant.select(audit_t).order_by(audit_t.c.at, audit_t.c.pk)):
        yield (
            "audit",
            {
                **base,
                "type": "audit",
                "at": iso(r.at),
                "actor": r.actor,
                "action": r.action,
                "scope": json.loads(r.scope),
                "counts": json.loads(r.counts),
                "digest": r.digest,
                "origin": r.origin,
            },
        )


class Digests:
    """Counts and sha256 per section, fed one record at a time."""

    def __init__(self) -> None:
        self.counts = {s: 0 for s in SECTIONS}
        self._hashes = {s: hashlib.sha256() for s in SECTIONS}

    def add(self, section: str, line: str) -> None:
        self.counts[section] += 1
        self._hashes[section].update(line.encode("utf-8") + b"\n")

    def manifest(
        self,
        store_path: str,
        tenants: list[str | None],
        at: datetime,
        model: str | None,
        embeddings: bool,
        *,
        schema_version: int | None = None,
    ) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "exported_at": iso(at),
            "source_store": store_path,
            "schema_version": schema_version,
            "tenants": tenants,
            "embedding_model": model if embeddings else None,
            "includes_embeddings": embeddings,
            "counts": dict(self.counts),
            "sha256": {s: h.hexdigest() for s, h in self._hashes.items()},
        }


def count_records(conn: Connection, tenant: Tenant) -> int:
    """A cheap total for progress bars."""
    return sum(int(conn.execute(tenant.select(t, func.count())).scalar_one()) for t in (tier.table for tier in EXPORTED))


def write(
    backend: Backend,
    tenants: list[Tenant],
    sink: IO[str],
    *,
    fmt: str,
    embeddings: bool,
    at: datetime,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], dict[Tenant, dict[str, int]]]:
    """Write an export of ``tenants`` to the text stream ``sink``; returns the manifest and each
    tenant's own counts (what its audit entry records: the manifest's are the whole file's)."""
    digests = Digests()
    counts_of: dict[Tenant, dict[str, int]] = {}
    with backend.read() as conn:
        total = sum(count_records(conn, t) for t in tenants)
        done = 0
        if fmt == "json":
            sink.write('{"records":[\n')
        first = True
        for tenant in tenants:
            before = dict(digests.counts)
            for section, record in tenant_records(conn, tenant, embeddings=embeddings):
                line = canonical(record)
                digests.add(section, line)
                if fmt == "json":
                    sink.write(("" if first else ",\n") + line)
                else:
                    sink.write(line + "\n")
                first = False
                done += 1
                if progress and done % 500 == 0:
                    progress(done, total)
            counts_of[tenant] = {section: digests.counts[section] - before[section] for section in SECTIONS}
        model = schema_model(conn)
    manifest = digests.manifest(
        str(backend.path), [t.user_id for t in tenants], at, model, embeddings, schema_version=backend.schema_version
    )
    if fmt == "json":
        sink.write('\n],"manifest":' + canonical(manifest) + "}\n")
    else:
        sink.write(canonical({"type": "manifest", **manifest}) + "\n")
    if progress:
        progress(total, total)
    return manifest, counts_of


def schema_model(conn: Connection) -> str | None:
    row = conn.execute(select(schema.meta_t.c.value).where(schema.meta_t.c.key == "embedding_model")).first()
    return row[0] if row else None
