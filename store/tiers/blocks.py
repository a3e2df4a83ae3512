"""Working blocks: named text per tenant, in a stable pinned order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func

from ..models import Block
from ..schema import blocks_t
from ..tenancy import Tenant


def to_model(row: Row[Any]) -> Block:
    return Block(
        user_id=Tenant(row.user_id).user_id,
        name=row.name,
        content=row.content,
        pinned_order=row.pinned_order,
        updated_at=row.updated_at,
    )


def list_blocks(conn: Connection, tenant: Tenant) -> list[Block]:
    rows = conn.execute(tenant.select(blocks_t).order_by(blocks_t.c.pinned_order)).all()
    return [to_model(r) for r in rows]


def get_block(conn: Connection, tenant: Tenant, name: str) -> Block | None:
    row = conn.execute(tenant.select(blocks_t).where(blocks_t.c.name == name)).first()
    return to_model(row) if row else None


def put_block(conn: Connection, tenant: Tenant, name: str, content: str, now: datetime) -> Block:
    """Replace a block's content, keeping its slot; a new block takes the last slot."""
    updated = conn.execute(tenant.update(blocks_t).where(blocks_t.c.name == name).values(content=content, updated_at=now))
    if updated.rowcount == 0:
        last = conn.execute(tenant.select(blocks_t, func.max(blocks_t.c.pinned_order))).scalar()
        order = 0 if last is None else last + 1
        conn.execute(blocks_t.insert().values(tenant.stamp({"name": name, "content": content, "pinned_order": order, "updated_at": now})))
    return get_block(conn, tenant, name)  # type: ignore[return-value]


def delete_block(conn: Connection, tenant: Tenant, name: str) -> bool:
    return conn.execute(tenant.delete(blocks_t).where(blocks_t.c.name == name)).rowcount > 0
