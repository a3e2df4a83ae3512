"""The keyword index on SQLite: FTS5 tables over episodes and facts, ranked by BM25.

The tenant partition is part of every candidate query (the FTS join filters on the tenant
before LIMIT), so ranking never sees another tenant's rows. FTS5's BM25 statistics are
index-wide: they are the tenant's own only while it holds every episode; otherwise the
candidates are ranked over the tenant's own statistics (:mod:`.tenant_bm25`), so another
tenant's writes never change the order of this tenant's hits, nor which words its query keeps
(:func:`common_terms` reads the tenant's episodes only).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BindParameter,
    ColumnClause,
    ColumnElement,
    Connection,
    Function,
    Label,
    Select,
    TableClause,
    bindparam,
    column,
    func,
    literal_column,
    select,
    table,
    text,
)

from ...schema import episodes_t, facts_t
from ...tenancy import Tenant
from ..interface import KeywordHit
from ..shared import (
    COMMON_WINDOW,
    MAX_KEYWORD_MATCHES,
    MIN_EPISODES_FOR_CUT,
    RARE_MATCHES,
    DataVersionCache,
    filtered,
    is_rare,
    marked_terms,
)
from ..shared import is_common as common_rule
from . import highlight, tenant_bm25
from .small_tenants import SmallTenantIndexes
from .tenant_bm25 import TenantStatistics


def fts_expression(terms: list[str], *, min_prefix: int | None, too_common: AbstractSet[str] = frozenset()) -> str | None:
    """An FTS5 MATCH expression: any of the query's words; the last one as a prefix (while
    typing) when it is at least ``min_prefix`` letters long.

    Words in ``too_common`` are left out while rarer ones remain: ranking every document that
    holds a very common word is what makes keyword search slow, and its IDF is near zero.
    Every word is quoted, so nothing a user types is FTS5 syntax.
    """
    if not terms:
        return None
    rarer = [t for t in terms if t not in too_common]
    terms = rarer or terms
    parts = [f'"{t}"' for t in dict.fromkeys(terms)]
    if min_prefix is not None and len(terms[-1]) >= min_prefix:
        parts[-1] = f'"{terms[-1]}"*'
    return " OR ".join(parts)


def _fts(name: str, match: str, columns: int) -> tuple[TableClause, ColumnElement[bool], Label[Any], list[Function[Any]]]:
    """The FTS5 table as a selectable, its MATCH condition, its rank and its highlights."""
    fts = table(name, column("rowid"))
    ref: ColumnClause[Any] = literal_column(name)
    marks = [func.highlight(ref, i, "\x02", "\x03") for i in range(columns)]
    return fts, ref.op("MATCH")(match), func.bm25(ref).label("rank"), marks


def common_terms(conn: Connection, tenant: Tenant, terms: list[str]) -> set[str]:
    """Query words so common in this tenant's episodes that they are left out of its keyword query.

    Only the tenant's own episodes decide (see :func:`is_common`): another tenant's writes never
    change what this tenant's query keeps. (A first screen by the word's share of all episodes
    let a word stop being cut for one tenant because others wrote thousands of episodes without
    it; and it looked the word up unstemmed in FTS5's vocabulary, which holds stems, so 'invoice'
    or 'plans' were never found there and never cut.)
    """
    terms = list(dict.fromkeys(terms))
    if len(terms) < 2 or not large_enough(conn, tenant):
        return set()
    return {term for term in terms if is_common(conn, tenant, term)}


def large_enough(conn: Connection, tenant: Tenant) -> bool:
    e = episodes_t
    own = select(func.count()).select_from(tenant.select(e, e.c.pk).limit(MIN_EPISODES_FOR_CUT).subquery())
    held: int = conn.execute(own).scalar_one()
    return held >= MIN_EPISODES_FOR_CUT


# The two reads of :func:`is_common`, built once per tenant with the word bound: built each time,
# with the word written into the statement, SQLAlchemy compiled them anew for every word, about as
# long as the reads themselves (a new word's check took 1-3 ms at 100k episodes).
@lru_cache(maxsize=256)
def _newest_holding(tenant: Tenant) -> Select[Any]:
    e, fts = episodes_t, table("episodes_fts", column("rowid"))
    match = literal_column("episodes_fts").op("MATCH")(bindparam("word"))
    stmt = select(e.c.pk).select_from(fts.join(e, e.c.pk == fts.c.rowid)).where(match, tenant.owns_unindexed(e))
    return stmt.order_by(fts.c.rowid.desc()).limit(bindparam("window"))


@lru_cache(maxsize=256)
def _written_since(tenant: Tenant) -> Select[Any]:
    e = episodes_t
    since = select(e.c.pk).where(e.c.pk >= bindparam("oldest"), tenant.owns_unindexed(e)).order_by(e.c.pk).limit(bindparam("enough"))
    return select(func.count()).select_from(since.subquery())


def is_common(conn: Connection, tenant: Tenant, term: str) -> bool:
    """The common-word rule (:func:`store.backend.shared.is_common`) over FTS5, which walks a
    word's matches newest first; its first read costs at most what the keyword query itself
    spends walking them."""
    return common_rule(
        lambda window: conn.execute(_newest_holding(tenant), {"word": f'"{term}"', "window": window}).scalars().all(),
        lambda oldest, enough: conn.execute(_written_since(tenant), {"oldest": oldest, "enough": enough}).scalar_one(),
    )


class CommonWords:
    """:func:`common_terms` with its per-tenant answers kept until anyone commits (a
    :class:`..shared.DataVersionCache`).

    Search as you type asks about the same words at every keystroke, and the per-word reads cost
    about 1 ms each at 100k episodes. Answers are computed in a read transaction of their own,
    begun after the change counter was read, and kept under that reading: a commit that lands
    meanwhile changes the counter, so an answer is never older than the counter it is kept under.
    """

    def __init__(
        self, read: Callable[[], AbstractContextManager[Connection]], data_version: Callable[[], int], statistics: TenantStatistics
    ):
        self._read, self._data_version, self._statistics = read, data_version, statistics
        self._cache = DataVersionCache()

    def __call__(self, tenant: Tenant, terms: list[str]) -> set[str]:
        terms = list(dict.fromkeys(terms))
        if len(terms) < 2:
            return set()
        version, missing = self._data_version(), DataVersionCache.MISSING
        large = self._cache.get(version, (tenant.key, "large"))
        known = {t: self._cache.get(version, (tenant.key, "common", t)) for t in terms}
        known = {t: common for t, common in known.items() if common is not missing}
        if large is False or (large is not missing and len(known) == len(terms)):
            return {t for t, common in known.items() if common} if large else set()
        unknown = [t for t in terms if t not in known]
        if large is missing:
            # First, and alone: a small tenant cuts nothing, and the counts below walk the
            # whole store's matches of each word, whatever the tenant's size.
            with self._read() as conn:
                large = large_enough(conn, tenant)
            if not large:
                self._cache.keep(version, {(tenant.key, "large"): False})
                return set()
        # A word in fewer than COMMON_WINDOW episodes of the whole store is in fewer of the
        # tenant's: not common, without reading its matches. The count is the one the keyword
        # search asks for next (is the word rare?), kept for it until the next commit.
        counts = self._statistics.capped_matches([f'"{t}"' for t in unknown], RARE_MATCHES + 1)
        few = {t for t, n in zip(unknown, counts, strict=True) if n < COMMON_WINDOW}
        with self._read() as conn:
            fresh = {t: t not in few and is_common(conn, tenant, t) for t in unknown}
        self._cache.keep(version, {(tenant.key, "large"): True} | {(tenant.key, "common", t): common for t, common in fresh.items()})
        return {t for t, common in {**known, **fresh}.items() if common}


# FTS5 walks its doclists newest first cheaply, so the newest MAX_KEYWORD_MATCHES come at once.
_EPISODES_FTS = table("episodes_fts", column("rowid"))
_EPISODES_REF: ColumnClause[Any] = literal_column("episodes_fts")
_MATCHES = _EPISODES_REF.op("MATCH")(bindparam("expression"))
_FILTERS: dict[str, BindParameter[Any]] = {"session_id": bindparam("session_id"), "since": bindparam("since"), "until": bindparam("until")}


# Search as you type runs these statements at every keystroke: built with SQLAlchemy each time
# they cost 0.65 ms of the keystroke's CPU (and its highlights as much again); built once per
# tenant and filter shape, with the values bound, 0.09 ms (100k episodes, cProfile and
# thread_time). Tenants are few in one process; the cache holds the most recent 256 shapes.
@lru_cache(maxsize=256)
def _newest_matches(tenant: Tenant, session: bool, since: bool, until: bool) -> Select[Any]:
    e = episodes_t
    newest = tenant.select(e, e.c.pk, func.bm25(_EPISODES_REF).label("rank"))
    newest = newest.select_from(_EPISODES_FTS.join(e, e.c.pk == _EPISODES_FTS.c.rowid)).where(_MATCHES)
    newest = filtered(newest, **_shape(session, since, until))
    window = newest.order_by(_EPISODES_FTS.c.rowid.desc()).limit(bindparam("window")).subquery()
    return select(window.c.pk, window.c.rank).order_by(window.c.rank).limit(bindparam("limit"))


@lru_cache(maxsize=256)
def _every_match_of(tenant: Tenant, session: bool, since: bool, until: bool) -> Select[Any]:
    """The best of the query's matches that also match ``:rare`` (its rare words), all of them
    ranked. The outer MATCH drives (one cursor, so bm25's statistics are read once); the unary
    plus keeps SQLite from driving it by rowid instead, which re-reads them per row (0.35 s for
    1,000 rows at 100k episodes, where this takes 1-4 ms)."""
    e = episodes_t
    rare_rows: Select[Any] = (
        select(literal_column("rowid"))
        .select_from(table("episodes_fts"))
        .where(literal_column("episodes_fts").op("MATCH")(bindparam("rare")))
        .correlate(None)
    )
    stmt = tenant.select(e, e.c.pk, func.bm25(_EPISODES_REF).label("rank"))
    stmt = stmt.select_from(_EPISODES_FTS.join(e, e.c.pk == _EPISODES_FTS.c.rowid)).where(_MATCHES)
    stmt = stmt.where(literal_column("+episodes_fts.rowid").in_(rare_rows.scalar_subquery()))
    stmt = filtered(stmt, **_shape(session, since, until))
    return stmt.order_by(literal_column("rank")).limit(bindparam("limit"))


def rare_words(expression: str, statistics: TenantStatistics) -> list[str]:
    """The expression's words (not a prefix being typed) in at most RARE_MATCHES episodes of the
    whole store, so of any tenant. A word rare in this tenant but common in others is not found
    here; its matches are ranked as the newest of the query's, as before."""
    parts = expression.split(" OR ")  # fts_expression's own form: each part one quoted word
    words = [part for part in parts if not part.endswith("*")]
    return [word for word, n in zip(words, statistics.capped_matches(words, RARE_MATCHES + 1), strict=True) if is_rare(False, n)]


@lru_cache(maxsize=256)
def _phrase_matches(tenant: Tenant, session: bool, since: bool, until: bool) -> Select[Any]:
    e = episodes_t
    stmt = tenant.select(e, e.c.pk).select_from(_EPISODES_FTS.join(e, e.c.pk == _EPISODES_FTS.c.rowid)).where(_MATCHES)
    stmt = filtered(stmt, **_shape(session, since, until))
    return stmt.order_by(_EPISODES_FTS.c.rowid.desc()).limit(bindparam("limit"))


@lru_cache(maxsize=256)
def _texts_by_key(tenant: Tenant) -> Select[Any]:
    e = episodes_t
    return tenant.select_keys(e, e.c.pk, bindparam("keys", expanding=True)).with_only_columns(e.c.pk, e.c.input, e.c.output)


def _shape(session: bool, since: bool, until: bool) -> dict[str, Any]:
    return {name: _FILTERS[name] if on else None for name, on in (("session_id", session), ("since", since), ("until", until))}


def _filter_values(session_id: str | None, since: datetime | None, until: datetime | None) -> dict[str, Any]:
    return {name: value for name, value in (("session_id", session_id), ("since", since), ("until", until)) if value is not None}


_SIZES = text("SELECT id, sz FROM episodes_fts_docsize WHERE id IN (SELECT value FROM json_each(:keys))")


def ranked_by_tenant(
    conn: Connection,
    tenant: Tenant,
    expression: str,
    limit: int,
    filters: dict[str, Any],
    totals: tuple[int, int],
    statistics: TenantStatistics,
) -> list[tuple[int, float, list[str]]]:
    """The query's candidates (its newest MAX_KEYWORD_MATCHES matches, and every match of its
    words rare in the tenant's episodes) ranked by BM25 over the tenant's own statistics: those
    FTS5's score leaves in reach of the best (:func:`.tenant_bm25.shortlist`), exactly."""
    shape = (filters.get("session_id") is not None, filters.get("since") is not None, filters.get("until") is not None)
    items = expression.split(" OR ")  # fts_expression's own form: each part one quoted word
    matches = statistics.matches(tenant, items)
    totals = statistics.totals(tenant) or totals  # the totals counted with those matches, in one read
    # The statements FTS5's own ranking uses, with limits that keep every candidate: the whole
    # window, and every match of the rare words (at most as many as their counts).
    values = {"expression": expression, "window": MAX_KEYWORD_MATCHES, "limit": MAX_KEYWORD_MATCHES, **filters}
    scores: dict[int, float] = dict(conn.execute(_newest_matches(tenant, *shape), values).all())
    rare = {item: n for item, n in zip(items, matches, strict=True) if is_rare(item.endswith("*"), n)}
    if rare:
        every = {**values, "rare": " OR ".join(rare), "limit": sum(rare.values())}
        scores.update(conn.execute(_every_match_of(tenant, *shape), every).all())
    sizes = conn.execute(_SIZES, {"keys": json.dumps(list(scores))}).all() if scores else []
    candidates = {pk: (-scores[pk], sum(tenant_bm25.varints(sz))) for pk, sz in sizes}
    index = (statistics.store_totals(), statistics.matches(None, items))
    keys = tenant_bm25.shortlist(candidates, (totals, matches), index, limit)
    rows = [tuple(row) for row in conn.execute(_texts_by_key(tenant), {"keys": keys})] if keys else []
    return [(pk, score, []) for pk, score in tenant_bm25.rank(rows, items, totals, matches, limit)]


def keyword_episodes(
    conn: Connection,
    tenant: Tenant,
    expression: str,
    limit: int,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
    statistics: TenantStatistics,
) -> list[tuple[int, float, list[str]]]:
    totals = statistics.totals(tenant)
    if totals is not None:  # FTS5's statistics are not the tenant's alone
        return ranked_by_tenant(conn, tenant, expression, limit, _filter_values(session_id, since, until), totals, statistics)
    shape = (session_id is not None, since is not None, until is not None)
    values = {"expression": expression, "window": MAX_KEYWORD_MATCHES, "limit": limit, **_filter_values(session_id, since, until)}
    found: dict[int, float] = dict(conn.execute(_newest_matches(tenant, *shape), values).all())
    rare = rare_words(expression, statistics)
    if rare:
        found.update(conn.execute(_every_match_of(tenant, *shape), {**values, "rare": " OR ".join(rare)}).all())
    best = sorted(found.items(), key=lambda hit: (hit[1], -hit[0]))[:limit]  # bm25: lower is better
    return [(pk, -score, []) for pk, score in best]


def phrases_expression(phrases: list[tuple[str, ...]]) -> str:
    # Quoted, so a phrase is its words in sequence and nothing in them is FTS5 syntax.
    return " OR ".join('"' + " ".join(words).replace('"', '""') + '"' for words in phrases if words)


def phrase_episodes(
    conn: Connection,
    tenant: Tenant,
    phrases: list[tuple[str, ...]],
    limit: int,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list[int]:
    expression = phrases_expression(phrases)
    if not expression:
        return []
    stmt = _phrase_matches(tenant, session_id is not None, since is not None, until is not None)
    values = {"expression": expression, "limit": limit, **_filter_values(session_id, since, until)}
    return list(conn.execute(stmt, values).scalars())


def episode_highlights(
    conn: Connection, tenant: Tenant, expression: str, pks: list[int], texts: Mapping[int, tuple[str, str]] | None = None
) -> dict[int, list[str]]:
    """Matched terms of the chosen hits only, marked outside the big index (see :mod:`.highlight`)."""
    if not pks:
        return {}
    if texts is not None:
        given: list[tuple[Any, ...]] = [(pk, *texts[pk]) for pk in pks if pk in texts]
        return highlight.mark(expression, given, 2)
    return highlight.mark(expression, conn.execute(_texts_by_key(tenant), {"keys": list(pks)}), 2)


def keyword_facts(conn: Connection, tenant: Tenant, expression: str, limit: int, allowed: set[int] | None) -> list[KeywordHit]:
    f = facts_t
    fts, match, rank, marks = _fts("facts_fts", expression, 3)
    stmt = tenant.select(f, f.c.pk, rank, *marks).select_from(fts.join(f, f.c.pk == fts.c.rowid)).where(match)
    if allowed is not None:
        stmt = stmt.where(f.c.pk.in_(allowed))
    rows = conn.execute(stmt.order_by(rank).limit(limit))
    return [(pk, -score, marked_terms(*marked)) for pk, score, *marked in rows]


class SqliteKeywordIndex:
    """:class:`store.backend.interface.KeywordIndex` on the FTS5 tables of one store; ``read`` and
    ``data_version`` are the store's (see :class:`CommonWords`)."""

    def __init__(self, read: Callable[[], AbstractContextManager[Connection]], data_version: Callable[[], int]):
        self.statistics = TenantStatistics(read, data_version)
        self.common_words = CommonWords(read, data_version, self.statistics)
        self.small_tenants = SmallTenantIndexes(read, data_version)

    def drop_tenant(self, tenant: Tenant) -> None:
        self.small_tenants.drop(tenant)

    def expression(self, conn: Connection, tenant: Tenant, terms: list[str], *, min_prefix: int | None, cut_common: bool) -> str | None:
        common = self.common_words(tenant, terms) if cut_common else set()
        return fts_expression(terms, min_prefix=min_prefix, too_common=common)

    # The statements themselves are module functions (cached per tenant and filter shape).
    def episodes(
        self,
        conn: Connection,
        tenant: Tenant,
        expression: str,
        limit: int,
        session_id: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[KeywordHit]:
        own = self.small_tenants(tenant)
        if own is not None:
            return own.ranked(expression, limit, session_id, since, until)
        return keyword_episodes(conn, tenant, expression, limit, session_id, since, until, self.statistics)

    def episode_highlights(
        self, conn: Connection, tenant: Tenant, expression: str, pks: list[int], texts: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, list[str]]:
        return episode_highlights(conn, tenant, expression, pks, texts)

    def facts(self, conn: Connection, tenant: Tenant, expression: str, limit: int, allowed: set[int] | None) -> list[KeywordHit]:
        return keyword_facts(conn, tenant, expression, limit, allowed)

    def phrase_episodes(
        self,
        conn: Connection,
        tenant: Tenant,
        phrases: list[tuple[str, ...]],
        limit: int,
        session_id: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[int]:
        own = self.small_tenants(tenant)
        if own is not None:
            expression = phrases_expression(phrases)
            return own.newest(expression, limit, session_id, since, until) if expression else []
        return phrase_episodes(conn, tenant, phrases, limit, session_id, since, until)


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import KeywordIndex

    _implements_keywordindex: type[KeywordIndex] = SqliteKeywordIndex
