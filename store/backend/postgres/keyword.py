"""The keyword index on PostgreSQL: the generated ``search`` tsvector (GIN-indexed) on episodes
and facts, ranked by BM25 as FTS5 ranks, so hybrid fusion and the score breakdown mean the same
on both backends.

PostgreSQL's own ``ts_rank_cd`` is not BM25 (no inverse document frequency, no length
normalisation against the average), so the candidates are ranked here: BM25 with FTS5's
constants (k1 = 1.2, b = 0.75, IDF floored at 1e-6) over the tenant's own statistics, its
episode count, average token count and each word's document count. Those are the tenant's
alone (its partition), where FTS5's are index-wide. As on SQLite, a query matching more than
:data:`MAX_KEYWORD_MATCHES` of a tenant's episodes ranks the newest that many, and every match
of its rare words (:func:`store.backend.shared.is_rare`).

Nothing the user types becomes query syntax: the words arrive already split (``\\w+``), each is
turned into a tsquery by ``plainto_tsquery`` (or, for the last word while typing, a quoted
literal with ``:*``) from a bound parameter, and the expression handed between calls is a
tsquery's own text form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BindParameter,
    ColumnClause,
    ColumnElement,
    Connection,
    Label,
    Select,
    Table,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import TSQUERY, array

from ...schema import episodes_t, facts_t
from ...tenancy import Tenant
from ..interface import KeywordHit
from ..shared import MAX_KEYWORD_MATCHES, MIN_EPISODES_FOR_CUT, DataVersionCache, bm25, filtered, is_common, is_rare, marked_terms

_ITEM = re.compile(r"'((?:[^']|'')*)'(:\*)?")
_HEADLINE = "StartSel=\x02, StopSel=\x03, HighlightAll=true"


def _query_sql(terms: list[str], prefix_last: bool) -> tuple[str, dict[str, str]]:
    parts, params = [], {}
    for i, term in enumerate(terms):
        params[f"t{i}"] = term
        if prefix_last and i == len(terms) - 1:
            parts.append(f"to_tsquery('memlens', quote_literal(memlens_fold(:t{i})) || ':*')")
        else:
            parts.append(f"plainto_tsquery('memlens', memlens_fold(:t{i}))")
    return " || ".join(parts), params


def items(expression: str) -> list[tuple[str, bool]]:
    """The (lexeme, is prefix) pairs of a tsquery's text form, each once."""
    found = [(m.group(1).replace("''", "'"), bool(m.group(2))) for m in _ITEM.finditer(expression)]
    return list(dict.fromkeys(found))


def _search(table: Table) -> tuple[ColumnClause[Any], ColumnClause[Any]]:
    return literal_column(f"{table.name}.search"), literal_column(f"{table.name}.search_length")


def _matches(table: Table, query: ColumnElement[Any]) -> ColumnElement[bool]:
    search, _ = _search(table)
    return search.op("@@")(query)


def _as_query(expression: str) -> ColumnElement[Any]:
    return cast(bindparam("expression", expression), TSQUERY)


def _item_query(lexeme: str, prefix: bool) -> ColumnElement[Any]:
    # A lexeme already normalised: cast, not parsed by to_tsquery, so it is not stemmed twice.
    quoted = func.quote_literal(lexeme)
    return cast(quoted.concat(":*") if prefix else quoted, TSQUERY)


def _totals(conn: Connection, tenant: Tenant, table: Table, cache: StatisticsCache) -> tuple[int, float]:
    """The tenant's row count and average token count in ``table``."""
    _, length = _search(table)
    count, average = cache.kept(
        conn, (tenant.key, table.name), lambda: tuple(conn.execute(tenant.select(table, func.count(), func.avg(length))).one())
    )
    return count, float(average or 0.0)


def _statistics(
    conn: Connection, tenant: Tenant, table: Table, query_items: list[tuple[str, bool]], cache: StatisticsCache
) -> tuple[int, float, list[int]]:
    count, average = _totals(conn, tenant, table, cache)

    def documents_with(lexeme: str, prefix: bool) -> int:
        counted: int = conn.execute(tenant.select(table, func.count()).where(_matches(table, _item_query(lexeme, prefix)))).scalar_one()
        return counted

    df = [
        cache.kept(conn, (tenant.key, table.name, lexeme, prefix), partial(documents_with, lexeme, prefix))
        for lexeme, prefix in query_items
    ]
    return count, average, df


