"""Erasure that leaves nothing behind: rows of every tier, what was derived from them (keyword
index entries, vectors, facts resting only on erased episodes, checkpoint snapshots holding
erased notes), and finally the bytes on disk.

Each tier's scope is one ``select`` of row keys, used both to count (dry run) and to delete,
so the receipt of a dry run and of the real erase cannot disagree.

A session or a date range goes in one write transaction (a crash leaves all or nothing). A whole
tenant, the large case, goes in steps: one transaction counts it, writes the audit entry and
the tenant's erasure marker (:func:`store.tenancy.erasing_key`), from which moment the tenant
reads as gone everywhere and its writers wait; then short transactions delete
``STEP_ROWS`` rows each, so other tenants' writers (which on SQLite take turns with these)
wait a step, not the whole erasure; the last one removes the marker. A process that dies in
between leaves the marker, and the next read-write open (or scrub) finishes the steps: the
erasure, once committed, rolls forward.

The transaction that deletes the last rows records a pending scrub; then the backend rewrites
its keyword indexes (deleted terms otherwise stay in old segments) and flushes erased pages out
of its log (old WAL frames keep old pages). Until both are done the record says so, in the
store, so any later process can finish the work.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, func, select

from ..backend import sql
from ..schema import (
    audit_t,
    kv_t,
    meta_t,
    tenants_t,
    vectors_t,
)
from ..tenancy import ERASING_PREFIX, Tenant, any_row, erasing_key, keys_and_tenants, tenants_having
from ..tiers.erasing import Erasing, Scope
from ..tiers.registry import ERASE_ORDER, TIERS, VECTOR_KINDS
from ..validation import utcnow


def erasing(conn: Connection, scope: Scope) -> Erasing:
    """The erasure of ``scope``, with every tier's rule from the registry."""
    return Erasing(sql(conn), scope, {tier.name: tier.erased for tier in TIERS if tier.erased is not None})


def scopes(e: Erasing) -> dict[str, Select[Any]]:
    """For each tier the erasure touches, the keys of the rows it removes (each tier's module
    says which: its ``erased`` rule in the registry)."""
    return {tier.name: keys for tier in TIERS if tier.erased is not None and (keys := e.keys(tier.name)) is not None}


_CHUNK = 30_000  # under SQLite's 32,766 bound variables


RECEIPT_ORDER = [*(tier.name for tier in ERASE_ORDER), "vectors"]


def count(conn: Connection, scope: Scope) -> dict[str, int]:
    stmts = scopes(erasing(conn, scope))
    counts: dict[str, int] = {
        name: conn.execute(select(func.count()).select_from(stmt.subquery())).scalar_one() for name, stmt in stmts.items()
    }
    counts["vectors"] = _vector_count(conn, scope, stmts)
    return {name: counts.get(name, 0) for name in RECEIPT_ORDER}


def _vector_count(conn: Connection, scope: Scope, stmts: dict[str, Select[Any]]) -> int:
    total = 0
    for name, stmt in stmts.items():
        if name in VECTOR_KINDS:
            total += conn.execute(
                scope.tenant.select(vectors_t, func.count()).where(vectors_t.c.kind == VECTOR_KINDS[name], vectors_t.c.item_pk.in_(stmt))
            ).scalar_one()
    return total


def delete(conn: Connection, scope: Scope) -> dict[str, int]:
    """Delete everything in scope inside the caller's transaction; returns what was there.

    The counts come from the very key lists that are deleted, selected by the statements
    :func:`count` counts, so a dry run and the erase agree.
    """
    e = erasing(conn, scope)
    stmts = scopes(e)
    counts = {"vectors": _vector_count(conn, scope, stmts)}
    keys = {name: conn.execute(stmt).scalars().all() for name, stmt in stmts.items()}
    counts.update((name, len(k)) for name, k in keys.items())
    for tier in TIERS:
        if tier.before_deleting is not None and tier.name in keys:
            tier.before_deleting(e, conn, keys[tier.name])
    for tier in ERASE_ORDER:
        if tier.name not in keys:
            continue
        table_, key = tier.table, tier.key
        ids = keys[tier.name]
        for start in range(0, len(ids), _CHUNK):
            conn.execute(scope.tenant.delete(table_).where(key.in_(ids[start : start + _CHUNK])))
    if scope.whole_tenant:
        # Vectors of every kind are removed by triggers with their rows; this catches any orphan.
        conn.execute(scope.tenant.delete(vectors_t))
        conn.execute(scope.tenant.delete(tenants_t))
    return {name: counts.get(name, 0) for name in RECEIPT_ORDER}


