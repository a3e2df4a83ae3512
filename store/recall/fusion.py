"""Hybrid ordering: one score per candidate, comparable across tiers, from three channels.

Reciprocal rank fusion (``ranking.fuse``) scores a memory by its ranks alone, so a distractor that
shares a few of a paraphrase's words beats the right answer the vector side ranked first, a near-
miss identifier (``OPS-4741`` for ``OPS-4471``) beats the exact one, and every tier's first hit
gets the same 1/61. On the hard quality set (real model) it fell below its better half on four of
five classes: paraphrase recall@5 0.333 against 0.625 for vectors alone, identifiers first 0.476
of the time against 0.976 for keywords alone.

The hybrid score of a candidate (from either list, or the exact channel) is instead

    exact bonus  +  cosine(query, memory)  +  COVERAGE_WEIGHT * coverage ** COVERAGE_POWER

- **exact**: the memory holds an identifier-like token of the query (digits, ``@``, a URL; see
  :func:`identifiers`) verbatim, with word boundaries. It puts that memory first: BM25 sees the
  same word pieces in a near miss (``ops``, ``4471`` / ``4741``), the model sees almost the same text.
- **cosine**: computed for every candidate, keyword-only ones included (one dot product each),
  so a keyword hit is judged by its meaning too; the same model makes it comparable across tiers.
- **coverage**: the share of the query's words the memory holds (after light suffix folding), a
  lexical signal that, unlike BM25, does not depend on the tier's corpus statistics. Raised to the
  fourth power it only counts when most of the query is there: a paraphrase's distractors share one
  or two of its words (coverage 0.2-0.5, adding 0.002-0.06), a question built from common words
  matches its answer on nearly all of them (0.75-1.0, adding 0.3-1.0).

The weight and power were chosen on the even-numbered half of the hard set's queries and checked
on the odd half, which they were not fitted to (see docs/store/recall.md, "Recall quality").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from .query import query_terms
from .ranking import Ranked

# Fitted on the even half of the hard set: 1.0 / 4 kept every class of both halves at or above
# its better half; 0.8 / 4 and 1.2 / 5 did too on the whole set, 0.6 / 3 lost a paraphrase and
# 1.0 / 3 two (weight too high for partial matches), 0.6 / 5 lost a common-words question.
COVERAGE_WEIGHT = 1.0
COVERAGE_POWER = 4
# Above anything the other channels add (cosine <= 1, coverage term <= COVERAGE_WEIGHT).
EXACT_BONUS = 1.0 + COVERAGE_WEIGHT + 1.0

_WORD = re.compile(r"\w+")
_STRIP = "?!,;:()[]{}<>\"'`"
# Bare numbers shorter than this are quantities, times or years ("3 people", "2024"), not ids.
MIN_BARE_NUMBER = 5


def identifiers(query: str) -> list[str]:
    """The query's identifier-like tokens: ticket and invoice numbers, order ids, e-mail
    addresses, version strings, URLs. A token qualifies if it holds a letter beside a digit
    (``OPS-4471``, ``W1048862``), five digits (``#10482``), digits with two separators
    (``2.14.3``), an ``@`` or ``://``."""
    found = []
    for raw in query.split():
        token = raw.strip(_STRIP).rstrip(".")
        if len(token) < 3:
            continue
        digits = sum(c.isdigit() for c in token)
        letters = sum(c.isalpha() for c in token)
        separators = len(token) - digits - letters
        # Numbers with one separator are times, decimals and ranges (9:30, 1.5, 10-12); two make
        # a version or a date (2.14.3, 2025-04-12).
        numeric_id = digits and (letters or digits >= MIN_BARE_NUMBER or separators >= 2)
        if "@" in token[1:-1] or "://" in token or numeric_id:
            found.append(token)
    return list(dict.fromkeys(found))


def identifier_pattern(tokens: Iterable[str]) -> re.Pattern[str] | None:
    """Matches any of the tokens as a whole: not inside a longer id (``INV-3174`` is not in
    ``INV-31174``, ``contact@x.fr`` not in ``contacts@x.fr``), though it may end a sentence."""
    tokens = list(tokens)
    if not tokens:
        return None
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![\w.@/#-])(?:{alternatives})(?![\w@/#]|[.:-]\w)", re.IGNORECASE)


def identifier_phrases(tokens: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """Each identifier's word pieces in order (``("ops", "4471")``), for the keyword index to find
    the memories holding them in sequence: the keyword list alone can rank an exact id below the
    top candidates when its pieces are common words (``2``, ``14``, ``3``)."""
    phrases = (tuple(w.lower() for w in _WORD.findall(t)) for t in tokens)
    return tuple(p for p in dict.fromkeys(phrases) if p)


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """A light suffix fold (plural, -ing, -ed, final e), the same for query and memory words.

    Not FTS5's Porter stemmer: coverage only asks whether a memory holds each query word in some
    form, and a fold done in Python is the same for every tier (blocks and notes have no index)."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _held(text: str) -> set[str]:
    # Each distinct word folded once: a memory repeats its words. (Not lower-cased before the
    # split: "İ" lower-cases to two code points, which the word pattern would split.)
    return set(map(fold, set(_WORD.findall(text))))


@dataclass(frozen=True)
class Query:
    """What fusion needs from the query, worked out once per search."""

    words: tuple[str, ...]
    pattern: re.Pattern[str] | None
    phrases: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, text: str) -> Query:
        # One-letter words ("d" of "I'd", "s" of "children's") carry nothing a memory must hold.
        words = tuple(dict.fromkeys(fold(w) for w in query_terms(text) if len(w) > 1))
        tokens = identifiers(text)
        return cls(words=words, pattern=identifier_pattern(tokens), phrases=identifier_phrases(tokens))

    def coverage(self, text: str) -> float:
        if not self.words:
            return 0.0
        held = _held(text)
        return sum(w in held for w in self.words) / len(self.words)

    def missing(self, text: str) -> list[str]:
        """The query's (folded) words ``text`` holds in no form: what coverage counts against it."""
        held = _held(text)
        return [w for w in self.words if w not in held]

    def exact(self, text: str) -> str | None:
        if self.pattern is None:
            return None
        found = self.pattern.search(text)
        return found.group(0) if found else None


Mode = Literal["hybrid", "keyword", "vector"]


def order(candidates: list[Ranked], texts: dict[int, str], query: Query, mode: Mode) -> list[Ranked]:
    """Score every candidate (``Ranked.score``) and return them best first.

    ``candidates`` come best first by reciprocal rank (``ranking.fuse``), which breaks ties.
    Vector mode scores by cosine and keyword mode keeps the reciprocal-rank score: each is one
    half, measured as such. Hybrid adds the exact and coverage channels to the cosine
    (``Ranked.vector``, filled in for keyword-only candidates by the caller; None counts 0).
    """
    if mode == "vector":
        for c in candidates:
            c.score = c.vector if c.vector is not None else 0.0
        return candidates
    if mode == "keyword":
        for c in candidates:
            c.score = c.fused
        return candidates
    for c in candidates:
        text = texts.get(c.pk, "")
        c.coverage = query.coverage(text)
        c.exact = query.exact(text)
        c.score = (EXACT_BONUS if c.exact else 0.0) + (c.vector or 0.0) + COVERAGE_WEIGHT * c.coverage**COVERAGE_POWER
    return sorted(candidates, key=lambda c: -c.score)


# How many of a tenant's newest memories holding an identifier's words in sequence the exact
# channel reads: an id asked about is held by a handful of memories, and the regular expression
# then decides which of them hold it whole.
EXACT_CANDIDATES = 20
