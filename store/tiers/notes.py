"""A session's scratchpad notes (``SessionMemory.note``) as a tier: their export records, what an
erasure takes, their import record and how an import writes it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from sqlalchemy import Select

from ..schema import scratch_t
from ..tenancy import Tenant
from .erasing import Erasing
from .importing import UNCHANGED, WRITTEN, Importing
from .record_fields import Name, Record, Text, Time
from .records import Reading, iso


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    names = reading.session_names()
    for r in reading.conn.execute(reading.tenant.select(scratch_t).order_by(scratch_t.c.pk)):
        yield reading.record("note", session_id=names[r.session_pk], created_at=iso(r.created_at), content=r.content)


def erased(e: Erasing) -> Select[Any] | None:
    """The session's notes, or those written before the date, or all with the tenant."""
    if e.scope.facts_only:
        return None
    notes = e.tenant.select(scratch_t, scratch_t.c.pk)
    if e.scope.session_id is not None:
        notes = notes.where(scratch_t.c.session_pk.in_(e.sessions()))
    if e.scope.before is not None:
        notes = notes.where(scratch_t.c.created_at < e.scope.before)
    return notes


class NoteRecord(Record):
    type: Literal["note"]
    session_id: Name
    created_at: Time
    content: Text


def write(importing: Importing, tenant: Tenant, records: list[NoteRecord]) -> list[str]:
    conn, outcomes = importing.conn, []
    for r in records:
        session_pk = importing.session_pk(tenant, r.session_id)
        same = tenant.select(scratch_t, scratch_t.c.pk).where(
            scratch_t.c.session_pk == session_pk, scratch_t.c.created_at == r.created_at, scratch_t.c.content == r.content
        )
        if conn.execute(same).first():
            outcomes.append(UNCHANGED)
            continue
        conn.execute(scratch_t.insert().values(tenant.stamp({"session_pk": session_pk, "created_at": r.created_at, "content": r.content})))
        outcomes.append(WRITTEN)
    return outcomes
