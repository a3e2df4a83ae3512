"""A tenant's memory as it stood at a past moment, and what changed between two, from the
history the store keeps.

Each tier says what it shows at a moment and what it cannot rebuild (its ``as_of``, named in
:mod:`.registry`): blocks and facts exactly, episodes by their time, sessions as far as their
checkpoints go (:func:`store.tiers.sessions.as_of` says why they keep no history), the latest
recalls kept. A snapshot is what every tier shows, its ``gaps`` what any could not rebuild.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from ..models import BlockChange, MemoryDiff, MemorySnapshot, SessionChange, SessionSnapshot
from ..tenancy import Tenant
from . import sessions
from .moments import Moment
from .registry import TIERS


def memory_at(conn: Connection, tenant: Tenant, at: datetime, *, recalls_since: datetime | None = None) -> MemorySnapshot:
    """Every tier of the tenant as it stood at ``at``; recalls only with ``recalls_since``."""
    moment = Moment(conn, tenant, at, recalls_since)
    shown: dict[str, Any] = {"gaps": []}
    for tier in TIERS:
        if tier.as_of is not None:
            fields = tier.as_of(moment)
            shown["gaps"] += fields.pop("gaps", [])
            shown.update(fields)
    return MemorySnapshot(user_id=tenant.user_id, as_of=at, **shown)


def diff(conn: Connection, tenant: Tenant, a: datetime, b: datetime) -> MemoryDiff:
    """From the snapshot at ``a`` to the snapshot at ``b``."""
    first, second = memory_at(conn, tenant, a), memory_at(conn, tenant, b)
    before_blocks, after_blocks = {x.name: x.content for x in first.blocks}, {x.name: x.content for x in second.blocks}
    blocks = [
        BlockChange(name=name, before=before_blocks.get(name), after=after_blocks.get(name))
        for name in sorted(before_blocks.keys() | after_blocks.keys())
        if before_blocks.get(name) != after_blocks.get(name)
    ]
    before_facts, after_facts = {f.id: f for f in first.facts}, {f.id: f for f in second.facts}
    sessions_before = {x.session_id: x for x in first.sessions}
    sessions = []
    for later in second.sessions:
        earlier = sessions_before.pop(later.session_id, None)
        change = _session_change(later.session_id, earlier, later)
        if change is not None:
            sessions.append(change)
    for earlier in sessions_before.values():  # gone by the second moment
        change = _session_change(earlier.session_id, earlier, None)
        if change is not None:
            sessions.append(change)
    return MemoryDiff(
        user_id=tenant.user_id,
        a=a,
        b=b,
        blocks=blocks,
        facts_added=[f for i, f in after_facts.items() if i not in before_facts],
        facts_removed=[f for i, f in before_facts.items() if i not in after_facts],
        episodes_added=second.episodes - first.episodes,
        sessions=sessions,
        gaps=[f"at {a.isoformat()}: {gap}" for gap in first.gaps] + [f"at {b.isoformat()}: {gap}" for gap in second.gaps],
    )


def _session_change(session_id: str, earlier: SessionSnapshot | None, later: SessionSnapshot | None) -> SessionChange | None:
    old = {} if earlier is None else {e.key: e.value for e in earlier.kv}
    new = {} if later is None else {e.key: e.value for e in later.kv}
    old_notes = [] if earlier is None else [n.content for n in earlier.scratchpad]
    new_notes = [] if later is None else [n.content for n in later.scratchpad]
    before, after = (None if earlier is None else earlier.task_state), (None if later is None else later.task_state)
    changes = sessions.state_changes(old, new, old_notes, new_notes)
    if not any(changes.values()) and before == after:
        return None
    return SessionChange(session_id=session_id, task_state_before=before, task_state_after=after, **changes)
