"""A session's checkpoints (``SessionMemory.checkpoint``, a snapshot of its keys, task and notes)
as a tier: their export records, what an erasure takes, their import record and how an import
writes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ValidationInfo
from sqlalchemy import Select, exists, literal_column, or_, select

from ..models import Change
from ..schema import checkpoints_t, to_micros
from ..tenancy import Tenant
from .changes import Window
from .erasing import Erasing
from .importing import KEPT, UNCHANGED, WRITTEN, Importing
from .record_fields import Name, Record, Text, Time, limit
from .records import Reading, iso
from .sessions import check_snapshot


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    names = reading.session_names()
    for r in reading.conn.execute(reading.tenant.select(checkpoints_t).order_by(checkpoints_t.c.created_at, checkpoints_t.c.pk)):
        yield reading.record(
            "checkpoint",
            id=r.id,
            session_id=names[r.session_pk],
            description=r.description,
            created_at=iso(r.created_at),
            snapshot=json.loads(r.snapshot),
        )


def changes(window: Window) -> Iterator[Change]:
    """Each checkpoint as made, under its session's name."""
    names = window.session_names()
    for r in window.conn.execute(window.within(window.tenant.select(checkpoints_t), checkpoints_t.c.created_at)):
        yield Change(at=r.created_at, tier="session", kind="checkpoint", name=names.get(r.session_pk, "?"), detail=r.description)


def erased(e: Erasing) -> Select[Any] | None:
    """The checkpoints of the session, or made before the date, or holding a snapshot of a note
    made before it (a checkpoint made later can still hold one)."""
    if e.scope.facts_only:
        return None
    checkpoints = e.tenant.select(checkpoints_t, checkpoints_t.c.pk)
    if e.scope.session_id is not None:
        checkpoints = checkpoints.where(checkpoints_t.c.session_pk.in_(e.sessions()))
    before = e.scope.before
    if before is not None:
        held = e.dialect.json_array_items(checkpoints_t.c.snapshot, "$.scratchpad", name="j")
        holds_old_note = exists(
            select(literal_column("1")).select_from(held).where(e.dialect.json_field(held.c.value, "$.created_at") < to_micros(before))
        )
        checkpoints = checkpoints.where(or_(checkpoints_t.c.created_at < before, holds_old_note))
    return checkpoints


def _snapshot_field(value: Any, info: ValidationInfo) -> dict[str, Any]:
    return check_snapshot(value, limit=limit(info))


class CheckpointRecord(Record):
    type: Literal["checkpoint"]
    id: Name
    session_id: Name
    description: Text
    created_at: Time
    snapshot: Annotated[dict[str, Any], AfterValidator(_snapshot_field)]


def write(importing: Importing, tenant: Tenant, records: list[CheckpointRecord]) -> list[str]:
    conn, outcomes = importing.conn, []
    for r in records:
        row = conn.execute(tenant.select(checkpoints_t).where(checkpoints_t.c.id == r.id)).first()
        if row is not None:
            same = (row.description, row.created_at, json.loads(row.snapshot)) == (r.description, r.created_at, r.snapshot)
            outcomes.append(UNCHANGED if same else KEPT)
            continue
        values = {
            "id": r.id,
            "session_pk": importing.session_pk(tenant, r.session_id),
            "description": r.description,
            "created_at": r.created_at,
            "snapshot": json.dumps(r.snapshot, ensure_ascii=False),
        }
        conn.execute(checkpoints_t.insert().values(tenant.stamp(values)))
        outcomes.append(WRITTEN)
    return outcomes
