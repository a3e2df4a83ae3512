"""Looking at the selected tenant's memory as it stood at a past moment.

The App keeps the moment shown (``as_of``: None is now, live). The moments a user steps through
are the tenant's changes (``MemoryStore.timeline``): blocks written, facts recorded or changed,
sessions started or checkpointed. Stepping back undoes one change at a time: from now it goes to
the moment before the latest change (the latest change's own moment shows what now shows), and
stepping forward from the moment before the latest change comes back to now.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .formatting import parse_day

TICK = timedelta(microseconds=1)  # the smallest step of the store's clock
"""The moment just before a change: the memory without it."""

NOW = "now"
"""What the timeline dismisses with to go back to the present."""


def moments_of(changes: list[Any]) -> list[datetime]:
    """The distinct moments of a tenant's changes, oldest first."""
    return sorted({c.at for c in changes})


def _state_moment(moments: list[datetime], shown: datetime | None) -> datetime | None:
    """The change whose state is on screen: the latest at or before ``shown`` (None: before the first)."""
    if shown is None:
        return moments[-1]
    reached = [m for m in moments if m <= shown]
    return reached[-1] if reached else None


def step_back(moments: list[datetime], shown: datetime | None) -> datetime | None:
    """The moment one change before the state shown, or None when there is none earlier."""
    if not moments:
        return None
    current = _state_moment(moments, shown)
    if current is None:
        return None  # already before the first change
    earlier = [m for m in moments if m < current]
    return earlier[-1] if earlier else current - TICK


def step_forward(moments: list[datetime], shown: datetime) -> datetime | str:
    """The moment one change after the one shown; NOW after the change before the latest (the
    latest change's moment would show what now shows)."""
    later = [m for m in moments if m > shown]
    return NOW if len(later) <= 1 else later[0]


def parse_moment(text: str, now: datetime) -> datetime:
    """'2026-11-18', '2026-11-18 14:02' or a full ISO time, read as UTC. A day alone is its end
    (what the memory held when that day was over). Raises ValueError, with what to type."""
    try:
        value = parse_day(text, end=True)  # a day alone: the start of the next, one tick after its end
    except ValueError:
        value = None
    if value is None:
        raise ValueError("moments look like 2026-11-18 or 2026-11-18 14:02 (UTC)")
    if len(text.strip()) == 10:
        value -= TICK
    if value > now:
        raise ValueError("that moment is still to come: the views show now, live")
    return value


def moment_label(at: datetime) -> str:
    """A moment as the header shows it: to the second, since changes are often seconds apart."""
    return at.strftime("%Y-%m-%d %H:%M:%S")


def diff_title(a: datetime, b: datetime | None) -> str:
    return f"{moment_label(a)} → {'now' if b is None else moment_label(b)}"


def up_to(until: datetime | None, at: datetime | None) -> datetime | None:
    """An exclusive end for an episodes query that also stops at the moment shown (inclusive)."""
    if at is None:
        return until
    return min(until, at + TICK) if until is not None else at + TICK


def past_counts(snapshot: Any) -> Any:
    """The overview's counts per tier, of a snapshot."""
    from store.models import TierCounts

    return TierCounts(
        blocks=len(snapshot.blocks),
        episodes=snapshot.episodes,
        facts=len(snapshot.facts),
        sessions=len(snapshot.sessions),
        kv_entries=sum(len(s.kv) for s in snapshot.sessions),
    )


def session_source(then: Any) -> str:
    """Where a session's state at a past moment comes from, in words (store.models.SessionSnapshot)."""
    if then.source == "checkpoint":
        return f"as of its checkpoint at {moment_label(then.checkpoint_at)}: later changes until the moment are not shown"
    if then.source == "unknown":
        return "changed since, with no checkpoint by then: its state at that moment cannot be rebuilt"
    return ""
