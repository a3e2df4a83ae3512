"""One LIST partition per tenant, for every table that holds a tenant's content.

A tenant's partitions are named after a digest of its key (``episodes_t3f9a...``), so any
process derives the same names without a registry and no tenant name appears in the catalog.

Partitions are made as plain tables and then ATTACHed: ``CREATE TABLE ... PARTITION OF``
and ``DROP TABLE`` of a partition take an ACCESS EXCLUSIVE lock on the parent, so they wait
behind any open reader of any tenant, and every query queues behind them (measured here: both
hit a 300 ms lock timeout behind one idle-in-transaction reader), while ATTACH takes a SHARE
UPDATE EXCLUSIVE lock, which readers and writers do not conflict with (18 ms beside the same
reader). Likewise a tenant's partitions leave by ``DETACH ... CONCURRENTLY`` before the drop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, text

from ...tenancy import Tenant
from . import errors as pg_errors
from . import locks
from .tables import PARTITIONED, SESSION_CHILDREN, session_key


def suffix(tenant: Tenant) -> str:
    return "t" + hashlib.sha256(tenant.key.encode("utf-8")).hexdigest()[:16]


def names(tenant: Tenant) -> dict[str, str]:
    """Parent table -> this tenant's partition of it."""
    return {parent: f"{parent}_{suffix(tenant)}" for parent in PARTITIONED}


def _literal(tenant: Tenant) -> str:
    # Partition bounds take no bind parameters; the key is a validated Tenant key (no NULs).
    return "'" + tenant.key.replace("'", "''") + "'"


def _inherits(conn: Connection, tenant: Tenant, *, pending: bool) -> set[str]:
    rows = conn.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE c.relname = ANY(:names) AND c.relnamespace = current_schema()::regnamespace "
            "AND i.inhdetachpending = :pending"
        ),
        {"names": list(names(tenant).values()), "pending": pending},
    )
    return set(rows.scalars())


def _attached(conn: Connection, tenant: Tenant) -> set[str]:
    return _inherits(conn, tenant, pending=False)


def _finalize_pending(conn: Connection, tenant: Tenant) -> None:
    """Finish a DETACH ... CONCURRENTLY that was interrupted (a lock timeout, a kill) after its
    first step: such a partition takes no rows and cannot be attached again until then."""
    for parent, name in names(tenant).items():
        if name in _inherits(conn, tenant, pending=True):
            conn.exec_driver_sql(f'ALTER TABLE "{parent}" DETACH PARTITION "{name}" FINALIZE')


def all_attached(conn: Connection, tenant: Tenant) -> bool:
    """Whether every partition of ``tenant`` is attached now (a row of any table can go in), one
    per partitioned table the schema has so far (a migration step runs before later steps make
    their tables), in one query: every write transaction asks."""
    return bool(
        conn.execute(
            text(
                "SELECT (SELECT count(*) FROM pg_class WHERE relname = ANY(:parents) AND relkind = 'p' "
                "AND relnamespace = current_schema()::regnamespace) = "
                "(SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE c.relname = ANY(:names) AND c.relnamespace = current_schema()::regnamespace AND NOT i.inhdetachpending)"
            ),
            {"parents": list(PARTITIONED), "names": list(names(tenant).values())},
        ).scalar()
    )


def _existing(conn: Connection, tenant: Tenant) -> set[str]:
    rows = conn.execute(
        text("SELECT relname FROM pg_class WHERE relname = ANY(:names) AND relnamespace = current_schema()::regnamespace"),
        {"names": list(names(tenant).values())},
    )
    return set(rows.scalars())


@contextmanager
def tenant_locked(engine: Engine, tenant: Tenant) -> Iterator[Connection]:
    """An autocommit connection holding what a writer of ``tenant`` takes (:func:`.locks.hold_for_drop`)
    until the block ends, across the several transactions of making or dropping partitions.
    A connection that fails inside is closed, not pooled, so it cannot keep the locks."""
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        # As long as a writer waits for these locks (a store-wide write may hold them), then busy.
        conn.exec_driver_sql(f"SET lock_timeout = '{pg_errors.LOCK_TIMEOUT_S}s'")
        locks.hold_for_drop(conn, tenant)
        yield conn
        locks.release(conn)
        conn.exec_driver_sql("RESET lock_timeout")
    except BaseException:
        conn.invalidate()
        raise
    finally:
        conn.close()


def ensure(engine: Engine, tenant: Tenant) -> bool:
    """Make sure ``tenant`` has a partition of every table; returns True if any was made.

    Runs before the caller's write, under the tenant's writer lock and in short transactions
    of its own: partitions must exist before a row can be inserted, and ATTACH holds its lock
    until commit, so it is not left inside a long write. The lock keeps two processes from
    making the same table, and a drop of the tenant's partitions from running meanwhile."""
    with engine.connect() as conn:
        if all_attached(conn, tenant):
            return False
    with tenant_locked(engine, tenant) as conn:
        return ensure_locked(conn, tenant)