# --- the pending scrub and the erasure counter, kept in memlens_meta --------------------------

PENDING_KEY = "scrub_pending"
ERASURES_KEY = "erasures"


# Read before every search: built once (building it cost about a tenth of a millisecond a search).
_ERASURE_COUNT = select(meta_t.c.value).where(meta_t.c.key == ERASURES_KEY)


def erasure_count(conn: Connection) -> int:
    """How many erasures were ever committed to this file, by any process: caches compare it."""
    value = conn.execute(_ERASURE_COUNT).scalar()
    return int(value) if value else 0


def erasures_after(conn: Connection, after: int) -> list[tuple[int, str]]:
    """(audit key, tenant key) of every erasure this file recorded after audit key ``after``,
    oldest first: a cache that saw the erasure counter move drops only these tenants. Each
    erasure writes one such entry in the transaction that bumps the counter (``count_erasure``);
    forget never deletes audit entries, so a reader can check the two agree."""
    return keys_and_tenants(conn, audit_t, audit_t.c.pk, audit_t.c.action == "forget", audit_t.c.origin == "local", audit_t.c.pk > after)


def read_pending(conn: Connection) -> dict[str, Any] | None:
    """``{"since", "indexes", "erasures": [[tenant key, audit digest], ...]}`` or None.
    ``indexes`` is true while the keyword indexes still need rewriting."""
    value = conn.execute(select(meta_t.c.value).where(meta_t.c.key == PENDING_KEY)).scalar()
    return None if value is None else json.loads(value)


def _put(conn: Connection, key: str, value: str) -> None:
    sql(conn).upsert(conn, meta_t, {"key": key, "value": value}, ["key"], {"value": value})


# The erasure counter and the pending-scrub record are each one record for the whole store,
# read and then written by writers of different tenants, which may run at once on a server:
# each change takes the record's lock before it reads (SQLite's writers take turns anyway).
RECORD_LOCK = "scrub"


def lock_records(conn: Connection) -> None:
    """Inside a write transaction, before reading the counter or the pending record to change them."""
    sql(conn).serialise(conn, RECORD_LOCK)


def write_pending(conn: Connection, pending: dict[str, Any] | None) -> None:
    if pending is None or (not pending["erasures"] and not pending["indexes"] and not pending.get("expired")):
        conn.execute(meta_t.delete().where(meta_t.c.key == PENDING_KEY))
    else:
        _put(conn, PENDING_KEY, json.dumps(pending, sort_keys=True))


def count_erasure(conn: Connection) -> None:
    """In the transaction that commits an erasure (with its audit entry): every process's
    caches see the counter move and drop the erased tenant's vectors."""
    lock_records(conn)
    _put(conn, ERASURES_KEY, str(erasure_count(conn) + 1))


def mark_pending(conn: Connection, tenant: Tenant, digest: str, at: datetime) -> None:
    """In the transaction that deletes an erasure's last rows: record that their bytes still need scrubbing."""
    lock_records(conn)
    pending = read_pending(conn) or {"since": at.isoformat(), "indexes": True, "erasures": []}
    pending["indexes"] = True
    pending["erasures"].append([tenant.key, digest])
    write_pending(conn, pending)


# --- a whole tenant, in steps behind its erasure marker -----------------------------------------

# Rows deleted per step. A step of 1,000 episodes (their keyword entries and vectors go with
# them) held SQLite's one write lock at most 39 ms at 100k episodes on a 2-core machine
# (bench/forget_bench.py), where the whole 10k-episode tenant in one transaction held it
# 0.46-0.73 s; smaller steps add commits for no gain another writer would feel.
STEP_ROWS = 1000
# The longest rest between two steps (see erase_in_steps).
MAX_REST_S = 0.2


