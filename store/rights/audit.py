"""The audit log: who exported, imported or erased what, and when. Counts and digests only,
so it can outlive the erasures it records.

Each entry has an origin: 'local' for what happened in this store, 'imported' for history that
arrived in an import file. An imported entry is a claim the file makes, not something this store
saw happen, so it is kept apart and never shown as local."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row

from ..backend import sql
from ..models import AuditEntry
from ..schema import audit_t, to_micros
from ..tenancy import Tenant, user_id_of


def session_digest(tenant: Tenant, session_id: str | None) -> str | None:
    """What an audit entry keeps of an erased session: the SHA-256 of the tenant's key and the
    session's id, so that whoever holds the id can check the entry names it, and the entry holds no
    text of the agent's."""
    if session_id is None:
        return None
    return "sha256:" + hashlib.sha256(json.dumps([tenant.key, session_id]).encode()).hexdigest()


def digest(action: str, tenant: Tenant, scope: dict[str, Any], counts: dict[str, int], at: datetime) -> str:
    """Identifies one request; built from its scope, counts and time, never from content."""
    payload = json.dumps(
        {"action": action, "user_id": tenant.user_id, "scope": scope, "counts": counts, "at": to_micros(at)},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def record(
    conn: Connection,
    tenant: Tenant,
    *,
    action: str,
    actor: str,
    scope: dict[str, Any],
    counts: dict[str, int],
    at: datetime,
    status: dict[str, Any] | None = None,
) -> str:
    """Append an entry; ``status`` is stored in its scope but not digested (it may change later)."""
    value = digest(action, tenant, scope, counts, at)
    conn.execute(
        audit_t.insert().values(
            tenant.stamp(
                {
                    "at": at,
                    "actor": actor,
                    "action": action,
                    "scope": json.dumps({**scope, **(status or {})}, sort_keys=True),
                    "counts": json.dumps(counts, sort_keys=True),
                    "digest": value,
                }
            )
        )
    )
    return value


def record_imported(
    conn: Connection,
    tenant: Tenant,
    *,
    action: str,
    actor: str,
    scope: dict[str, Any],
    counts: dict[str, int],
    at: datetime,
    digest: str,
    origin: str = "imported",
) -> None:
    """Keep an entry from an import file as it was written, marked as imported history (a
    migration keeps the origin the entry had in the store it moves)."""
    conn.execute(
        audit_t.insert().values(
            tenant.stamp(
                {
                    "at": at,
                    "actor": actor,
                    "action": action,
                    "scope": json.dumps(scope, sort_keys=True),
                    "counts": json.dumps(counts, sort_keys=True),
                    "digest": digest,
                    "origin": origin,
                }
            )
        )
    )


def to_model(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        at=row.at,
        actor=row.actor,
        action=row.action,
        user_id=user_id_of(row.user_id),
        scope=json.loads(row.scope),
        counts=json.loads(row.counts),
        digest=row.digest,
        origin=row.origin,
    )


def mark_scrubbed(conn: Connection, erasures: list[list[str]], at: datetime) -> None:
    """Record on each forget entry (``[tenant key, digest]``) that its bytes have left the files."""
    for key, value in erasures:
        conn.execute(
            Tenant(key)
            .update(audit_t)
            .where(audit_t.c.digest == value, audit_t.c.action == "forget")
            .values(scope=sql(conn).json_set(audit_t.c.scope, {"$.disk_scrubbed": True, "$.scrubbed_at": at.isoformat()}))
        )