def ensure_locked(conn: Connection, tenant: Tenant) -> bool:
    """:func:`ensure` on an autocommit connection that holds the tenant's writer lock (so a
    caller can first check, under the same lock, that the tenant still exists)."""
    _finalize_pending(conn, tenant)
    attached, existing = _attached(conn, tenant), _existing(conn, tenant)
    partition = names(tenant)
    # A migration step that moves rows (version 6) runs before later steps create their tables.
    parents = set(
        conn.execute(
            text("SELECT relname FROM pg_class WHERE relname = ANY(:names) AND relnamespace = current_schema()::regnamespace"),
            {"names": list(partition)},
        ).scalars()
    )
    made = False
    for parent, name in partition.items():  # sessions first: the others reference it
        if name in attached or parent not in parents:
            continue
        if name not in existing:
            conn.exec_driver_sql(f'CREATE TABLE "{name}" (LIKE "{parent}" INCLUDING DEFAULTS INCLUDING GENERATED)')
        if parent in SESSION_CHILDREN and not _has_constraint(conn, name, f"fk_{parent}_session"):
            # Before the ATTACH: an attached partition always has its key into the sessions.
            conn.exec_driver_sql(session_key(parent, name, partition["sessions"]))
        conn.exec_driver_sql(f'ALTER TABLE "{parent}" ATTACH PARTITION "{name}" FOR VALUES IN ({_literal(tenant)})')
        made = True
    return made


def move_tenant(conn: Connection, old: Tenant, new: Tenant) -> None:
    """Inside the caller's transaction (a migration's, which holds off every writer): every row
    of ``old`` becomes ``new``'s, in ``new``'s partitions (made here if need be), and ``old``'s
    emptied partitions are dropped. The session tables reference their tenant's own sessions
    partition, so the sessions are copied first, the rows that reference them moved, and the
    old sessions deleted last; vectors move before the rows whose deletion would delete them."""
    ensure_locked(conn, new)
    keys = {"old": old.key, "new": new.key}
    conn.execute(
        text(
            "INSERT INTO sessions (pk, user_id, session_id, created_at, updated_at) "
            "SELECT pk, :new, session_id, created_at, updated_at FROM sessions WHERE user_id = :old"
        ),
        keys,
    )
    for table in ("vectors", "blocks", "episodes", "facts", "kv_entries", "task_states", "scratchpad", "checkpoints"):
        conn.execute(text(f"UPDATE {table} SET user_id = :new WHERE user_id = :old"), keys)
    conn.execute(text("DELETE FROM sessions WHERE user_id = :old"), keys)
    for parent, name in reversed(list(names(old).items())):
        if name in _attached(conn, old):
            conn.exec_driver_sql(f'ALTER TABLE "{parent}" DETACH PARTITION "{name}"')
        if name in _existing(conn, old):
            conn.exec_driver_sql(f'DROP TABLE "{name}"')


def _has_constraint(conn: Connection, table: str, constraint: str) -> bool:
    found = conn.execute(
        text("SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass(:table) AND conname = :name"),
        {"table": f'"{table}"', "name": constraint},
    ).first()
    return found is not None


def attached_tables(conn: Connection, tenant: Tenant) -> list[str]:
    """This tenant's partitions that exist now, in :data:`PARTITIONED` order."""
    present = _attached(conn, tenant)
    return [name for name in names(tenant).values() if name in present]


def drop(engine: Engine, tenant: Tenant) -> list[str]:
    """Detach and drop the tenant's empty partitions (after its rows were deleted in the
    erasure's transaction), holding its writer lock throughout; returns the tables dropped."""
    with tenant_locked(engine, tenant) as conn:
        return drop_locked(conn, tenant)


def drop_locked(conn: Connection, tenant: Tenant) -> list[str]:
    """:func:`drop` on an autocommit connection that holds the tenant's writer lock (so no row
    of it arrives meanwhile). A partition that received rows after the erasure committed (the
    agent wrote again) is attached back untouched: those rows were never part of the erasure.
    Safe to run again after a crash at any point: a detach left pending is finished, and a
    detached leftover dropped if empty, re-attached if not."""
    _finalize_pending(conn, tenant)
    dropped = []
    for parent, name in reversed(list(names(tenant).items())):
        if name not in _existing(conn, tenant):
            continue
        if name in _attached(conn, tenant):
            # DETACH ... CONCURRENTLY takes no lock that other tenants' queries wait for
            # (a plain DETACH or DROP of an attached partition locks the parent exclusively);
            # it cannot run inside a transaction block, hence autocommit.
            conn.exec_driver_sql(f'ALTER TABLE "{parent}" DETACH PARTITION "{name}" CONCURRENTLY')
        if conn.exec_driver_sql(f'SELECT NOT EXISTS (SELECT 1 FROM "{name}")').scalar():
            conn.exec_driver_sql(f'DROP TABLE "{name}"')
            dropped.append(name)
        else:
            conn.exec_driver_sql(f'ALTER TABLE "{parent}" ATTACH PARTITION "{name}" FOR VALUES IN ({_literal(tenant)})')
    return dropped
