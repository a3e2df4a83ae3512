"""Overviews across the tiers: every tenant with its counts, and one tenant at a glance."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TypeVar

from sqlalchemy import Connection, func

from ..models import Profile, TenantSummary, TierCounts
from ..schema import tenants_t
from ..tenancy import Tenant, all_tenants, count_by_tenant, in_groups, key_batches, listed_tenants, user_id_of
from . import blocks, facts
from .registry import COUNTED

# What overviews count per tenant, by TierCounts field.
TIER_TABLES = {tier.name: tier.table for tier in COUNTED}

T = TypeVar("T")

# Sorts a tenant that has no activity time (none is written without one) after all others.
_NEVER = datetime.min.replace(tzinfo=UTC)


def _most_recent_first(tenants: Iterable[T], user_id: Callable[[T], str | None], at: Callable[[T], datetime | None]) -> list[T]:
    """Most recently active first; ties (a frozen clock, one bulk import) by name, anonymous last."""
    by_name = sorted(tenants, key=lambda t: (user_id(t) is None, user_id(t) or ""))
    return sorted(by_name, key=lambda t: at(t) or _NEVER, reverse=True)


def tenant_summaries(conn: Connection, wanted: list[Tenant] | None = None) -> list[TenantSummary]:
    """Every tenant (or those of ``wanted`` that exist) with its counts per tier and last
    activity, in :func:`_most_recent_first` order."""
    keys = None if wanted is None else list(dict.fromkeys(t.key for t in wanted))
    per_tier = {name: count_by_tenant(conn, table, keys) for name, table in TIER_TABLES.items()}
    batches = [None] if keys is None else key_batches(keys)
    rows = [row for batch in batches for row in conn.execute(listed_tenants(tenants_t, tenants_t, keys=batch))]
    summaries = [
        TenantSummary(
            user_id=user_id_of(row.user_id),
            counts=TierCounts(**{name: counts.get(row.user_id, 0) for name, counts in per_tier.items()}),
            last_activity=row.last_activity,
        )
        for row in rows
    ]
    return _most_recent_first(summaries, lambda s: s.user_id, lambda s: s.last_activity)


def tenant_summaries_read(
    read: Callable[[], AbstractContextManager[Connection]], wanted: list[Tenant] | None, per_read: int | None
) -> list[TenantSummary]:
    """:func:`tenant_summaries` in read transactions of at most ``per_read`` tenants each (one
    for all when None): the tenant list first, then its tenants' counts a group at a time. Each
    group is a snapshot of its own, so a tenant made or erased meanwhile may be in or out."""
    if per_read is None:
        with read() as conn:
            return tenant_summaries(conn, wanted)
    if wanted is None:
        with read() as conn:
            wanted = all_tenants(conn, tenants_t)
    wanted = list({t.key: t for t in wanted}.values())  # a tenant asked for twice is one summary
    summaries: list[TenantSummary] = []
    for group in in_groups(wanted, per_read):
        with read() as conn:
            summaries.extend(tenant_summaries(conn, group))
    return _most_recent_first(summaries, lambda s: s.user_id, lambda s: s.last_activity)


def tenant_names(conn: Connection) -> list[str | None]:
    """Every tenant's user id in :func:`tenant_summaries` order, nothing counted."""
    rows = conn.execute(listed_tenants(tenants_t, tenants_t)).all()
    return [user_id_of(row.user_id) for row in _most_recent_first(rows, lambda r: user_id_of(r.user_id), lambda r: r.last_activity)]


def profile(conn: Connection, tenant: Tenant) -> Profile:
    """The tenant's blocks, current facts, counts per tier and activity."""
    block_list = blocks.list_blocks(conn, tenant)
    current = facts.list_facts(conn, tenant, valid_at=None, subject=None, include_history=False)
    counts = TierCounts(**{name: conn.execute(tenant.select(table, func.count())).scalar() for name, table in TIER_TABLES.items()})
    activity = conn.execute(tenant.select(tenants_t)).first()
    return Profile(
        user_id=tenant.user_id,
        blocks={b.name: b.content for b in block_list},
        facts=current,
        counts=counts,
        first_activity=activity.created_at if activity else None,
        last_activity=activity.last_activity if activity else None,
    )
