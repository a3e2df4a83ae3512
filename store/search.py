"""Hybrid recall: exact vector search and SQLite FTS5 keyword search, fused by reciprocal rank.

The tenant partition is part of every candidate query (the vector matrix is the tenant's
own, the FTS join filters on the tenant before LIMIT), so ranking never sees another
tenant's rows. BM25's document statistics are index-wide, as FTS5 keeps them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from sqlalchemy import Connection, column, func, literal_column, select, table

from .schema import episodes_t, facts_t, tenants_t
from .tenancy import Tenant, other_tenants_exist
from .tiers.episodes import filtered

RRF_K = 60
# Shorter prefixes expand to thousands of terms (a 3-letter prefix took 605 ms p95 at 100k rows,
# MEASUREMENTS.md); from four letters the expansion is small and needs no prefix index.
MIN_PREFIX = 4
_TOKEN = re.compile(r"\w+", re.UNICODE)
_MARK = re.compile("\x02(.*?)\x03", re.DOTALL)
# Words so common they only make FTS slow (tens of thousands of matches) and rankings noisy.
STOPWORDS = frozenset(
    "a an and are as at be but by can could did do does for from had has have he her him his how i if in into is it "
    "its me my no not of on or our she so than that the their them then there these they this to too us was we were "
    "what when where which who why will with would you your".split()
)


def query_terms(query: str) -> list[str]:
    words = [w.lower() for w in _TOKEN.findall(query)]
    kept = [w for w in words if w not in STOPWORDS]
    return kept or words


def fts_expression(query: str, *, prefix_last: bool, too_common: set[str] = frozenset()) -> str | None:
    """An FTS5 MATCH expression: any of the query's words; the last one as a prefix while typing.

    Words in ``too_common`` are left out while rarer ones remain: ranking every document that
    holds a very common word is what makes keyword search slow, and its IDF is near zero.
    """
    terms = query_terms(query)
    if not terms:
        return None
    rarer = [t for t in terms if t not in too_common]
    terms = rarer or terms
    parts = [f'"{t}"' for t in dict.fromkeys(terms)]
    if prefix_last and len(terms[-1]) >= MIN_PREFIX and not query.endswith((" ", "\t")):
        parts[-1] = f'"{terms[-1]}"*'
    return " OR ".join(parts)


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


def marked_terms(*highlighted: str) -> list[str]:
    seen: dict[str, None] = {}
    for value in highlighted:
        for term in _MARK.findall(value or ""):
            seen.setdefault(term.lower(), None)
    return list(seen)


def _fts(name: str, match: str, columns: int):
    """The FTS5 table as a selectable, its MATCH condition, its rank and its highlights."""
    fts = table(name, column("rowid"))
    ref = literal_column(name)
    marks = [func.highlight(ref, i, "\x02", "\x03") for i in range(columns)]
    return fts, ref.op("MATCH")(match), func.bm25(ref).label("rank"), marks


COMMON_SHARE = 0.2
# Below this many episodes, a tenant's keyword queries rank every match quickly: nothing is cut.
MIN_EPISODES_FOR_CUT = 1000
# How many of the tenant's most recent episodes holding the word the per-tenant check reads. A
# share near the 20% line is decided either way without harm; 100 halve the cost of 250 (3.7 ms
# against 6.7 ms p50 with two interleaved tenants of 5k episodes, on a loaded machine).
COMMON_WINDOW = 100


def common_terms(conn: Connection, tenant: Tenant, query: str) -> set[str]:
    """Query words so common in this tenant's episodes that they are left out of its keyword query.

    FTS5 keeps document frequencies index-wide, and deciding on those let another tenant's
    writes hide a word that finds one of this tenant's episodes. The index-wide count stays the
    fast path: it is an upper bound, so only a word in more than COMMON_SHARE of all episodes can
    be too common for any tenant, and when no one else has written, it is the tenant's own count.
    Otherwise the tenant's COMMON_WINDOW most recent episodes holding the word are read, and the
    word is too common when they are more than COMMON_SHARE of the tenant's episodes since the
    oldest of them (recent episodes are the ones a keyword query ranks, see MAX_KEYWORD_MATCHES).
    Both reads stop early (LIMIT); either costs at most what the keyword query itself would spend
    walking the word's matches for this tenant.
    """
    terms = list(dict.fromkeys(query_terms(query)))
    if len(terms) < 2:
        return set()
    e = episodes_t
    total = conn.execute(select(func.coalesce(func.max(e.c.pk), 0))).scalar()
    if total < MIN_EPISODES_FOR_CUT:
        return set()
    vocab = table("episodes_fts_vocab", column("term"), column("doc"))
    counts = conn.execute(select(vocab.c.term, vocab.c.doc).where(vocab.c.term.in_(terms))).all()
    candidates = {term for term, docs in counts if docs > COMMON_SHARE * total}
    if not candidates or not other_tenants_exist(conn, tenants_t, tenant):
        return candidates
    own = select(func.count()).select_from(tenant.select(e, e.c.pk).limit(MIN_EPISODES_FOR_CUT).subquery())
    if conn.execute(own).scalar() < MIN_EPISODES_FOR_CUT:
        return set()
    return {term for term in candidates if _common_for(conn, tenant, term)}


def _common_for(conn: Connection, tenant: Tenant, term: str) -> bool:
    e = episodes_t
    fts, match, _, _ = _fts("episodes_fts", f'"{term}"', 2)
    mine = conn.execute(
        select(e.c.pk).select_from(fts.join(e, e.c.pk == fts.c.rowid)).where(match, tenant.owns_unindexed(e))
        .order_by(fts.c.rowid.desc()).limit(COMMON_WINDOW)
    ).scalars().all()
    if not mine:
        return False
    # Too common when the tenant wrote fewer than len(mine) / COMMON_SHARE episodes since the
    # oldest of them: count its episodes from there, up to that many.
    enough = round(len(mine) / COMMON_SHARE)
    since = select(e.c.pk).where(e.c.pk >= min(mine), tenant.owns_unindexed(e)).order_by(e.c.pk).limit(enough)
    written = conn.execute(select(func.count()).select_from(since.subquery())).scalar()
    return written < enough


# A query matching more rows than this ranks the most recent this-many of them by BM25: FTS5
# would otherwise score every match (tens of milliseconds per 10k), and it walks its doclists
# newest first cheaply. Rare words, the ones that carry a query, match fewer rows than this.
MAX_KEYWORD_MATCHES = 1000


def keyword_episodes(
    conn: Connection,
    tenant: Tenant,
    expression: str,
    limit: int,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list[tuple[int, float, list[str]]]:
    e = episodes_t
    fts, match, rank, _ = _fts("episodes_fts", expression, 2)
    newest = tenant.select(e, e.c.pk, rank).select_from(fts.join(e, e.c.pk == fts.c.rowid)).where(match)
    newest = filtered(newest, session_id=session_id, since=since, until=until)
    newest = newest.order_by(fts.c.rowid.desc()).limit(MAX_KEYWORD_MATCHES).subquery()
    stmt = select(newest.c.pk, newest.c.rank).order_by(newest.c.rank).limit(limit)
    return [(pk, -score, []) for pk, score in conn.execute(stmt)]


def episode_highlights(conn: Connection, tenant: Tenant, expression: str, pks: list[int]) -> dict[int, list[str]]:
    """Matched terms of the chosen hits only: highlight() re-tokenises each document it marks."""
    if not pks:
        return {}
    e = episodes_t
    fts, match, _, marks = _fts("episodes_fts", expression, 2)
    # Constraining the FTS table's own rowid lets FTS5 seek each hit instead of evaluating the whole match.
    stmt = tenant.select(e, e.c.pk, *marks).select_from(fts.join(e, e.c.pk == fts.c.rowid)).where(match, fts.c.rowid.in_(pks))
    return {pk: marked_terms(*marked) for pk, *marked in conn.execute(stmt)}


def keyword_facts(conn: Connection, tenant: Tenant, expression: str, limit: int, allowed: set[int] | None):
    f = facts_t
    fts, match, rank, marks = _fts("facts_fts", expression, 3)
    stmt = tenant.select(f, f.c.pk, rank, *marks).select_from(fts.join(f, f.c.pk == fts.c.rowid)).where(match)
    if allowed is not None:
        stmt = stmt.where(f.c.pk.in_(allowed))
    rows = conn.execute(stmt.order_by(rank).limit(limit))
    return [(pk, -score, marked_terms(*marked)) for pk, score, *marked in rows]


# For ASCII text, the words _TOKEN finds are what is left after every other character becomes a
# space; translate and split find them 2-10x faster than the regular expression (measured on
# notes and blocks here). Other text keeps the expression: lower-casing it can change where words
# end ('İ' lower-cases to two characters, the second not a word character).
_ASCII_SPACES = str.maketrans({c: " " for c in map(chr, range(128)) if not _TOKEN.fullmatch(c)})


def bm25_small(query: str, documents: dict[int, str], *, prefix_last: bool) -> list[tuple[int, float, list[str]]]:
    """BM25 over a handful of documents (blocks, scratchpad notes) that have no FTS index.

    One pass over the documents, each tokenised once; only the query's own words are counted,
    and only in documents that hold one. (Counting each term's document frequency anew for every
    document made 3,000 notes with a 10-word query take 6-10 s, and 200 blocks with a 10 KB query
    112-205 s.) Scores equal the straightforward computation's, to the last bit.
    """
    terms = list(dict.fromkeys(query_terms(query)))
    if not terms or not documents:
        return []
    prefix = terms[-1] if prefix_last and len(terms[-1]) >= MIN_PREFIX and not query.endswith(" ") else None
    exact = frozenset(terms) - {prefix}
    counted: list[tuple[int, int, dict[str, int], list[str]]] = []
    frequency: dict[str, int] = {}
    total_length = 0
    for pk, doc in documents.items():
        plain = doc.isascii()
        lowered = doc.lower() if plain else ""
        words = lowered.translate(_ASCII_SPACES).split() if plain else [w.lower() for w in _TOKEN.findall(doc)]
        total_length += len(words)
        found = exact.intersection(words)
        if len(found) < 3:  # list.count is faster than a Counter for a word or two (a typed query)
            tf = {term: words.count(term) for term in found}
        else:
            counts = Counter(words)
            tf = {term: counts[term] for term in found}
        prefixed: list[str] = []
        if prefix is not None and (not plain or prefix in lowered):
            prefixed = [w for w in dict.fromkeys(words) if w.startswith(prefix)]
            if prefixed:
                tf[prefix] = sum(words.count(w) for w in prefixed)
        if tf:
            for term in tf:
                frequency[term] = frequency.get(term, 0) + 1
            counted.append((pk, len(words), tf, prefixed))
    average = total_length / len(documents) or 1.0
    idf = {term: math.log(1 + (len(documents) - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}
    position = {term: index for index, term in enumerate(terms)}
    scored = []
    for pk, length, tf, prefixed in counted:
        norm = 1.2 * (0.25 + 0.75 * length / average)
        ordered = sorted(tf, key=position.__getitem__) if len(tf) > 1 else list(tf)  # query order: the same sum
        score = 0.0
        for term in ordered:
            hits = tf[term]
            score += idf[term] * hits * 2.2 / (hits + norm)
        # The prefix is the query's last word, so its words come last, after the exact ones.
        matched = list(dict.fromkeys(ordered[:-1] + prefixed)) if prefixed else ordered
        scored.append((pk, score, matched))
    return sorted(scored, key=lambda item: -item[1])

