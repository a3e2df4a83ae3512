"""The advisory locks that order PostgreSQL writers: one per tenant, one for the store, and one
per store-wide record the services read, then write.

A tenant's lock key is a 64-bit hash of its key (``hashtextextended``), the same one that
guards making and dropping its partitions (:mod:`.partitions`), so no write of a tenant runs
while its partitions come or go. Locks are always taken in one order: the store lock, then the
tenants' in key order, then at most one record lock; a transaction never waits for a lock that
comes earlier in that order than one it holds, so writers never deadlock on them.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text

from ...tenancy import Tenant

STORE_LOCK = 0x4D4C5752  # "MLWR": shared by every tenant writer, exclusive for store-wide writes
_TENANT = "memlens-tenant:"
_RECORD = "memlens-record:"


def tenant_key(tenant: Tenant) -> str:
    """What ``hashtextextended`` turns into the tenant's lock key."""
    return _TENANT + tenant.key


def take(conn: Connection, tenants: Iterable[Tenant], *, exclusive: bool) -> None:
    """Inside ``conn``'s transaction, until it ends: the store lock exclusively, or the store
    lock shared and then each tenant's lock in key order."""
    mode = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    conn.execute(text(f"SELECT {mode}(:k)"), {"k": STORE_LOCK})
    if exclusive:
        # Every tenant writer, and every making or dropping of partitions, holds the store lock
        # shared: the exclusive one already excludes them, and a migration of thousands of
        # tenants would otherwise fill the server's lock table with their locks.
        return
    for key in sorted({t.key for t in tenants}):
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": _TENANT + key})


def take_record(conn: Connection, name: str) -> None:
    """Inside ``conn``'s transaction, until it ends: the lock of one store-wide record."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": _RECORD + name})


def hold_for_drop(conn: Connection, tenant: Tenant) -> None:
    """On an autocommit connection, until :func:`release`: what a writer of ``tenant`` takes
    (its lock; the store lock shared, so no store-wide write inserts for it either), held across
    the several transactions that detach and drop its partitions."""
    conn.execute(text("SELECT pg_advisory_lock_shared(:k)"), {"k": STORE_LOCK})
    conn.execute(text("SELECT pg_advisory_lock(hashtextextended(:k, 0))"), {"k": tenant_key(tenant)})


def release(conn: Connection) -> None:
    conn.execute(text("SELECT pg_advisory_unlock_all()"))
