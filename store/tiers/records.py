"""A tenant's rows read as export records: what each tier's module builds its records with.

A record is a flat dict with ``type`` and ``user_id``; each tier's module says how its rows
become records (its ``records`` function, named in :mod:`.registry`), and the data-rights
service walks the registry to export, migrate and compare a tenant.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator
from sqlalchemy import Column, Connection, Select

from ..schema import audit_t, vectors_t
from ..tenancy import Tenant
from .common import session_names
from .record_fields import JsonObject, Name, Record, Time, json_value

CHUNK = 2000
"""Rows read at a time by a tier that may hold many (episodes): a huge tenant streams in constant memory."""


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@dataclass
class Reading:
    """One tenant's records being read, in one read transaction."""

    conn: Connection
    tenant: Tenant
    embeddings: bool
    """Whether episodes and facts carry their vectors (base64 float32)."""
    now: datetime
    """Key-value entries expired at this moment are left out: gone for every reader."""
    _session_names: dict[int, str] | None = field(default=None, repr=False)

    def record(self, type_: str, **fields: Any) -> dict[str, Any]:
        return {"user_id": self.tenant.user_id, "type": type_, **fields}

    def session_names(self) -> dict[int, str]:
        """Each of the tenant's sessions' id by its key, for the records that belong to a session."""
        if self._session_names is None:
            self._session_names = session_names(self.conn, self.tenant)
        return self._session_names

    def vectors(self, kind: str, pks: list[int]) -> dict[int, str]:
        """The vectors of ``kind`` of the rows ``pks`` that have one, base64-encoded; none unless asked for."""
        if not self.embeddings or not pks:
            return {}
        rows = self.conn.execute(
            self.tenant.select(vectors_t, vectors_t.c.item_pk, vectors_t.c.vector).where(
                vectors_t.c.kind == kind, vectors_t.c.item_pk.in_(pks)
            )
        )
        return {pk: base64.b64encode(vector).decode() for pk, vector in rows}

    def pages(self, stmt: Select[Any], key: Column[Any]) -> Iterator[Sequence[Any]]:
        """Rows of ``stmt`` in ``key`` order, ``CHUNK`` at a time."""
        last = None
        while True:
            page = stmt if last is None else stmt.where(key > last)
            rows = self.conn.execute(page.order_by(key).limit(CHUNK)).all()
            if rows:
                yield rows
            if len(rows) < CHUNK:
                return
            last = rows[-1].pk


def audit_records(reading: Reading) -> Iterator[dict[str, Any]]:
    """The tenant's audit entries as export records, oldest first. The audit log is exported but
    is no tier: forget never erases it."""
    for r in reading.conn.execute(reading.tenant.select(audit_t).order_by(audit_t.c.at, audit_t.c.pk)):
        yield reading.record(
            "audit",
            at=iso(r.at),
            actor=r.actor,
            action=r.action,
            scope=json.loads(r.scope),
            counts=json.loads(r.counts),
            digest=r.digest,
            origin=r.origin,
        )


class AuditRecord(Record):
    type: Literal["audit"]
    at: Time
    actor: Name
    action: Literal["forget", "export", "import", "migrate"]
    scope: JsonObject
    counts: Annotated[dict[str, int], AfterValidator(json_value)]
    digest: Name
    # Where the entry happened in the exporting store; here it is imported history either way.
    origin: Literal["local", "imported"] = "local"
