"""Small helpers shared by the tiers."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from ..backend import sql
from ..schema import sessions_t, tenants_t
from ..tenancy import Tenant


def _random_id() -> str:
    return uuid.uuid4().hex


_id_source: Callable[[], str] = _random_id


def new_id() -> str:
    """A new globally unique id for an episode, fact or checkpoint."""
    return _id_source()


def set_id_source(source: Callable[[], str] | None) -> None:
    """Replace the id generator (snapshot tests and screenshots need stable ids); None restores it."""
    global _id_source
    _id_source = source or _random_id


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def loads(text: str | None) -> Any:
    if text == "[]":  # most facts and episodes name no sources and no tool calls: skip the parser
        return []
    return None if text is None else json.loads(text)


def touch_tenant(conn: Connection, tenant: Tenant, now: datetime, *, activity: bool = True) -> None:
    """Record activity: creates the tenant row on first write, moves last_activity on. Without
    ``activity`` (what is written is no write to the tenant's memory: a recall's trace), only
    the first write creates the row, and a listed tenant is left as it is."""
    values = tenant.stamp({"created_at": now, "last_activity": now})
    sql(conn).upsert(conn, tenants_t, values, tenant.key_columns(), {"last_activity": now} if activity else None)


def ensure_session(conn: Connection, tenant: Tenant, session_id: str, now: datetime, *, touch: bool = True) -> int:
    """The session's row key, creating the session if this is its first write; ``touch``
    moves its updated_at on (imports keep the time they carry)."""
    values = tenant.stamp({"session_id": session_id, "created_at": now, "updated_at": now})
    sql(conn).upsert(conn, sessions_t, values, tenant.key_columns("session_id"), {"updated_at": now} if touch else None)
    return find_session(conn, tenant, session_id)  # type: ignore[return-value]


def ids_present(conn: Connection, tenant: Tenant, table: Any, ids: list[str]) -> set[str]:
    """Which of ``ids`` this tenant already uses in ``table`` (ids are unique per tenant)."""
    found: set[str] = set()
    for start in range(0, len(ids), 500):  # SQLite caps bound parameters per statement
        stmt = tenant.select(table, table.c.id).where(table.c.id.in_(ids[start : start + 500]))
        found.update(conn.execute(stmt).scalars())
    return found


def find_session(conn: Connection, tenant: Tenant, session_id: str) -> int | None:
    return conn.execute(tenant.select(sessions_t, sessions_t.c.pk).where(sessions_t.c.session_id == session_id)).scalar()


def session_names(conn: Connection, tenant: Tenant) -> dict[int, str]:
    """Each of the tenant's sessions' id by its key."""
    rows = conn.execute(tenant.select(sessions_t, sessions_t.c.pk, sessions_t.c.session_id))
    return {pk: session_id for pk, session_id in rows}
