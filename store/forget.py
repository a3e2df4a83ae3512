"""Erasure that leaves nothing behind: rows of every tier, what was derived from them (keyword
index entries, vectors, facts sourced from erased episodes, checkpoint snapshots holding erased
notes), and finally the bytes on disk.

Each tier's scope is one ``select`` of row keys, used both to count (dry run) and to delete,
so the receipt of a dry run and of the real erase cannot disagree. Rows go in one write
transaction (a crash leaves all or nothing); then the FTS5 indexes are rewritten (deleted
terms otherwise stay in old segments) and the WAL is truncated (old frames keep old pages).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Select, exists, func, literal_column, or_, select

from .schema import blocks_t, checkpoints_t, episodes_t, facts_t, kv_t, scratch_t, sessions_t, task_t, tenants_t, to_micros, vectors_t
from .tenancy import Tenant


@dataclass(frozen=True)
class Scope:
    tenant: Tenant
    session_id: str | None
    before: datetime | None

    @property
    def whole_tenant(self) -> bool:
        return self.session_id is None and self.before is None


def _json_each(source, path: str | None = None):
    args = (source,) if path is None else (source, path)
    return func.json_each(*args).table_valued("value", name="j")


def scopes(scope: Scope) -> dict[str, Select]:
    """For each tier, the keys of the rows this erasure removes."""
    t, session_id, before = scope.tenant, scope.session_id, scope.before
    sessions = t.select(sessions_t, sessions_t.c.pk)
    if session_id is not None:
        sessions = sessions.where(sessions_t.c.session_id == session_id)
    episodes = t.select(episodes_t, episodes_t.c.pk)
    if session_id is not None:
        episodes = episodes.where(episodes_t.c.session_id == session_id)
    if before is not None:
        episodes = episodes.where(episodes_t.c.occurred_at < before)
    erased_ids = t.select(episodes_t, episodes_t.c.id).where(episodes_t.c.pk.in_(episodes))
    sourced = _json_each(facts_t.c.source_episode_ids)
    derived = exists(select(literal_column("1")).select_from(sourced).where(sourced.c.value.in_(erased_ids)))
    facts = t.select(facts_t, facts_t.c.pk)
    if not scope.whole_tenant:
        facts = facts.where(or_(derived, facts_t.c.recorded_at < before) if before is not None else derived)
    notes = t.select(scratch_t, scratch_t.c.pk)
    checkpoints = t.select(checkpoints_t, checkpoints_t.c.pk)
    if session_id is not None:
        notes = notes.where(scratch_t.c.session_pk.in_(sessions))
        checkpoints = checkpoints.where(checkpoints_t.c.session_pk.in_(sessions))
    if before is not None:
        notes = notes.where(scratch_t.c.created_at < before)
        # A checkpoint made later can still hold a snapshot of an erased note.
        held = _json_each(checkpoints_t.c.snapshot, "$.scratchpad")
        holds_old_note = exists(
            select(literal_column("1")).select_from(held).where(func.json_extract(held.c.value, "$.created_at") < to_micros(before))
        )
        checkpoints = checkpoints.where(or_(checkpoints_t.c.created_at < before, holds_old_note))
    result = {"episodes": episodes, "facts": facts, "scratchpad_entries": notes, "checkpoints": checkpoints}
    if before is None:
        # A whole session (or tenant) goes with its working memory; `before` alone keeps the
        # current state (blocks, keys, task) and removes only what is older than the date.
        result["sessions"] = sessions
        result["kv_entries"] = t.select(kv_t, kv_t.c.pk).where(kv_t.c.session_pk.in_(sessions))
        result["task_states"] = t.select(task_t, task_t.c.session_pk).where(task_t.c.session_pk.in_(sessions))
    if scope.whole_tenant:
        result["blocks"] = t.select(blocks_t, blocks_t.c.pk)
    return result


TABLES = {
    "episodes": (episodes_t, episodes_t.c.pk),
    "facts": (facts_t, facts_t.c.pk),
    "scratchpad_entries": (scratch_t, scratch_t.c.pk),
    "checkpoints": (checkpoints_t, checkpoints_t.c.pk),
    "sessions": (sessions_t, sessions_t.c.pk),
    "kv_entries": (kv_t, kv_t.c.pk),
    "task_states": (task_t, task_t.c.session_pk),
    "blocks": (blocks_t, blocks_t.c.pk),
}
# Children before parents, so cascades never hide a count.
ORDER = ["kv_entries", "task_states", "scratchpad_entries", "checkpoints", "facts", "episodes", "sessions", "blocks"]


def count(conn: Connection, scope: Scope) -> dict[str, int]:
    counts = {name: conn.execute(select(func.count()).select_from(stmt.subquery())).scalar() for name, stmt in scopes(scope).items()}
    counts["vectors"] = _vector_count(conn, scope, counts)
    return {name: counts.get(name, 0) for name in [*ORDER, "vectors"]}


def _vector_count(conn: Connection, scope: Scope, counts: dict[str, int]) -> int:
    kinds = {"episodes": "episode", "facts": "fact", "scratchpad_entries": "scratchpad", "blocks": "block"}
    total = 0
    for name, stmt in scopes(scope).items():
        if name in kinds:
            total += conn.execute(
                scope.tenant.select(vectors_t, func.count()).where(vectors_t.c.kind == kinds[name], vectors_t.c.item_pk.in_(stmt))
            ).scalar()
    return total


def delete(conn: Connection, scope: Scope) -> dict[str, int]:
    """Delete everything in scope inside the caller's transaction; returns what was there."""
    counts = count(conn, scope)
    stmts = scopes(scope)
    keys = {name: conn.execute(stmt).scalars().all() for name, stmt in stmts.items()}
    for name in ORDER:
        if name not in keys:
            continue
        table_, key = TABLES[name]
        ids = keys[name]
        for start in range(0, len(ids), 30_000):
            conn.execute(scope.tenant.delete(table_).where(key.in_(ids[start : start + 30_000])))
    if scope.whole_tenant:
        # Vectors of every kind are removed by triggers with their rows; this catches any orphan.
        conn.execute(scope.tenant.delete(vectors_t))
        conn.execute(scope.tenant.delete(tenants_t))
    return counts


def rewrite_keyword_indexes(conn: Connection) -> None:
    """FTS5 keeps deleted terms in old segments until they are merged; 'optimize' merges them all
    into one new segment, and secure_delete zeroes the freed pages."""
    conn.exec_driver_sql("INSERT INTO episodes_fts(episodes_fts) VALUES ('optimize')")
    conn.exec_driver_sql("INSERT INTO facts_fts(facts_fts) VALUES ('optimize')")


def truncate_wal(raw, attempts: int = 20, pause: float = 0.1) -> bool:
    """Copy the WAL into the database and truncate it to zero bytes, so old frames are gone.
    A reader holding an old snapshot blocks it; retry briefly, then report failure."""
    for _ in range(attempts):
        busy, _log, _done = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy == 0:
            return True
        time.sleep(pause)
    return False

