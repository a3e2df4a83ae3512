"""Writing a checked import file (see :mod:`store.rights.import_check`) in one transaction.

Ids are unique per tenant: an id already present in the target tenant is that record, kept as
it is; the same id in another tenant is someone else's record and no concern of this import.
Blocks, key-value entries and task states are mutable, so the newer ``updated_at`` wins and a
tie keeps what the store holds: re-importing an older export never overwrites newer state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Table, func

from ..backend import Backend, sql
from ..errors import ImportMismatchError, InvalidInputError
from ..recall import indexing
from ..recall.indexing import Indexer
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
)
from ..tenancy import Tenant
from ..tiers.common import content_hash, ensure_session, ids_present, touch_tenant
from ..tiers.episodes import embed_text
from ..tiers.facts import fact_text
from ..tiers.registry import SECTION_OF, SECTIONS
from ..validation import check_int, check_json
from . import audit
from .import_check import Checked, check_embedding_dims

WRITTEN, UNCHANGED, KEPT = "written", "unchanged", "kept_existing"


def _text_of(r: Any) -> str:
    return embed_text(r.input, r.output) if r.type == "episode" else fact_text(r.subject, r.predicate, r.object)


def rows_by_id(conn: Connection, tenant: Tenant, table: Table, ids: list[str]) -> dict[str, Any]:
    """This tenant's rows of ``table`` with these ids, by id."""
    found: dict[str, Any] = {}
    for start in range(0, len(ids), 500):  # SQLite caps bound parameters per statement
        found.update((row.id, row) for row in conn.execute(tenant.select(table).where(table.c.id.in_(ids[start : start + 500]))))
    return found


# The vectors an import writes, by (tenant, kind, record id): float32 bytes.
Vectors = dict[tuple[Tenant, str, str], bytes]


