"""Reciprocal rank fusion: one candidate's standing in the vector and keyword lists, and the fused order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

RRF_K = 60


@dataclass
class Ranked:
    """One candidate's standing in each list."""

    pk: int
    vector: float | None = None
    vector_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    matched: list[str] = field(default_factory=list)
    # Set by fusion.order: what the hits are ordered by, and the hybrid channels behind it.
    score: float = 0.0
    coverage: float | None = None
    exact: str | None = None
    keyword_standout: float | None = None
    vector_standout: float | None = None

    @property
    def fused(self) -> float:
        return sum(1.0 / (RRF_K + r) for r in (self.vector_rank, self.keyword_rank) if r is not None)


def fuse(vector_hits: Iterable[tuple[int, float]], keyword_hits: Iterable[tuple[int, float, list[str]]]) -> list[Ranked]:
    """Reciprocal rank fusion of two best-first lists; ties keep the vector order."""
    ranked: dict[int, Ranked] = {}
    for rank, (pk, score) in enumerate(vector_hits, start=1):
        ranked[pk] = Ranked(pk=pk, vector=float(score), vector_rank=rank)
    for rank, (pk, score, matched) in enumerate(keyword_hits, start=1):
        entry = ranked.setdefault(pk, Ranked(pk=pk))
        entry.keyword, entry.keyword_rank, entry.matched = float(score), rank, matched
    return sorted(ranked.values(), key=lambda r: -r.fused)
