"""A session's key-value entries (``SessionMemory.set``/``get``, with a time to live) as a tier:
their export records, what an erasure takes, their import record and how an import writes it.
The entries themselves are read and written through :class:`.sessions.SessionMemory`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field
from sqlalchemy import Select, or_

from ..schema import kv_t
from ..tenancy import Tenant
from ..validation import check_json
from .erasing import Erasing
from .importing import WRITTEN, Importing
from .record_fields import JsonValue, Name, OptionalText, OptionalTime, Record, Time
from .records import Reading, iso


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    """Entries expired at ``reading.now`` are left out: gone for every reader, even before they are purged."""
    names = reading.session_names()
    live = or_(kv_t.c.expires_at.is_(None), kv_t.c.expires_at > reading.now)
    for r in reading.conn.execute(reading.tenant.select(kv_t).where(live).order_by(kv_t.c.session_pk, kv_t.c.key)):
        yield reading.record(
            "kv",
            session_id=names[r.session_pk],
            key=r.key,
            value=json.loads(r.value),
            expires_at=iso(r.expires_at),
            updated_at=iso(r.updated_at),
            created_at=iso(r.created_at),
            ttl_seconds=r.ttl_seconds,
            search_text=r.search_text,
        )


def erased(e: Erasing) -> Select[Any] | None:
    """A session's keys go with the session (and the tenant); a date range keeps them: they are current state."""
    if e.scope.facts_only or e.scope.before is not None:
        return None
    return e.tenant.select(kv_t, kv_t.c.pk).where(kv_t.c.session_pk.in_(e.sessions()))


class KeyValueRecord(Record):
    type: Literal["kv"]
    session_id: Name
    key: Name
    value: JsonValue
    expires_at: OptionalTime
    updated_at: Time
    # Files written before entries kept these: created at their last write, a fixed expiry.
    created_at: OptionalTime = None
    ttl_seconds: float | None = Field(default=None, gt=0)
    search_text: OptionalText = None


def write(importing: Importing, tenant: Tenant, records: list[KeyValueRecord]) -> list[str]:
    conn, outcomes = importing.conn, []
    for r in records:
        session_pk = importing.session_pk(tenant, r.session_id)
        values = {
            "value": check_json(r.value, "value", limit=importing.max_bytes),
            "expires_at": r.expires_at,
            "ttl_seconds": r.ttl_seconds,
            "search_text": r.search_text,
            "updated_at": r.updated_at,
        }
        row = conn.execute(tenant.select(kv_t).where(kv_t.c.session_pk == session_pk, kv_t.c.key == r.key)).first()
        if row is None:
            created = r.created_at or r.updated_at
            conn.execute(kv_t.insert().values(tenant.stamp({"session_pk": session_pk, "key": r.key, "created_at": created, **values})))
            outcomes.append(WRITTEN)
            continue
        same = all(row._mapping[name] == values[name] for name in ("value", "expires_at", "ttl_seconds", "search_text"))
        outcome = importing.newer(r, row, same)
        if outcome == WRITTEN:
            conn.execute(tenant.update(kv_t).where(kv_t.c.pk == row.pk).values(**values))
        outcomes.append(outcome)
    return outcomes
