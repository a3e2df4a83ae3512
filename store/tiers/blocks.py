"""Working blocks: named text per tenant, in a stable pinned order, with their earlier versions.

Every update, append and delete keeps the version it ends in ``block_versions`` (its content,
its slot, when it was written, when and by which operation it was replaced), in the same
transaction as the change, so the history never misses a change or holds one that did not
commit. A block keeps at most ``kept`` earlier versions; the cap drops the oldest for good and
marks the oldest it keeps (``earlier_dropped``), so a reader can tell "this is where the block
began" from "this is as far back as the history goes".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from sqlalchemy import Connection, Delete, Insert, Row, Select, Update, bindparam, func, literal

from ..models import Block, BlockHistory, BlockVersion, Change
from ..schema import UtcMicros, block_versions_t, blocks_t
from ..tenancy import Tenant, user_id_of
from .changes import Window, first_line
from .erasing import Erasing
from .importing import KEPT, UNCHANGED, WRITTEN, Importing
from .moments import Moment
from .record_fields import Name, Order, Record, Text, Time
from .records import Reading, iso

DEFAULT_VERSIONS_KEPT = 100
"""Earlier versions kept per block: a block an agent rewrites every turn keeps its last hundred."""


def to_model(row: Row[Any]) -> Block:
    return Block(
        user_id=user_id_of(row.user_id),
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


def put_block(conn: Connection, tenant: Tenant, name: str, content: str, now: datetime, *, op: str = "update", kept: int) -> Block:
    """Replace a block's content, keeping its slot (and its earlier version, as ended by ``op``);
    a new block takes the last slot."""
    # Three statements where an update without history took two (update, read back): the
    # version is copied inside the database, the update returns the slot.
    if _keep_version(conn, tenant, name, now, op, kept):
        order = conn.execute(_statements(tenant).update, {"block": name, "new_content": content, "at": now}).scalar_one()
    else:
        last = conn.execute(tenant.select(blocks_t, func.max(blocks_t.c.pinned_order))).scalar()
        order = 0 if last is None else last + 1
        conn.execute(blocks_t.insert().values(tenant.stamp({"name": name, "content": content, "pinned_order": order, "updated_at": now})))
    # Built from what was just written, not read back: each statement counts in a write's time.
    return Block(user_id=tenant.user_id, name=name, content=content, pinned_order=order, updated_at=now)


def delete_block(conn: Connection, tenant: Tenant, name: str, now: datetime, *, kept: int) -> bool:
    if not _keep_version(conn, tenant, name, now, "delete", kept):
        return False
    return conn.execute(tenant.delete(blocks_t).where(blocks_t.c.name == name)).rowcount > 0


class _BlockWrites(NamedTuple):
    copy_version: Insert
    drop_beyond: Delete
    mark_oldest: Update
    update: Update


# A block update runs these at every call: built with SQLAlchemy each time (the tenant's
# conditions, the subqueries) they cost about 1 ms of Python per update, more than SQLite's
# 0.34 ms for all of them, and put an update with its history at 1.9x one without (2.2 against
# 1.15 ms p50, 400 updates). Built once per tenant, with the values bound, as the keyword
# index's statements are. Tenants are few in one process; the cache holds the most recent 256.
@lru_cache(maxsize=256)
def _statements(tenant: Tenant) -> _BlockWrites:
    v, b = block_versions_t, blocks_t
    owner = tenant.stamp({})
    current = tenant.select(
        b,
        *(literal(value) for value in owner.values()),
        b.c.name,
        b.c.content,
        b.c.pinned_order,
        b.c.updated_at,
        bindparam("at", type_=UtcMicros()),
        bindparam("ended_by"),
        literal(0),
    ).where(b.c.name == bindparam("block"))
    columns = [*owner, "name", "content", "pinned_order", "written_at", "replaced_at", "replaced_by", "earlier_dropped"]
    versions = tenant.select(v, v.c.pk).where(v.c.name == bindparam("block"))
    beyond = versions.order_by(v.c.replaced_at.desc(), v.c.pk.desc()).offset(bindparam("keep"))
    oldest = versions.order_by(v.c.replaced_at, v.c.pk).limit(1).scalar_subquery()
    return _BlockWrites(
        copy_version=v.insert().from_select(columns, current).returning(v.c.pk),
        drop_beyond=tenant.delete(v).where(v.c.pk.in_(beyond.scalar_subquery())),
        mark_oldest=tenant.update(v).where(v.c.pk == oldest).values(earlier_dropped=1),
        update=tenant.update(b)
        .where(b.c.name == bindparam("block"))
        .values(content=bindparam("new_content"), updated_at=bindparam("at", type_=UtcMicros()))
        .returning(b.c.pinned_order),
    )


def _keep_version(conn: Connection, tenant: Tenant, name: str, now: datetime, op: str, kept: int) -> bool:
    """Copy the block's current version into its history, ended now by ``op``, and apply the
    cap; False if there is no such block."""
    statements = _statements(tenant)
    if conn.execute(statements.copy_version, {"block": name, "at": now, "ended_by": op}).first() is None:
        return False
    # One statement drops whatever lies beyond the newest ``kept`` (nothing, as a rule); only
    # when it dropped something is the oldest kept version marked.
    if conn.execute(statements.drop_beyond, {"block": name, "keep": kept}).rowcount:
        conn.execute(statements.mark_oldest, {"block": name})
    return True


def history(conn: Connection, tenant: Tenant, name: str) -> BlockHistory:
    """Every kept version of the block, oldest first, the current one last."""
    v = block_versions_t
    rows = conn.execute(tenant.select(v).where(v.c.name == name).order_by(v.c.replaced_at, v.c.pk)).all()
    versions = [
        BlockVersion(
            name=r.name,
            content=r.content,
            pinned_order=r.pinned_order,
            written_at=r.written_at,
            replaced_at=r.replaced_at,
            replaced_by=r.replaced_by,
        )
        for r in rows
    ]
    current = get_block(conn, tenant, name)
    if current is not None:
        versions.append(
            BlockVersion(
                name=name,
                content=current.content,
                pinned_order=current.pinned_order,
                written_at=current.updated_at,
                replaced_at=None,
                replaced_by=None,
            )
        )
    return BlockHistory(user_id=tenant.user_id, name=name, versions=versions, earlier_dropped=bool(rows and rows[0].earlier_dropped))


def blocks_as_of(conn: Connection, tenant: Tenant, at: datetime) -> list[Block]:
    """The blocks as they read at ``at``, in pinned order: the current ones written by then, and
    the versions current then (of blocks changed or deleted since). A block whose version at
    ``at`` the cap dropped is left out: what it read then is gone."""
    v = block_versions_t
    # A current block written by then has not changed since; any other version current then
    # is in the history, one per name (a block's versions follow each other without overlap).
    found = {b.name: b for b in list_blocks(conn, tenant) if b.updated_at <= at}
    then = conn.execute(tenant.select(v).where(v.c.written_at <= at, v.c.replaced_at > at)).all()
    for r in then:
        found[r.name] = Block(user_id=tenant.user_id, name=r.name, content=r.content, pinned_order=r.pinned_order, updated_at=r.written_at)
    return sorted(found.values(), key=lambda b: b.pinned_order)


def changes(window: Window) -> Iterator[Change]:
    """Each block as last written."""
    for r in window.conn.execute(window.within(window.tenant.select(blocks_t), blocks_t.c.updated_at)):
        yield Change(at=r.updated_at, tier="block", kind="written", name=r.name, detail=first_line(r.content))


def version_changes(window: Window) -> Iterator[Change]:
    """Each earlier version of a block as written, then each delete (the version a delete replaced)."""
    v = block_versions_t.c
    for r in window.conn.execute(window.within(window.tenant.select(block_versions_t), v.written_at)):
        yield Change(at=r.written_at, tier="block", kind="written", name=r.name, detail=first_line(r.content))
    deleted = window.tenant.select(block_versions_t).where(v.replaced_by == "delete")
    for r in window.conn.execute(window.within(deleted, v.replaced_at)):
        yield Change(at=r.replaced_at, tier="block", kind="deleted", name=r.name, detail=first_line(r.content))


def as_of(moment: Moment) -> dict[str, Any]:
    """The tenant's blocks as they read at the moment (a snapshot's ``blocks``)."""
    return {"blocks": blocks_as_of(moment.conn, moment.tenant, moment.at)}


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    """The tenant's blocks as export records, in their pinned order."""
    for r in reading.conn.execute(reading.tenant.select(blocks_t).order_by(blocks_t.c.pinned_order)):
        yield reading.record("block", name=r.name, content=r.content, pinned_order=r.pinned_order, updated_at=iso(r.updated_at))


