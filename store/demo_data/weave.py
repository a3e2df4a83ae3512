"""Seeded building blocks for the full demo: topics of templated turns woven into sessions over
weeks, plus hand-written "planted" episodes the facts and the demo guide's queries (docs/demo.md) point at.

Everything is drawn from one ``random.Random(seed)`` in a fixed order, so the same seed gives the
same bytes of content (texts, times, tool calls) on every run and every machine.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..validation import clock_fixed_at

if TYPE_CHECKING:
    from ..memory import MemoryStore

SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Turn:
    """One exchange: a user line and the agent's answer, with ``{slot}`` placeholders, and the
    tool the agent called (its arguments are the filled slots it names)."""

    user: str
    agent: str
    tool: str | None = None
    tool_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Topic:
    """A kind of session: its id pattern (``{n}`` counts sessions of this topic), its turns, the
    values its slots draw from, and the slots that keep one value for a whole session (a hotel
    session is about one city)."""

    session: str
    turns: tuple[Turn, ...]
    slots: dict[str, tuple[str, ...]]
    sticky: tuple[str, ...] = ()


@dataclass(frozen=True)
class Planted:
    """A hand-written episode at a fixed time (days before ``now``); ``key`` names it for facts."""

    days_ago: float
    session: str
    user: str
    agent: str
    key: str | None = None
    tool: dict[str, Any] | None = None


@dataclass(frozen=True)
class Fact:
    subject: str
    predicate: str
    object: str
    days_ago: float
    source: str | None = None  # a Planted key
    confidence: float = 1.0


@dataclass
class Persona:
    """Everything one tenant gets. ``working`` writes the session tier (keys, task state,
    scratchpad, checkpoints) once the episodes exist; it gets the store, the tenant and the
    planted episodes' ids by key."""

    user_id: str | None
    episodes: list[dict[str, Any]]
    keys: dict[str, int]  # planted key -> index in episodes
    blocks: list[tuple[str, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    working: Callable[..., None] | None = None
    earlier_blocks: list[tuple[float, str, str]] = field(default_factory=list)
    """Versions of the blocks before ``blocks``: (days ago, name, content), written at that time."""


def fill(template: str, rng: random.Random, slots: dict[str, tuple[str, ...]], chosen: dict[str, str]) -> str:
    """``template`` with each ``{slot}`` replaced; a slot used twice in one turn keeps its value."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in chosen:
            chosen[name] = rng.choice(slots[name])
        return chosen[name]

    text = SLOT.sub(value, template)
    return text[:1].upper() + text[1:]


def weave(
    rng: random.Random,
    topics: list[Topic],
    *,
    now: datetime,
    days: int,
    sessions: int,
    turns: tuple[int, int],
    planted: list[Planted],
    model: str,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``sessions`` sessions spread over the last ``days`` days, ``turns`` (min, max) exchanges
    each, a few minutes apart, in daytime hours; the planted episodes merged in by time.
    Returns remember_many() items, oldest first, and the planted keys' indexes."""
    drawn: list[tuple[datetime, int, str | None, dict[str, Any]]] = []
    counts: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    step = timedelta(days=days) / sessions
    for number in range(sessions):
        topic = topics[rng.randrange(len(topics))]
        counts[topic.session] = counts.get(topic.session, 0) + 1
        session = topic.session.format(n=counts[topic.session])
        start = (now - timedelta(days=days) + number * step).replace(hour=rng.randrange(7, 21), minute=rng.randrange(60))
        if start > now - timedelta(hours=3):  # the newest sessions end before "now", not after it
            start -= timedelta(days=1)
        order = rng.sample(range(len(topic.turns)), k=min(len(topic.turns), rng.randint(*turns)))
        when = start
        kept = {name: rng.choice(topic.slots[name]) for name in topic.sticky}
        position = 0
        for index in sorted(order):
            turn = topic.turns[index]
            for _ in range(4):  # a memory said twice word for word reads as a bug: draw other slots
                chosen = dict(kept)
                user, agent = fill(turn.user, rng, topic.slots, chosen), fill(turn.agent, rng, topic.slots, chosen)
                if (user, agent) not in seen:
                    break
            else:
                continue
            seen.add((user, agent))
            position += 1
            tools = (
                []
                if turn.tool is None
                else [{"name": turn.tool, "arguments": {name: chosen[name] for name in turn.tool_args if name in chosen}, "result": "ok"}]
            )
            drawn.append(
                (
                    when,
                    len(drawn),
                    None,
                    {
                        "input": user,
                        "output": agent,
                        "session_id": session,
                        "occurred_at": when,
                        "tool_calls": tools,
                        "metadata": {"model": model, "turn": position},
                    },
                )
            )
            when += timedelta(minutes=rng.randint(2, 9), seconds=rng.randrange(60))
    for plant in planted:
        when = now - timedelta(days=plant.days_ago)
        drawn.append(
            (
                when,
                len(drawn),
                plant.key,
                {
                    "input": plant.user,
                    "output": plant.agent,
                    "session_id": plant.session,
                    "occurred_at": when,
                    "tool_calls": [plant.tool] if plant.tool else [],
                    "metadata": {"model": model},
                },
            )
        )
    drawn.sort(key=lambda entry: (entry[0], entry[1]))
    keys = {key: index for index, (_, _, key, _) in enumerate(drawn) if key is not None}
    return [item for *_, item in drawn], keys


@contextmanager
def after_episode(store: MemoryStore, user_id: str | None, episode_id: str, delay: timedelta = timedelta(minutes=5)) -> Iterator[None]:
    """What the block writes is stamped ``delay`` after the episode it follows in the story (a
    checkpoint before the injury is dated before it), not at the moment the demo is built."""
    occurred = store.get_episode(episode_id, user_id=user_id).occurred_at
    with clock_fixed_at(occurred + delay):
        yield
