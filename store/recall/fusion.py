"""Hybrid ordering: one score per candidate, comparable across tiers, from five channels.

Reciprocal rank fusion (``ranking.fuse``) scores a memory by its ranks alone, so a distractor that
shares a few of a paraphrase's words beats the right answer the vector side ranked first, a near-
miss identifier (``OPS-4741`` for ``OPS-4471``) beats the exact one, and every tier's first hit
gets the same 1/61. On the hard quality set (real model) it fell below its better half on four of
five classes: paraphrase recall@5 0.333 against 0.625 for vectors alone, identifiers first 0.476
of the time against 0.976 for keywords alone.

The hybrid score of a candidate (from either list, or the exact channel) is instead

    exact bonus  +  cosine  +  COVERAGE_WEIGHT * coverage ** COVERAGE_POWER
                 +  KEYWORD_WEIGHT * keyword standout  +  VECTOR_WEIGHT * vector standout

- **exact**: the memory holds an identifier-like token of the query (digits, ``@``, a URL; see
  :func:`identifiers`) verbatim, with word boundaries. It puts that memory first: BM25 sees the
  same word pieces in a near miss (``ops``, ``4471`` / ``4741``), the model sees almost the same text.
- **cosine**: computed for every candidate, keyword-only ones included (one dot product each),
  so a keyword hit is judged by its meaning too; the same model makes it comparable across tiers.
- **coverage**: the share of the query's words the memory holds (after light suffix folding).
  Raised to the fourth power it only counts when most of the query is there: a paraphrase's
  distractors share one or two of its words (coverage 0.2-0.5, adding 0.002-0.06), a question
  built from common words matches its answer on nearly all of them (0.75-1.0, adding 0.3-1.0).
- **keyword standout**: how far the memory's BM25 stands above the keyword list's mean, in
  standard deviations (0 at or below it, or outside the list). BM25 weighs each query word by
  how rare it is among the tenant's memories, which coverage does not: in a conversation every
  turn holds "did", "when" and the speaker's name, and the one rare word that finds the answer
  is what the keyword side ranks by. Measured as a standout, not a raw score, it is comparable
  across queries, and a list where nothing stands out adds nothing. (Each tier's standouts are
  measured among its own candidates: a tier with many can give its best a larger standout than
  a tier with four.)
- **vector standout**: the same for the cosine, over all candidates, and signed (below the mean
  it takes away): a memory the model puts clearly above the rest gains on one that only ties
  it, wherever the query's cosines lie.

The coverage weight and power were chosen on the project's hard set; the two standout weights
by cross-validation across public sets (a long-conversation memory benchmark and two
short-document collections) and the hard set, each fitted leaving one set out: the same
weights came out of three of the four fits (bench/fusion_fit.py; docs/store/recall.md, "Recall
quality").
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
# Cross-validated over four sets (bench/fusion_fit.py): 0.06 / 0.1 in three fits of four (the
# fit without the hard set chose 0.12 / 0.15, which costs that set's paraphrases). Larger keyword
# weights lift the conversational set's temporal questions further and sink the hard set's
# paraphrases, whose distractors are built to share their words.
KEYWORD_WEIGHT = 0.06
VECTOR_WEIGHT = 0.1
# A standout is counted up to this many standard deviations: the bound keeps EXACT_BONUS above
# everything else, however many candidates a deep recall fuses.
STANDOUT_CAP = 8.0
# Wider than everything the other channels can add together (a cosine spans 2, the coverage term
# COVERAGE_WEIGHT, the keyword standout 0 to its cap, the vector standout minus to plus its cap).
EXACT_BONUS = 2.0 + COVERAGE_WEIGHT + (KEYWORD_WEIGHT + 2 * VECTOR_WEIGHT) * STANDOUT_CAP

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


def held_words(text: str) -> set[str]:
    """The text's words as coverage sees them: each distinct word, folded."""
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
        held = held_words(text)
        return sum(w in held for w in self.words) / len(self.words)

    def missing(self, text: str) -> list[str]:
        """The query's (folded) words ``text`` holds in no form: what coverage counts against it."""
        held = held_words(text)
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
    half, measured as such. Hybrid adds the exact, coverage and standout channels to the cosine
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
    keyword = standouts([c.keyword for c in candidates], signed=False)
    vector = standouts([c.vector or 0.0 for c in candidates], signed=True)
    for c, keyword_standout, vector_standout in zip(candidates, keyword, vector, strict=True):
        text = texts.get(c.pk, "")
        c.coverage = query.coverage(text)
        c.exact = query.exact(text)
        c.keyword_standout, c.vector_standout = keyword_standout, vector_standout
        c.score = (
            (EXACT_BONUS if c.exact else 0.0)
            + (c.vector or 0.0)
            + COVERAGE_WEIGHT * c.coverage**COVERAGE_POWER
            + KEYWORD_WEIGHT * keyword_standout
            + VECTOR_WEIGHT * vector_standout
        )
    return sorted(candidates, key=lambda c: -c.score)


def standouts(scores: list[float | None], *, signed: bool) -> list[float]:
    """How far each score stands from the mean of the scores given, in standard deviations,
    within plus or minus STANDOUT_CAP (not below 0 unless ``signed``). None (not in that list)
    counts 0, and so does every score of a list of fewer than two or of equal scores."""
    known = [s for s in scores if s is not None]
    if len(known) < 2:
        return [0.0] * len(scores)
    mean = sum(known) / len(known)
    spread = (sum((s - mean) ** 2 for s in known) / len(known)) ** 0.5
    if spread <= 1e-9:
        return [0.0] * len(scores)
    floor = -STANDOUT_CAP if signed else 0.0
    return [0.0 if s is None else min(STANDOUT_CAP, max(floor, (s - mean) / spread)) for s in scores]


# How many of a tenant's newest memories holding an identifier's words in sequence the exact
# channel reads: an id asked about is held by a handful of memories, and the regular expression
# then decides which of them hold it whole.
EXACT_CANDIDATES = 20