def version_records(reading: Reading) -> Iterator[dict[str, Any]]:
    """The blocks' earlier versions as export records, block by block, oldest first."""
    v = block_versions_t
    for r in reading.conn.execute(reading.tenant.select(v).order_by(v.c.name, v.c.replaced_at, v.c.pk)):
        yield reading.record(
            "block_version",
            name=r.name,
            content=r.content,
            pinned_order=r.pinned_order,
            written_at=iso(r.written_at),
            replaced_at=iso(r.replaced_at),
            replaced_by=r.replaced_by,
            earlier_dropped=bool(r.earlier_dropped),
        )


def erased(e: Erasing) -> Select[Any] | None:
    """The blocks go with the whole tenant only: a session or a date range keeps the current state."""
    return e.tenant.select(blocks_t, blocks_t.c.pk) if e.scope.whole_tenant else None


def erased_versions(e: Erasing) -> Select[Any] | None:
    """A block's earlier versions are history like any other: all with the tenant, those replaced before a date with it."""
    versions = e.tenant.select(block_versions_t, block_versions_t.c.pk)
    if e.scope.whole_tenant:
        return versions
    if e.scope.before is not None and not e.scope.facts_only:
        return versions.where(block_versions_t.c.replaced_at < e.scope.before)
    return None


# The records an import reads, each field held to the API's check.


