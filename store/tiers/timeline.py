"""A tenant's changes over time, from what the store keeps: the moments a debugging person steps
through (each one a moment :meth:`store.memory.MemoryStore.snapshot` can show).

Each tier says which of its rows are changes (its ``changes``, named in :mod:`.registry`): blocks
each version written and each delete (from the block history), facts each recorded and each
change of one's validity (a supersession or a correction), sessions each started and each
checkpoint. Episodes are not listed one by one (a tenant can hold 100k); their times are in the
episodes view. What the history cap or an erasure dropped is not here either.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection

from ..models import Change
from ..tenancy import Tenant
from .changes import Window
from .registry import TIERS


def changes(conn: Connection, tenant: Tenant, *, since: datetime | None, until: datetime | None, limit: int) -> list[Change]:
    """The tenant's changes in ``[since, until)``, newest first, at most ``limit``; changes at
    the same moment in the registry's order of their tiers."""
    window = Window(conn, tenant, since, until, limit)
    found = [change for tier in TIERS if tier.changes is not None for change in tier.changes(window)]
    found.sort(key=lambda change: change.at, reverse=True)
    return found[:limit]
