"""A tenant's memory as it stood at a past moment, tier by tier, from the history the store keeps.

What can be rebuilt exactly, and what cannot (each snapshot lists the latter in ``gaps``):

- **Blocks**: exactly, from their versions (:mod:`store.tiers.blocks`); a block whose version at
  that moment the history cap dropped is left out.
- **Facts**: exactly, as the store held them then (:func:`store.tiers.facts.list_facts` with
  ``known_at``): recorded by then, each with the validity it had then.
- **Episodes**: those whose ``occurred_at`` is not later than the moment. Episodes carry no time
  of writing, so one written later with an earlier ``occurred_at`` (an import, a backfill) shows
  as if it had been there.
- **Sessions** (key-value entries, task state, scratchpad): they keep no change history, by
  choice: an agent writes them at every turn (keys with a time to live, task progress), a copy of
  every write would double that tier's writes and hold values past their expiry, and checkpoints
  are where an agent already says "keep this state". A
  session that has not changed since the moment is shown as it is now ("current": its keys live
  at that moment; a key that expired since and was purged is missing). A session changed since is
  shown as its latest checkpoint taken by then ("checkpoint", with its id and time: changes
  between that checkpoint and the moment are not in it), or not at all ("unknown").
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func

from ..models import (
    BlockChange,
    Episode,
    KeyValueEntry,
    MemoryDiff,
    MemorySnapshot,
    ScratchpadEntry,
    SessionChange,
    SessionSnapshot,
)
from ..schema import checkpoints_t, episodes_t, from_micros, kv_t, scratch_t, sessions_t, task_t
from ..tenancy import Tenant
from . import blocks, episodes, facts, sessions

RECENT_EPISODES = 20
RECENT_RECALLS = 20


def memory_at(conn: Connection, tenant: Tenant, at: datetime) -> MemorySnapshot:
    e = episodes_t
    count = conn.execute(tenant.select(e, func.count()).where(e.c.occurred_at <= at)).scalar_one()
    recent_rows = conn.execute(
        tenant.select(e).where(e.c.occurred_at <= at).order_by(e.c.occurred_at.desc(), e.c.pk.desc()).limit(RECENT_EPISODES)
    )
    recent: list[Episode] = [episodes.to_model(r) for r in recent_rows]
    counts: dict[str, int] = dict(
        conn.execute(
            tenant.select(e, e.c.session_id, func.count())
            .where(e.c.session_id.is_not(None), e.c.occurred_at <= at)
            .group_by(e.c.session_id)
        ).all()
    )
    sessions = [
        _session_at(conn, tenant, row, at).model_copy(update={"episodes": counts.get(row.session_id, 0)})
        for row in conn.execute(tenant.select(sessions_t).where(sessions_t.c.created_at <= at).order_by(sessions_t.c.session_id))
    ]
    gaps = [f"session {s.session_id!r}: changed since, and no checkpoint by then" for s in sessions if s.source == "unknown"]
    gaps += [
        f"session {s.session_id!r}: as of its checkpoint at {s.checkpoint_at.isoformat()}"
        for s in sessions
        if s.source == "checkpoint" and s.checkpoint_at
    ]
    return MemorySnapshot(
        user_id=tenant.user_id,
        as_of=at,
        blocks=blocks.blocks_as_of(conn, tenant, at),
        facts=facts.list_facts(conn, tenant, valid_at=None, subject=None, include_history=False, known_at=at),
        episodes=count,
        recent_episodes=recent,
        sessions=sessions,
        gaps=gaps,
    )


def _session_at(conn: Connection, tenant: Tenant, session: Any, at: datetime) -> SessionSnapshot:
    pk = session.pk
    if session.updated_at <= at:
        kv = conn.execute(tenant.select(kv_t).where(kv_t.c.session_pk == pk).order_by(kv_t.c.key)).all()
        task = conn.execute(tenant.select(task_t).where(task_t.c.session_pk == pk)).first()
        notes = conn.execute(tenant.select(scratch_t).where(scratch_t.c.session_pk == pk).order_by(scratch_t.c.pk)).all()
        return SessionSnapshot(
            session_id=session.session_id,
            source="current",
            updated_at=session.updated_at,
            kv=[sessions.kv_entry(r) for r in kv if r.expires_at is None or r.expires_at > at],
            task_state=None if task is None else sessions.task_state_of(task.state),
            scratchpad=[ScratchpadEntry(id=n.pk, created_at=n.created_at, content=n.content) for n in notes],
        )
    c = checkpoints_t
    checkpoint = conn.execute(
        tenant.select(c).where(c.c.session_pk == pk, c.c.created_at <= at).order_by(c.c.created_at.desc(), c.c.pk.desc())
    ).first()
    if checkpoint is None:
        return SessionSnapshot(session_id=session.session_id, source="unknown")
    held = json.loads(checkpoint.snapshot)
    return SessionSnapshot(
        session_id=session.session_id,
        source="checkpoint",
        checkpoint_id=checkpoint.id,
        checkpoint_at=checkpoint.created_at,
        updated_at=checkpoint.created_at,
        kv=[
            KeyValueEntry(
                key=key,
                value=json.loads(item["value"]),
                expires_at=None if item["expires_at"] is None else from_micros(item["expires_at"]),
                updated_at=checkpoint.created_at,
            )
            for key, item in sorted(held["kv"].items())
            if item["expires_at"] is None or from_micros(item["expires_at"]) > at
        ],
        task_state=sessions.task_state_of(held["task_state"]),
        scratchpad=[ScratchpadEntry(id=0, created_at=from_micros(n["created_at"]), content=n["content"]) for n in held["scratchpad"]],
    )


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