class BlockRecord(Record):
    type: Literal["block"]
    name: Name
    content: Text
    pinned_order: Order
    updated_at: Time


class BlockVersionRecord(Record):
    type: Literal["block_version"]
    name: Name
    content: Text
    pinned_order: Order
    written_at: Time
    replaced_at: Time
    replaced_by: Literal["update", "append", "delete"]
    earlier_dropped: bool

    def problem(self) -> tuple[str, str] | None:
        if self.replaced_at < self.written_at:
            return "replaced_at", "a block version cannot be replaced before it was written"
        return None


def write(importing: Importing, tenant: Tenant, records: list[BlockRecord]) -> list[str]:
    """A block new here goes where the file had it, or last if that slot is another block's (as a
    new block does in the API); a block the tenant has is updated if the file's is newer."""
    conn, outcomes = importing.conn, []
    for r in records:
        row = conn.execute(tenant.select(blocks_t).where(blocks_t.c.name == r.name)).first()
        if row is None:
            taken = conn.execute(tenant.select(blocks_t, blocks_t.c.pk).where(blocks_t.c.pinned_order == r.pinned_order)).first()
            order = r.pinned_order
            if taken:
                order = (conn.execute(tenant.select(blocks_t, func.max(blocks_t.c.pinned_order))).scalar() or 0) + 1
            values = {"name": r.name, "content": r.content, "pinned_order": order, "updated_at": r.updated_at}
            conn.execute(blocks_t.insert().values(tenant.stamp(values)))
            outcomes.append(WRITTEN)
            continue
        outcome = importing.newer(r, row, row.content == r.content)
        if outcome == WRITTEN:
            conn.execute(tenant.update(blocks_t).where(blocks_t.c.pk == row.pk).values(content=r.content, updated_at=r.updated_at))
        outcomes.append(outcome)
    return outcomes


def write_versions(importing: Importing, tenant: Tenant, records: list[BlockVersionRecord]) -> list[str]:
    """A version is the same version when it held the same block from the same moment to the
    same moment; importing a file twice adds nothing."""
    v, outcomes = block_versions_t, []
    for r in records:
        same = tenant.select(v).where(v.c.name == r.name, v.c.written_at == r.written_at, v.c.replaced_at == r.replaced_at)
        row = importing.conn.execute(same).first()
        if row is not None:
            outcomes.append(UNCHANGED if (row.content, row.replaced_by) == (r.content, r.replaced_by) else KEPT)
            continue
        values = {
            "name": r.name,
            "content": r.content,
            "pinned_order": r.pinned_order,
            "written_at": r.written_at,
            "replaced_at": r.replaced_at,
            "replaced_by": r.replaced_by,
            "earlier_dropped": int(r.earlier_dropped),
        }
        importing.conn.execute(v.insert().values(tenant.stamp(values)))
        outcomes.append(WRITTEN)
    return outcomes