def begin_tenant_erasure(conn: Connection, tenant: Tenant, digest: str) -> None:
    """In the transaction that counts the tenant and writes the erasure's audit entry (whose
    ``digest`` the marker keeps for the pending scrub): from its commit the tenant reads as
    gone and its writers wait; :func:`erase_step` does the rest."""
    count_erasure(conn)
    _put(conn, erasing_key(tenant.key), digest)


def tenant_erasures_under_way(conn: Connection) -> list[Tenant]:
    """Tenants whose erasure was committed and not finished (its process may have died)."""
    keys = conn.execute(select(meta_t.c.key).where(meta_t.c.key.startswith(ERASING_PREFIX, autoescape=True))).scalars()
    return [Tenant(key[len(ERASING_PREFIX) :]) for key in keys]


def erase_step(conn: Connection, tenant: Tenant, at: datetime) -> bool:
    """One step of a whole-tenant erasure, inside its own write transaction: delete up to
    :data:`STEP_ROWS` rows, tier by tier in :data:`ERASE_ORDER`; when that leaves none, also the
    tenant row and the marker, and record the pending scrub. True once the erasure is over
    (also when another process finished it)."""
    digest = conn.execute(select(meta_t.c.value).where(meta_t.c.key == erasing_key(tenant.key))).scalar()
    if digest is None:
        return True
    budget = STEP_ROWS
    for tier in ERASE_ORDER:
        owned = tenant.owns_while_erasing(tier.table)
        keys = conn.execute(select(tier.key).where(owned).limit(budget)).scalars().all()
        if keys:
            conn.execute(tier.table.delete().where(owned, tier.key.in_(keys)))
            budget -= len(keys)
            if not budget:
                return False  # the tier may hold more: the next step looks again
    # Vectors of every kind are removed by triggers with their rows; this catches any orphan.
    conn.execute(vectors_t.delete().where(tenant.owns_while_erasing(vectors_t)))
    conn.execute(tenants_t.delete().where(tenant.owns_while_erasing(tenants_t)))
    conn.execute(meta_t.delete().where(meta_t.c.key == erasing_key(tenant.key)))
    mark_pending(conn, tenant, digest, at)
    return True


def erase_in_steps(write: Callable[[], AbstractContextManager[Connection]], tenant: Tenant) -> None:
    """Every step of a committed whole-tenant erasure, each in its own transaction from ``write``.

    Between two steps it rests as long as the last one took: a writer kept waiting by SQLite's
    busy handler sleeps between its tries (up to 100 ms each), and a next step begun at once
    would find the lock free before the writer woke, again and again."""
    while True:
        began = time.monotonic()
        with write() as conn:
            if erase_step(conn, tenant, utcnow()):
                return
        time.sleep(min(time.monotonic() - began, MAX_REST_S))


def purge_expired_kv(conn: Connection, now: datetime) -> int:
    """Delete every expired key-value entry of every tenant (reads and exports already hide them)."""
    return conn.execute(kv_t.delete().where(kv_t.c.expires_at.is_not(None), kv_t.c.expires_at <= now)).rowcount


def purge_tenant_expired_kv(conn: Connection, tenant: Tenant, now: datetime) -> int:
    """Delete the tenant's expired key-value entries and, if there were any, record that their
    bytes still need scrubbing (the tenant's storage is rewritten as after an erasure; no
    audit entry, since nobody asked for it)."""
    purged = conn.execute(tenant.delete(kv_t).where(kv_t.c.expires_at.is_not(None), kv_t.c.expires_at <= now)).rowcount
    if purged:
        lock_records(conn)
        pending = read_pending(conn) or {"since": now.isoformat(), "indexes": False, "erasures": []}
        pending["expired"] = sorted({*pending.get("expired", []), tenant.key})
        write_pending(conn, pending)
    return purged


def tenants_with_expired_kv(conn: Connection, now: datetime, keys: list[str] | None = None) -> list[Tenant]:
    return tenants_having(conn, kv_t, kv_t.c.expires_at.is_not(None), kv_t.c.expires_at <= now, keys=keys)


def has_expired_kv(conn: Connection, now: datetime, keys: list[str] | None = None) -> bool:
    return any_row(conn, kv_t, kv_t.c.expires_at.is_not(None), kv_t.c.expires_at <= now, keys=keys)
