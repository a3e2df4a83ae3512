"""A session's task state (``SessionMemory.set_task_state``) as a tier: its export records, what
an erasure takes, its import record and how an import writes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ValidationInfo
from sqlalchemy import Select

from ..models import TaskState
from ..schema import task_t
from ..tenancy import Tenant
from .erasing import Erasing
from .importing import WRITTEN, Importing
from .record_fields import Name, Record, Time, limit
from .records import Reading, iso
from .sessions import check_task_state


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    names = reading.session_names()
    for r in reading.conn.execute(reading.tenant.select(task_t).order_by(task_t.c.session_pk)):
        yield reading.record("task_state", session_id=names[r.session_pk], state=json.loads(r.state), updated_at=iso(r.updated_at))


def erased(e: Erasing) -> Select[Any] | None:
    """A session's task goes with the session (and the tenant); a date range keeps it: it is current state."""
    if e.scope.facts_only or e.scope.before is not None:
        return None
    return e.tenant.select(task_t, task_t.c.session_pk).where(task_t.c.session_pk.in_(e.sessions()))


def _task_field(value: Any, info: ValidationInfo) -> TaskState:
    return check_task_state(value, limit=limit(info))


class TaskStateRecord(Record):
    type: Literal["task_state"]
    session_id: Name
    state: Annotated[TaskState, BeforeValidator(_task_field)]
    updated_at: Time


def write(importing: Importing, tenant: Tenant, records: list[TaskStateRecord]) -> list[str]:
    conn, outcomes = importing.conn, []
    for r in records:
        session_pk = importing.session_pk(tenant, r.session_id)
        state = r.state.model_dump_json()  # as set_task_state stores it
        row = conn.execute(tenant.select(task_t).where(task_t.c.session_pk == session_pk)).first()
        if row is not None:
            outcome = importing.newer(r, row, row.state == state)
            if outcome != WRITTEN:
                outcomes.append(outcome)
                continue
            conn.execute(tenant.delete(task_t).where(task_t.c.session_pk == session_pk))
        conn.execute(task_t.insert().values(tenant.stamp({"session_pk": session_pk, "state": state, "updated_at": r.updated_at})))
        outcomes.append(WRITTEN)
    return outcomes