def _term_counts(table: Table, query_items: list[tuple[str, bool]]) -> list[Label[Any]]:
    """Per candidate, how often each query item occurs (tsvector positions, capped at 256 per
    word), as one array from one walk of its tsvector. One subquery per word cost 67 ms of a
    100 ms keyword search over 30,000 episodes (cProfile, five-word questions)."""
    search, _ = _search(table)
    words = func.unnest(search).table_valued("lexeme", "positions", name="u")
    occurrences = func.cardinality(words.c.positions)
    counts = []
    for i, (lexeme, prefix) in enumerate(query_items):
        word: BindParameter[str] = bindparam(f"tf{i}", lexeme)
        hit = func.starts_with(words.c.lexeme, word) if prefix else words.c.lexeme == word
        counts.append(func.coalesce(func.sum(occurrences).filter(hit), 0))
    per_item = select(array(counts)).select_from(words)
    return [per_item.scalar_subquery().label("tf")]


def _ranked(
    conn: Connection,
    tenant: Tenant,
    table: Table,
    expression: str,
    stmt: Select[Any],
    limit: int,
    cache: StatisticsCache,
    rare: Callable[[list[tuple[str, bool]], list[int]], Select[Any] | None] | None = None,
) -> list[tuple[int, float]]:
    """``stmt``'s candidates ranked by BM25; with ``rare``, also the candidates it selects for the
    query's items and their document counts (every match of a rare word: :func:`store.backend.shared.is_rare`)."""
    query_items = items(expression)
    count, average, df = _statistics(conn, tenant, table, query_items, cache)
    rows = {row[0]: row for row in conn.execute(stmt)}
    more = None if rare is None else rare(query_items, df)
    if more is not None:
        rows.update((row[0], row) for row in conn.execute(more))
    scored = [(row[0], bm25(count, average, df, row[2], row[1])) for row in rows.values()]
    scored.sort(key=lambda hit: (-hit[1], -hit[0]))
    return scored[:limit]


def _candidates(tenant: Tenant, table: Table, expression: str, *extra: Any) -> Select[Any]:
    _, length = _search(table)
    return tenant.select(table, table.c.pk, length, *_term_counts(table, items(expression)), *extra).where(
        _matches(table, _as_query(expression))
    )


# The key under which PostgresBackend.read() puts the change counter it read before the
# transaction's snapshot was taken (see StatisticsCache).
SNAPSHOT_VERSION = "memlens_snapshot_version"