def vectors_needed(backend: Backend, indexer: Indexer, checked: Checked) -> tuple[Vectors, int]:
    """Vectors for the episodes and facts the import will add, and how many were embedded
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
        if r.type in ("episode", "fact"):
            wanted.setdefault((checked.target(r), r.type), []).append(r)
    out: dict[tuple[Tenant, str, str], bytes] = {}
    embedded = 0
    with backend.read() as conn:
        indexing.check_model(conn, embedder, backend.path)
        for (tenant, kind), records in wanted.items():
            present = ids_present(conn, tenant, episodes_t if kind == "episode" else facts_t, [r.id for r in records])
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
        self.max_bytes = max_bytes
        self.keep_origin = keep_origin
        self.outcomes = {key: {s: 0 for s in SECTIONS} for key in (WRITTEN, UNCHANGED, KEPT)}
        self.per_tenant: dict[Tenant, dict[str, int]] = {}
        self.records_of: dict[Tenant, int] = {}
        self.session_pks: dict[tuple[Tenant, str], int] = {}

    def run(self) -> None:
        # Sessions first, so a session's own times are in place before its other records touch
        # it; then episodes and facts a tenant at a time, in bulk (a few statements per episode
        # took 238 s for 100k here, in bulk 32 s, both on a busy machine); the rest one by one.
        records = [r for _, r in self.checked.records]
        for r in records:
            if r.type == "session":
                self._count(r, self.write_session(self.checked.target(r), r))
        for kind in ("episode", "fact"):
            by_tenant: dict[Tenant, list[Any]] = {}
            for r in records:
                if r.type == kind:
                    by_tenant.setdefault(self.checked.target(r), []).append(r)
            for tenant, batch in by_tenant.items():
                for r, outcome in zip(batch, self.write_bulk(tenant, kind, batch), strict=True):
                    self._count(r, outcome)
        for r in records:
            if r.type not in ("session", "episode", "fact"):
                self._count(r, getattr(self, f"write_{r.type}")(self.checked.target(r), r))

    def _count(self, r: Any, outcome: str) -> None:
        tenant, section = self.checked.target(r), SECTION_OF[r.type]
        self.records_of[tenant] = self.records_of.get(tenant, 0) + 1
        self.outcomes[outcome][section] += 1
        if outcome == WRITTEN:
            self.per_tenant.setdefault(tenant, {s: 0 for s in SECTIONS})[section] += 1

    def _session_pk(self, tenant: Tenant, session_id: str) -> int:
        key = (tenant, session_id)
        if key not in self.session_pks:
            self.session_pks[key] = ensure_session(self.conn, tenant, session_id, self.at, touch=False)
        return self.session_pks[key]

    def _newer(self, r: Any, row: Any, same: bool) -> str:
        if same:
            return UNCHANGED
        return WRITTEN if r.updated_at > row.updated_at else KEPT

    def write_block(self, tenant: Tenant, r: Any) -> str:
        row = self.conn.execute(tenant.select(blocks_t).where(blocks_t.c.name == r.name)).first()
        if row is None:
            taken = self.conn.execute(tenant.select(blocks_t, blocks_t.c.pk).where(blocks_t.c.pinned_order == r.pinned_order)).first()
            order = r.pinned_order
            if taken:  # the slot is another block's here: go last, as a new block does in the API
                order = (self.conn.execute(tenant.select(blocks_t, func.max(blocks_t.c.pinned_order))).scalar() or 0) + 1
            values = {"name": r.name, "content": r.content, "pinned_order": order, "updated_at": r.updated_at}
            self.conn.execute(blocks_t.insert().values(tenant.stamp(values)))
            return WRITTEN
        outcome = self._newer(r, row, row.content == r.content)
        if outcome == WRITTEN:
            self.conn.execute(tenant.update(blocks_t).where(blocks_t.c.pk == row.pk).values(content=r.content, updated_at=r.updated_at))
        return outcome

    def write_block_version(self, tenant: Tenant, r: Any) -> str:
        """A version is the same version when it held the same block from the same moment to the
        same moment; importing a file twice adds nothing."""
        v = block_versions_t
        same = tenant.select(v).where(v.c.name == r.name, v.c.written_at == r.written_at, v.c.replaced_at == r.replaced_at)
        row = self.conn.execute(same).first()
        if row is not None:
            return UNCHANGED if (row.content, row.replaced_by) == (r.content, r.replaced_by) else KEPT
        values = {
            "name": r.name,
            "content": r.content,
            "pinned_order": r.pinned_order,
            "written_at": r.written_at,
            "replaced_at": r.replaced_at,
            "replaced_by": r.replaced_by,
            "earlier_dropped": int(r.earlier_dropped),
        }
        self.conn.execute(v.insert().values(tenant.stamp(values)))
        return WRITTEN

    def write_fact_change(self, tenant: Tenant, r: Any) -> str:
        """The same change is the same fact changed at the same moment; importing twice adds nothing."""
        c = fact_changes_t
        same = tenant.select(c).where(c.c.fact_id == r.fact_id, c.c.changed_at == r.changed_at)
        row = self.conn.execute(same).first()
        if row is not None:
            return UNCHANGED if (row.valid_until_before, row.caused_by) == (r.valid_until_before, r.caused_by) else KEPT
        values = {"fact_id": r.fact_id, "valid_until_before": r.valid_until_before, "changed_at": r.changed_at, "caused_by": r.caused_by}
        self.conn.execute(c.insert().values(tenant.stamp(values)))
        return WRITTEN

    def write_bulk(self, tenant: Tenant, kind: str, batch: list[Any]) -> list[str]:
        """Outcomes for a tenant's episodes (or facts) in file order; new ones inserted in bulk."""
        table = episodes_t if kind == "episode" else facts_t
        existing = rows_by_id(self.conn, tenant, table, [r.id for r in batch])
        rows, texts, outcomes = [], [], []
        for r in batch:
            values = self._episode_values(r) if kind == "episode" else self._fact_values(r)
            row = existing.get(r.id)
            if row is None:
                if kind == "episode" and r.session_id:
                    self._session_pk(tenant, r.session_id)
                rows.append(values)
                texts.append(_text_of(r))
                outcomes.append(WRITTEN)
            elif kind == "episode":
                same = all(getattr(row, k) == v for k, v in values.items() if k != "content_hash")
                outcomes.append(UNCHANGED if same else KEPT)
            else:
                outcomes.append(self._existing_fact(tenant, row, values))
        if rows:
            pks = sql(self.conn).insert_keyed(self.conn, table, [tenant.stamp(row) for row in rows])
            if self.indexer.embedder is not None:
                vectors: list[bytes | None] = [self.vectors.get((tenant, kind, row["id"])) for row in rows]
                missing = [i for i, v in enumerate(vectors) if v is None]
                # An id present when vectors were prepared and erased since by another process:
                # embed those here rather than leave them unsearchable.
                for i, vector in zip(missing, self.indexer.embed([texts[i] for i in missing]), strict=True):
                    vectors[i] = vector
                self.indexer.save(self.conn, tenant, kind, pks, [content_hash(t) for t in texts], [v for v in vectors if v is not None])
        return outcomes

    def _episode_values(self, r: Any) -> dict[str, Any]:
        limit = self.max_bytes
        return {
            "id": r.id,
            "session_id": r.session_id,
            "occurred_at": r.occurred_at,
            "input": r.input,
            "output": r.output,
            "tool_calls": check_json(r.tool_calls, "tool_calls", limit=limit),
            "metadata": check_json(r.metadata, "metadata", limit=limit),
            "content_hash": content_hash(embed_text(r.input, r.output)),
        }

    @staticmethod
    def _fact_values(r: Any) -> dict[str, Any]:
        return {
            "id": r.id,
            "subject": r.subject,
            "predicate": r.predicate,
            "object": r.object,
            "confidence": r.confidence,
            "valid_from": r.valid_from,
            "valid_until": r.valid_until,
            "recorded_at": r.recorded_at,
            "source_episode_ids": json.dumps(r.source_episode_ids),
        }

    def _existing_fact(self, tenant: Tenant, row: Any, values: dict[str, Any]) -> str:
        if any(getattr(row, k) != v for k, v in values.items() if k != "valid_until"):
            return KEPT
        if row.valid_until == values["valid_until"]:
            return UNCHANGED
        if row.valid_until is None:  # superseded since: a fact only ever closes, so the closed one is newer
            self.conn.execute(tenant.update(facts_t).where(facts_t.c.pk == row.pk).values(valid_until=values["valid_until"]))
            return WRITTEN
        return KEPT

    def write_session(self, tenant: Tenant, r: Any) -> str:
        stmt = tenant.select(sessions_t).where(sessions_t.c.session_id == r.session_id)
        row = self.conn.execute(stmt).first()
        if row is None:
            values = {"session_id": r.session_id, "created_at": r.created_at, "updated_at": r.updated_at}
            self.conn.execute(sessions_t.insert().values(tenant.stamp(values)))
            return WRITTEN
        created, updated = min(row.created_at, r.created_at), max(row.updated_at, r.updated_at)
        if (created, updated) == (row.created_at, row.updated_at):
            return UNCHANGED
        self.conn.execute(tenant.update(sessions_t).where(sessions_t.c.pk == row.pk).values(created_at=created, updated_at=updated))
        return WRITTEN

    def write_kv(self, tenant: Tenant, r: Any) -> str:
        session_pk = self._session_pk(tenant, r.session_id)
        values = {"value": check_json(r.value, "value", limit=self.max_bytes), "expires_at": r.expires_at, "updated_at": r.updated_at}
        row = self.conn.execute(tenant.select(kv_t).where(kv_t.c.session_pk == session_pk, kv_t.c.key == r.key)).first()
        if row is None:
            self.conn.execute(kv_t.insert().values(tenant.stamp({"session_pk": session_pk, "key": r.key, **values})))
            return WRITTEN
        outcome = self._newer(r, row, (row.value, row.expires_at) == (values["value"], values["expires_at"]))
        if outcome == WRITTEN:
            self.conn.execute(tenant.update(kv_t).where(kv_t.c.pk == row.pk).values(**values))
        return outcome

    def write_task_state(self, tenant: Tenant, r: Any) -> str:
        session_pk = self._session_pk(tenant, r.session_id)
        state = r.state.model_dump_json()  # as set_task_state stores it
        row = self.conn.execute(tenant.select(task_t).where(task_t.c.session_pk == session_pk)).first()
        if row is not None:
            outcome = self._newer(r, row, row.state == state)
            if outcome != WRITTEN:
                return outcome
            self.conn.execute(tenant.delete(task_t).where(task_t.c.session_pk == session_pk))
        self.conn.execute(task_t.insert().values(tenant.stamp({"session_pk": session_pk, "state": state, "updated_at": r.updated_at})))
        return WRITTEN

    def write_note(self, tenant: Tenant, r: Any) -> str:
        session_pk = self._session_pk(tenant, r.session_id)
        same = tenant.select(scratch_t, scratch_t.c.pk).where(
            scratch_t.c.session_pk == session_pk, scratch_t.c.created_at == r.created_at, scratch_t.c.content == r.content
        )
        if self.conn.execute(same).first():
            return UNCHANGED
        self.conn.execute(
            scratch_t.insert().values(tenant.stamp({"session_pk": session_pk, "created_at": r.created_at, "content": r.content}))
        )
        return WRITTEN

    def write_checkpoint(self, tenant: Tenant, r: Any) -> str:
        row = self.conn.execute(tenant.select(checkpoints_t).where(checkpoints_t.c.id == r.id)).first()
        if row is not None:
            same = (row.description, row.created_at, json.loads(row.snapshot)) == (r.description, r.created_at, r.snapshot)
            return UNCHANGED if same else KEPT
        values = {
            "id": r.id,
            "session_pk": self._session_pk(tenant, r.session_id),
            "description": r.description,
            "created_at": r.created_at,
            "snapshot": json.dumps(r.snapshot, ensure_ascii=False),
        }
        self.conn.execute(checkpoints_t.insert().values(tenant.stamp(values)))
        return WRITTEN

    def write_audit(self, tenant: Tenant, r: Any) -> str:
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
