"""A tenant's memory looked at as it stood at a past moment: what each tier's ``as_of`` reads.

Each tier that shows in a :class:`~store.models.MemorySnapshot` says, in its own module, what it
shows of a tenant at a moment (its ``as_of``, named in :mod:`.registry`): fields of the snapshot,
and in ``gaps`` what it could not rebuild. :mod:`.snapshots` walks the registry to put them
together. A tier shown within another's (a session's keys within its session) declares none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from ..tenancy import Tenant


@dataclass(frozen=True)
class Moment:
    """One tenant at one past moment, read in one read transaction."""

    conn: Connection
    tenant: Tenant
    at: datetime
    recalls_since: datetime | None = None
    """The oldest recall the store still keeps (its trace ttl back from now); None: recalls are
    not asked for (a diff compares the other tiers only)."""
