"""Why a memory did (or did not) come back from a recall: :meth:`store.memory.MemoryStore.explain`.

Built on the read API alone (so every view explains as a store does): the memory is looked up by
id in the tenant; the recall's filters are checked against it one by one, in the order the
search applies them (tenant, kind, session, time, a fact's validity); a memory they all let
through is looked for in the same recall run deeper (``DEPTH`` results), and its scores are
compared with those of the last hit the asked ``limit`` returned. The words a memory lacks are
counted as the hybrid ranking's coverage counts them (each query word in some form).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UnknownEpisodeError
from ..models import AuditEntry, Episode, Fact, RecallExplanation, RecallHit, ScoreBreakdown, WhyNot
from ..tiers.episodes import embed_text
from ..tiers.facts import fact_text
from .fusion import Query, fold
from .query import query_terms

if TYPE_CHECKING:
    from .hits import Mode
    from .service import RecallScope


class Reader(Protocol):
    """What explaining needs of a store: its read API (a store or any view has it)."""

    def recall(
        self,
        query: str,
        *,
        user_id: str | None,
        limit: int,
        session_id: str | None,
        time_range: tuple[datetime | None, datetime | None] | None,
        kind: RecallScope,
        mode: Mode,
    ) -> list[RecallHit]: ...

    def get_episode(self, episode_id: str, *, user_id: str | None) -> Episode: ...

    def facts(
        self, *, user_id: str | None, subject: str | None = ..., predicate: str | None = ..., include_history: bool = ...
    ) -> list[Fact]: ...

    def audit_log(self, *, user_id: str | None, missing_ok: bool) -> list[AuditEntry]: ...


DEPTH = 1000
"""How deep a recall is run to find where a memory ranks (recall's own largest limit)."""

_SCOPES = {"episode": ("episodic", "all"), "fact": ("facts", "all")}


def explain(
    store: Reader,
    query: str,
    memory_id: str,
    *,
    user_id: str | None,
    limit: int,
    session_id: str | None,
    time_range: tuple[datetime | None, datetime | None] | None,
    kind: RecallScope,
    mode: Mode,
) -> RecallExplanation:
    # The recall itself checks every argument, before anything is looked up.
    results = store.recall(query, user_id=user_id, limit=limit, session_id=session_id, time_range=time_range, kind=kind, mode=mode)
    memory = _find(store, memory_id, user_id)

    def answer(**fields: Any) -> RecallExplanation:
        base: dict[str, Any] = {"kind": None, "returned": False, "rank": None, "scores": None, "cut": None, "missing_words": []}
        return RecallExplanation(query=query, memory_id=memory_id, limit=limit, **{**base, **fields})

    if memory is None:
        erasures = sum(1 for e in store.audit_log(user_id=user_id, missing_ok=True) if e.action == "forget" and e.origin == "local")
        detail = "this tenant holds no memory with that id: it was never stored for this tenant, belongs to another, or was erased"
        if erasures:
            detail += f" (the tenant's audit log records {erasures} erasure{'s' if erasures != 1 else ''}; receipts hold no content)"
        return answer(causes=[WhyNot(cause="not_held", detail=detail)])
    memory_kind = "episode" if isinstance(memory, Episode) else "fact"
    words = Query.of(query)
    missing = _missing_words(query, words, _text(memory))
    filtered = _filtered(store, memory, user_id, session_id, time_range, kind)
    if filtered:
        return answer(kind=memory_kind, missing_words=missing, causes=filtered)
    deeper = store.recall(query, user_id=user_id, limit=DEPTH, session_id=session_id, time_range=time_range, kind=kind, mode=mode)
    cut = results[limit - 1].scores if len(results) >= limit else None
    rank = next((i for i, h in enumerate(deeper, start=1) if h.id == memory_id and h.kind == memory_kind), None)
    known = dict(kind=memory_kind, rank=rank, scores=None if rank is None else deeper[rank - 1].scores, cut=cut, missing_words=missing)
    if any(h.id == memory_id and h.kind == memory_kind for h in results):
        return answer(returned=True, causes=[], **known)
    if rank is not None:
        causes = [WhyNot(cause="ranked_below", detail=_below(rank, limit, deeper[rank - 1], cut, mode))]
    else:
        causes = [
            WhyNot(
                cause="beyond_depth",
                detail=f"not among the {len(deeper)} results the search ranked: no channel put it near the query"
                + (" (keyword search finds only memories that hold a query word)" if mode == "keyword" else ""),
            )
        ]
    if missing:
        held = len(words.words) - len(missing)
        causes.append(
            WhyNot(
                cause="words_missing",
                detail=f"it holds {held} of the query's {_words(held + len(missing))}; none of {', '.join(repr(w) for w in missing)} in any form",
            )
        )
    return answer(causes=causes, **known)


def _words(n: int) -> str:
    return "1 word" if n == 1 else f"{n} words"


def _find(store: Reader, memory_id: str, user_id: str | None) -> Episode | Fact | None:
    try:
        return store.get_episode(memory_id, user_id=user_id)
    except UnknownEpisodeError:
        pass
    return next((f for f in store.facts(user_id=user_id, include_history=True) if f.id == memory_id), None)


def _text(memory: Episode | Fact) -> str:
    """The text the memory is searched by (its tier's own rule)."""
    if isinstance(memory, Episode):
        return embed_text(memory.input, memory.output)
    return fact_text(memory.subject, memory.predicate, memory.object)


def _missing_words(query: str, words: Query, text: str) -> list[str]:
    """The query's words ``text`` holds in no form, as the query spells them."""
    spelled = {fold(w): w for w in query_terms(query)}
    return [spelled.get(w, w) for w in words.missing(text)]


def _filtered(
    store: Reader,
    memory: Episode | Fact,
    user_id: str | None,
    session_id: str | None,
    time_range: tuple[datetime | None, datetime | None] | None,
    kind: RecallScope,
) -> list[WhyNot]:
    memory_kind = "episode" if isinstance(memory, Episode) else "fact"
    if kind not in _SCOPES[memory_kind]:
        return [
            WhyNot(
                cause="kind", detail=f"it is {'an episode' if memory_kind == 'episode' else 'a fact'}; the recall searched kind={kind!r}"
            )
        ]
    causes: list[WhyNot] = []
    if isinstance(memory, Episode):
        if session_id is not None and memory.session_id != session_id:
            held = "no session" if memory.session_id is None else f"session {memory.session_id!r}"
            causes.append(WhyNot(cause="session", detail=f"it belongs to {held}; the recall searched session {session_id!r} only"))
        since, until = time_range or (None, None)
        if (since is not None and memory.occurred_at < since) or (until is not None and memory.occurred_at >= until):
            causes.append(
                WhyNot(
                    cause="time",
                    detail=f"it occurred at {memory.occurred_at.isoformat()}, outside the recall's time range "
                    f"[{since.isoformat() if since else 'the beginning'}, {until.isoformat() if until else 'now'})",
                )
            )
        return causes
    if memory.valid_until is not None:
        later = [
            f
            for f in store.facts(user_id=user_id, subject=memory.subject, predicate=memory.predicate, include_history=True)
            if f.id != memory.id and f.valid_from == memory.valid_until
        ]
        if later:
            causes.append(
                WhyNot(
                    cause="superseded",
                    detail=f"superseded at {memory.valid_until.isoformat()} by fact {later[0].id} ({later[0].object!r}); "
                    "recall searches the facts believed now",
                )
            )
        else:
            causes.append(
                WhyNot(
                    cause="expired",
                    detail=f"expired at {memory.valid_until.isoformat()}: no longer believed, and no fact replaced it; "
                    "recall searches the facts believed now",
                )
            )
    return causes


def _below(rank: int, limit: int, hit: RecallHit, cut: ScoreBreakdown | None, mode: Mode) -> str:
    mine = hit.scores
    if cut is None:
        return f"ranked {rank}"
    text = f"ranked {rank}, below the {limit} returned: score {mine.score:.3f} against {cut.score:.3f} for the last one returned"
    channels = []
    if mine.vector is not None and cut.vector is not None:
        channels.append(f"cosine {mine.vector:.3f} against {cut.vector:.3f}")
    if mode == "hybrid" and mine.coverage is not None and cut.coverage is not None:
        channels.append(f"query words held {mine.coverage:.0%} against {cut.coverage:.0%}")
    if mode == "hybrid" and mine.keyword_standout is not None and cut.keyword_standout is not None:
        channels.append(f"keyword standout {mine.keyword_standout:.2f} against {cut.keyword_standout:.2f}")
    if cut.exact and not mine.exact:
        channels.append(f"the last one returned holds the identifier {cut.exact!r} verbatim")
    if mode == "keyword":
        channels.append(f"keyword rank {mine.keyword_rank or '-'} against {cut.keyword_rank or '-'}")
    return text + (f" ({'; '.join(channels)})" if channels else "")
