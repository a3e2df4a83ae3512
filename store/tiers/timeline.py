"""A tenant's changes over time, from what the store keeps: the moments a debugging person steps
through (each one a moment :meth:`store.memory.MemoryStore.snapshot` can show).

Blocks: each version written and each delete (from the block history). Facts: each recorded,
and each change of one's validity (a supersession or a correction). Sessions: each started, and
each checkpoint. Episodes are not listed one by one (a tenant can hold 100k); their times are in
the episodes view. What the history cap or an erasure dropped is not here either.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select

from ..models import Change
from ..schema import block_versions_t, blocks_t, checkpoints_t, fact_changes_t, facts_t, sessions_t
from ..tenancy import Tenant


def changes(conn: Connection, tenant: Tenant, *, since: datetime | None, until: datetime | None, limit: int) -> list[Change]:
    """The tenant's changes in ``[since, until)``, newest first, at most ``limit``."""

    def within(stmt: Select[Any], column: Any) -> Select[Any]:
        if since is not None:
            stmt = stmt.where(column >= since)
        if until is not None:
            stmt = stmt.where(column < until)
        return stmt.order_by(column.desc()).limit(limit)

    found: list[Change] = []
    b, v = blocks_t.c, block_versions_t.c
    for r in conn.execute(within(tenant.select(blocks_t), b.updated_at)):
        found.append(Change(at=r.updated_at, tier="block", kind="written", name=r.name, detail=_first_line(r.content)))
    for r in conn.execute(within(tenant.select(block_versions_t), v.written_at)):
        found.append(Change(at=r.written_at, tier="block", kind="written", name=r.name, detail=_first_line(r.content)))
    deleted = tenant.select(block_versions_t).where(v.replaced_by == "delete")
    for r in conn.execute(within(deleted, v.replaced_at)):
        found.append(Change(at=r.replaced_at, tier="block", kind="deleted", name=r.name, detail=_first_line(r.content)))
    f, c = facts_t.c, fact_changes_t.c
    for r in conn.execute(within(tenant.select(facts_t), f.recorded_at)):
        found.append(Change(at=r.recorded_at, tier="fact", kind="recorded", name=f"{r.subject} {r.predicate}", detail=r.object))
    # Each change with its fact, in one statement (a lookup per change not in the page above was a
    # query each); a change whose fact is gone is not listed.
    changed = tenant.select(fact_changes_t, c.changed_at, c.valid_until_before, f.subject, f.predicate, f.object).select_from(
        fact_changes_t.join(facts_t, (f.id == c.fact_id) & tenant.owns(facts_t))
    )
    for r in conn.execute(within(changed, c.changed_at)):
        was = "open" if r.valid_until_before is None else f"valid until {r.valid_until_before.isoformat()}"
        name = f"{r.subject} {r.predicate}"
        found.append(Change(at=r.changed_at, tier="fact", kind="validity changed", name=name, detail=f"{r.object} (was {was})"))
    s, k = sessions_t.c, checkpoints_t.c
    names = {}
    for r in conn.execute(tenant.select(sessions_t)):
        names[r.pk] = r.session_id
    for r in conn.execute(within(tenant.select(sessions_t), s.created_at)):
        found.append(Change(at=r.created_at, tier="session", kind="started", name=r.session_id, detail=""))
    for r in conn.execute(within(tenant.select(checkpoints_t), k.created_at)):
        found.append(Change(at=r.created_at, tier="session", kind="checkpoint", name=names.get(r.session_pk, "?"), detail=r.description))
    found.sort(key=lambda change: change.at, reverse=True)
    return found[:limit]


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"
