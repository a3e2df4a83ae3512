"""A kept recall run again, now or as of its own moment, and compared with what it returned:
:meth:`store.memory.MemoryStore.replay`.

Built on the read API alone, as explaining is: the trace's call is made again with its own
arguments through recalls that are not traced themselves. Every memory either run returned gets
a row: its rank and score in each, and its text as the tenant holds it now (None: no longer held,
so an erased memory shows as gone, never as it was).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotFoundError
from ..models import Block, Episode, Fact, RecallHit, RecallReplay, RecallTrace, ReplayedHit

if TYPE_CHECKING:
    from .hits import Mode


class Reader(Protocol):
    """What replaying needs of a store: its recalls (untraced) and its lookups by id."""

    def recall(self, query: str, *, user_id: str | None, **arguments: Any) -> list[RecallHit]: ...

    def recall_facts(self, query: str, *, user_id: str | None, limit: int, valid_at: datetime | None, mode: Mode) -> list[RecallHit]: ...

    def search_keys(self, query: str, *, user_id: str | None, limit: int, mode: Mode) -> list[RecallHit]: ...

    def get_episode(self, episode_id: str, *, user_id: str | None) -> Episode: ...

    def facts(self, *, user_id: str | None, include_history: bool = ...) -> list[Fact]: ...

    def get_block(self, name: str, *, user_id: str | None) -> Block | None: ...


def _moment(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def replay(store: Reader, trace: RecallTrace, *, then: bool) -> RecallReplay:
    """``trace``'s call made again now, or (``then``) as of the moment it was made."""
    a, user, notes = trace.arguments, trace.user_id, []
    at = trace.at if then else None
    if trace.call == "recall":
        since, until = _moment(a.get("since")), _moment(a.get("until"))
        if then:
            until = at if until is None or until > at else until  # type: ignore[operator]
            if a.get("kind", "episodic") != "episodic":
                notes.append(
                    "episodes as of the recall's moment (those that had occurred by then); facts, blocks and notes as they are now"
                )
        time_range = None if since is None and until is None else (since, until)
        hits = store.recall(
            trace.query,
            user_id=user,
            limit=a.get("limit", 5),
            session_id=trace.session_id,
            time_range=time_range,
            kind=a.get("kind", "episodic"),
            mode=a.get("mode", "hybrid"),
            prefix=a.get("prefix", False),
        )
    elif trace.call == "recall_facts":
        valid_at = _moment(a.get("valid_at"))
        if then and valid_at is None:
            valid_at = at
            notes.append("the facts believed at the recall's moment, as the store knows them now")
        hits = store.recall_facts(trace.query, user_id=user, limit=a.get("limit", 5), valid_at=valid_at, mode=a.get("mode", "hybrid"))
    else:
        if a.get("among") is not None:
            notes.append(f"the recall searched among {a['among']} keys, which the trace does not name: replayed over every searchable key")
        if then:
            notes.append("keys as they are now: keys keep no history")
        hits = store.search_keys(trace.query, user_id=user, limit=a.get("limit", 10), mode=a.get("mode", "hybrid"))
    return RecallReplay(trace=trace, as_of=at, hits=hits, rows=_rows(store, trace, hits), notes=notes)


def _rows(store: Reader, trace: RecallTrace, hits: list[RecallHit]) -> list[ReplayedHit]:
    traced = {(h.kind, h.id): (rank, h.scores.score) for rank, h in enumerate(trace.hits, 1)}
    rows = []
    for rank, h in enumerate(hits, 1):
        was = traced.get((h.kind, h.id))
        rows.append(
            ReplayedHit(
                kind=h.kind,
                id=h.id,
                text=h.text,
                held=True,
                traced_rank=None if was is None else was[0],
                traced_score=None if was is None else was[1],
                replayed_rank=rank,
                replayed_score=h.scores.score,
            )
        )
    replayed = {(h.kind, h.id) for h in hits}
    for rank, kept in enumerate(trace.hits, 1):
        if (kept.kind, kept.id) not in replayed:
            held, text = _held_now(store, trace.user_id, kept.kind, kept.id)
            rows.append(ReplayedHit(kind=kept.kind, id=kept.id, text=text, held=held, traced_rank=rank, traced_score=kept.scores.score))
    return rows


def _held_now(store: Reader, user: str | None, kind: str, memory_id: str) -> tuple[bool | None, str | None]:
    """Whether the tenant still holds the memory, and its text now; (None, None) for a note or a
    key, which are not looked up by id."""
    try:
        if kind == "episode":
            e = store.get_episode(memory_id, user_id=user)
            return True, f"{e.input}\n{e.output}".strip()
        if kind == "fact":
            f = next((f for f in store.facts(user_id=user, include_history=True) if f.id == memory_id), None)
            return (False, None) if f is None else (True, f"{f.subject} {f.predicate} {f.object}")
        if kind == "block":
            b = store.get_block(memory_id, user_id=user)
            return (False, None) if b is None else (True, b.content)
    except NotFoundError:
        return False, None
    return None, None