class StatisticsCache:
    """BM25's statistics (a tenant's document count and average length, each word's document
    count, whether a word is common) by the store's change counter (a
    :class:`..shared.DataVersionCache`). Counting them was a third of a keyword search (32 ms of
    100 at 30,000 episodes, a count per word). The counter is read before the read transaction's
    snapshot is taken (``SNAPSHOT_VERSION`` in the connection's info), so the snapshot holds
    every commit it counts."""

    def __init__(self) -> None:
        self._cache = DataVersionCache()

    def kept(self, conn: Connection, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value kept for ``key`` at the version ``conn``'s read transaction was opened at, or
        ``compute()``'s, kept for the next search (only a read transaction has a version)."""
        return self._cache.kept(conn.info.get(SNAPSHOT_VERSION), key, compute)


class PostgresKeywordIndex:
    """:class:`store.backend.interface.KeywordIndex` over the generated tsvector columns; one per
    backend, for its statistics cache."""

    def __init__(self) -> None:
        self.statistics = StatisticsCache()

    def drop_tenant(self, tenant: Tenant) -> None:
        """Nothing to let go of: the statistics cache keeps counts, never text."""

    def expression(self, conn: Connection, tenant: Tenant, terms: list[str], *, min_prefix: int | None, cut_common: bool) -> str | None:
        terms = list(dict.fromkeys(terms))
        if not terms:
            return None
        if cut_common and len(terms) > 1:
            common = self._common(conn, tenant, terms)
            terms = [t for t in terms if t not in common] or terms
        prefix_last = min_prefix is not None and len(terms[-1]) >= min_prefix
        sql, params = _query_sql(terms, prefix_last)
        expression = conn.execute(text(f"SELECT ({sql})::text"), params).scalar()
        return expression or None  # words the tokenizer drops entirely leave an empty query

    def _common(self, conn: Connection, tenant: Tenant, terms: list[str]) -> set[str]:
        """The common-word rule (:func:`store.backend.shared.is_common`) for each word, once the
        tenant holds ``MIN_EPISODES_FOR_CUT`` episodes; answers kept until anyone commits."""
        total, _ = _totals(conn, tenant, episodes_t, self.statistics)  # the counts BM25 uses next
        if total < MIN_EPISODES_FOR_CUT:
            return set()
        e = episodes_t

        def newest_holding(term: str, window: int) -> list[int]:
            query = func.plainto_tsquery(literal_column("'memlens'"), func.memlens_fold(term))
            return list(conn.execute(tenant.select(e, e.c.pk).where(_matches(e, query)).order_by(e.c.pk.desc()).limit(window)).scalars())

        def written_since(oldest: int, enough: int) -> int:
            since = tenant.select(e, e.c.pk).where(e.c.pk >= oldest).order_by(e.c.pk).limit(enough)
            counted: int = conn.execute(select(func.count()).select_from(since.subquery())).scalar_one()
            return counted

        def common(term: str) -> bool:
            return is_common(partial(newest_holding, term), written_since)

        return {term for term in terms if self.statistics.kept(conn, (tenant.key, "common", term), partial(common, term))}

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
        e = episodes_t
        newest = filtered(_candidates(tenant, e, expression), session_id=session_id, since=since, until=until)
        newest = newest.order_by(e.c.pk.desc()).limit(MAX_KEYWORD_MATCHES)

        def every_match_of_rare_words(query_items: list[tuple[str, bool]], df: list[int]) -> Select[Any] | None:
            # The newest matches of the whole query can all be a common word's; a rare word's
            # matches (an id, a tag) are few, so every one of them is ranked too.
            rare = [_item_query(lexeme, prefix) for (lexeme, prefix), n in zip(query_items, df, strict=True) if is_rare(prefix, n)]
            if not rare:
                return None
            query = rare[0]
            for more in rare[1:]:
                query = query.op("||")(more)
            return filtered(_candidates(tenant, e, expression).where(_matches(e, query)), session_id=session_id, since=since, until=until)

        ranked = _ranked(conn, tenant, e, expression, newest, limit, self.statistics, every_match_of_rare_words)
        return [(pk, score, []) for pk, score in ranked]

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
        # Each phrase through phraseto_tsquery (its words in order, <-> between them) from a bound
        # parameter, so nothing in it is query syntax; the phrases OR-ed together.
        queries = [
            func.phraseto_tsquery(literal_column("'memlens'"), func.memlens_fold(bindparam(f"phrase{i}", " ".join(words))))
            for i, words in enumerate(phrases)
            if words
        ]
        if not queries:
            return []
        query: ColumnElement[Any] = queries[0]
        for more in queries[1:]:
            query = query.op("||")(more)
        e = episodes_t
        stmt = filtered(tenant.select(e, e.c.pk).where(_matches(e, query)), session_id=session_id, since=since, until=until)
        return list(conn.execute(stmt.order_by(e.c.pk.desc()).limit(limit)).scalars())

    def episode_highlights(
        self, conn: Connection, tenant: Tenant, expression: str, pks: list[int], texts: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, list[str]]:
        # Marked by the server (ts_headline with the index's own configuration); ``texts`` unused.
        if not pks:
            return {}
        e = episodes_t
        marks = [
            func.ts_headline(literal_column("'memlens'"), func.memlens_fold(c), _as_query(expression), _HEADLINE)
            for c in (e.c.input, e.c.output)
        ]
        rows = conn.execute(tenant.select(e, e.c.pk, *marks).where(e.c.pk.in_(pks)))
        return {pk: marked_terms(*marked) for pk, *marked in rows}

    def facts(self, conn: Connection, tenant: Tenant, expression: str, limit: int, allowed: set[int] | None) -> list[KeywordHit]:
        f = facts_t
        stmt = _candidates(tenant, f, expression)
        if allowed is not None:
            stmt = stmt.where(f.c.pk.in_(allowed))
        ranked = _ranked(conn, tenant, f, expression, stmt, limit, self.statistics)
        if not ranked:
            return []
        marks = [
            func.ts_headline(literal_column("'memlens'"), func.memlens_fold(c), _as_query(expression), _HEADLINE)
            for c in (f.c.subject, f.c.predicate, f.c.object)
        ]
        marked = {
            pk: marked_terms(*m) for pk, *m in conn.execute(tenant.select(f, f.c.pk, *marks).where(f.c.pk.in_([pk for pk, _ in ranked])))
        }
        return [(pk, score, marked.get(pk, [])) for pk, score in ranked]


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import KeywordIndex

    _implements_keywordindex: type[KeywordIndex] = PostgresKeywordIndex
