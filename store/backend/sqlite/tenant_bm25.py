"""BM25 over a tenant's own statistics on SQLite, where FTS5's are index-wide.

FTS5's ``bm25()`` counts documents, lengths and each word's documents over the whole index, so
another tenant's writes reorder a tenant's keyword results. While one tenant holds every episode
those statistics are its own and ``bm25()`` is kept (the common case: an agent's store, the
benchmarks). Otherwise the candidates FTS5 finds are ranked here, with the formula FTS5 uses
(:func:`..shared.bm25`) over the tenant's episode count, its average length and each query
word's count of the tenant's episodes, as on PostgreSQL.

A candidate's length is the token count FTS5 keeps for it (its ``docsize`` row). Its frequency of
each query word comes from FTS5 itself: the candidates' texts are put in a small in-memory FTS5
table with the same tokenizer (as :mod:`.highlight` does to mark them), where ``bm25()`` of one
word at a time gives back the frequency, the only unknown left in its formula. So the words a
query matches, stems and prefixes included, are FTS5's, never a re-implementation of them.

The statistics are kept until anyone commits (:class:`..shared.DataVersionCache`), read in a
read transaction of their own begun after the change counter was read, and counted from the
smaller side: a tenant holding most of the index gets the index's totals less the other
tenants' (at 100k episodes, 21 ms after a commit where reading its own token counts took 165-290),
and a word's count of the tenant's episodes is taken by walking the word's matches, or for a
small tenant beside a very common word by asking about each of its own episodes (:func:`tenant_matches`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Select, bindparam, column, func, literal_column, not_, select, table, text

from ...schema import episodes_t
from ...tenancy import Tenant
from ..shared import K1, B, DataVersionCache, bm25, idf
from .highlight import scratch


def varints(blob: bytes) -> list[int]:
    """The SQLite varints a blob holds, one after another (FTS5's docsize and averages records):
    big-endian, seven bits a byte while the high bit is set, all eight in a ninth byte."""
    if blob and max(blob) < 0x80:  # every value under 128, as nearly every column's token count
        return list(blob)
    values, i = [], 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


class TenantStatistics:
    """The tenant's episode count, token count and each query item's count of its episodes,
    by the store's change counter; None for a tenant that holds every episode (FTS5's own
    statistics are then exactly its own)."""

    def __init__(self, read: Callable[[], AbstractContextManager[Connection]], data_version: Callable[[], int]):
        self._read, self._data_version = read, data_version
        self._cache = DataVersionCache()

    def totals(self, tenant: Tenant) -> tuple[int, int] | None:
        """(episodes, tokens) of the tenant, or None when it holds every episode of the store."""
        found = self._totals(tenant)
        return None if found is None else (found[0], found[1])

    def _totals(self, tenant: Tenant) -> tuple[int, int, bool] | None:
        found: tuple[int, int, bool] | None = self._kept((tenant.key, "totals"), _totals, tenant)
        return found

    def _kept(self, key: tuple[Any, ...], count: Callable[..., Any], *args: Any) -> Any:
        """``count(conn, *args)``, kept under the change counter read before its read transaction."""
        version = self._data_version()

        def counted() -> Any:
            with self._read() as conn:
                return count(conn, *args)

        return self._cache.kept(version, key, counted)

    def matches(self, tenant: Tenant | None, items: list[str]) -> list[int]:
        """How many of the tenant's episodes (None: of the whole index) each FTS5 query item (a
        quoted word, maybe a prefix) matches."""
        version, owner = self._data_version(), None if tenant is None else tenant.key
        counts = {item: self._cache.get(version, (owner, "matches", item)) for item in items}
        missing = [item for item, n in counts.items() if n is DataVersionCache.MISSING]
        if missing:
            with self._read() as conn:
                # The tenant's totals are counted again in the same read as its matches, and kept
                # with them: a score combines the two, and counts from two moments of a writer
                # could put more matches than episodes into the IDF.
                totals = None if tenant is None else _totals(conn, tenant)
                held = totals[0] if totals is not None else 0
                # The index's counts: the answer for the index, and what decides how a tenant's
                # own are counted; counted once, in the same read, kept for both.
                everyone = {item: _store_matches(conn, item) for item in missing}
                fresh = everyone if tenant is None else {item: tenant_matches(conn, tenant, item, everyone[item], held) for item in missing}
            kept: dict[Any, Any] = {(owner, "matches", item): n for item, n in fresh.items()}
            if tenant is not None:
                kept[(owner, "totals")] = totals
            self._cache.keep(version, kept | {(None, "matches", item): n for item, n in everyone.items()})
            counts.update(fresh)
        return [counts[item] for item in items]

    def capped_matches(self, items: list[str], cap: int) -> list[int]:
        """How many episodes of the whole index each item matches, counted up to ``cap`` (the exact
        count when one is kept): whether a word is rare is asked at every search, and counting a
        word's matches cost a statement per word, about half a millisecond a search at 100k."""
        version = self._data_version()
        counts = {item: self._cache.get(version, (None, "matches", item)) for item in items}
        for item, n in counts.items():
            if n is DataVersionCache.MISSING:
                counts[item] = self._cache.get(version, (None, "capped", cap, item))
        missing = [item for item, n in counts.items() if n is DataVersionCache.MISSING]
        if missing:
            with self._read() as conn:
                fresh = {item: conn.execute(_MATCHES_UP_TO, {"item": item, "cap": cap}).scalar_one() for item in missing}
            self._cache.keep(version, {(None, "capped", cap, item): n for item, n in fresh.items()})
            counts.update(fresh)
        return [min(int(counts[item]), cap) for item in items]

    def store_totals(self) -> tuple[int, int]:
        """(episodes, tokens) of the whole index: the statistics FTS5's bm25() ranks with."""
        found: tuple[int, int] = self._kept((None, "totals"), _store_totals)
        return found


_DOCSIZE = table("episodes_fts_docsize", column("id"), column("sz"))


def _store_totals(conn: Connection) -> tuple[int, int]:
    """(episodes, tokens) of the whole index, from FTS5's averages record."""
    averages = conn.execute(text("SELECT block FROM episodes_fts_data WHERE id = 1")).scalar()
    values = varints(averages) if averages else [0]
    return values[0], sum(values[1:])


_MATCHES_UP_TO = text("SELECT count(*) FROM (SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH :item LIMIT :cap)")


def _store_matches(conn: Connection, item: str) -> int:
    counted: int = conn.execute(text("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH :item"), {"item": item}).scalar_one()
    return counted


def _tokens(sizes: Iterable[bytes]) -> int:
    """The token count of docsize rows; one pass in C when every count is under 128, as nearly always."""
    joined = b"".join(sizes)
    return sum(joined) if not joined or max(joined) < 0x80 else sum(sum(varints(sz)) for sz in sizes)


def _others(tenant: Tenant) -> Select[Any]:
    """The keys of every other tenant's episodes: for a tenant holding most of the index, its
    statistics are the index's less theirs, far fewer rows to read. (Numbers only: no other
    tenant's content is read, and nothing of theirs reaches a result.)"""
    e = episodes_t
    return select(e.c.pk).where(not_(tenant.owns_while_erasing(e)))


def _totals(conn: Connection, tenant: Tenant) -> tuple[int, int, bool] | None:
    """(episodes, tokens, whether it holds most of the index) of the tenant, or None when it holds every episode."""
    e = episodes_t
    held: int = conn.execute(tenant.select(e, func.count())).scalar_one()
    everyone, every_token = _store_totals(conn)
    if held == everyone:
        return None
    if 2 * held > everyone:
        sizes = conn.execute(select(_DOCSIZE.c.sz).where(_DOCSIZE.c.id.in_(_others(tenant).scalar_subquery()))).scalars().all()
        return held, every_token - _tokens(sizes), True
    sizes = conn.execute(tenant.select(e, _DOCSIZE.c.sz).select_from(e.join(_DOCSIZE, _DOCSIZE.c.id == e.c.pk))).scalars().all()
    return held, _tokens(sizes), False


_MATCHING_AMONG = text("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH :item AND rowid IN (SELECT value FROM json_each(:keys))")

# What each way of counting a tenant's matches costs, measured at 100k episodes: FTS5 asked about
# one key at a time, about 80 us a key (10,000 keys: 0.8 s); the item's matches walked and each
# one's tenant looked up, about 1 us a match (90,000 matches: 64 ms; 1,526: 12 ms).
KEY_COST_IN_MATCHES = 80


@lru_cache(maxsize=256)
def _own_matches(tenant: Tenant) -> Select[Any]:
    """The item's matches walked, the tenant's counted. The tenant test is the unindexed one: with
    the tenant index SQLite scanned every episode of the tenant and matched each (4.2 s for a
    tenant of 90,000, against 12 ms walking the item's 1,526 matches)."""
    e, fts = episodes_t, table("episodes_fts", column("rowid"))
    match = literal_column("episodes_fts").op("MATCH")(bindparam("item"))
    return select(func.count()).select_from(fts.join(e, e.c.pk == fts.c.rowid)).where(match, tenant.owns_unindexed(e))


def tenant_matches(conn: Connection, tenant: Tenant, item: str, everyone: int, held: int) -> int:
    """The tenant's episodes the item matches: by walking the item's ``everyone`` matches of the
    index, or, for a tenant of few episodes (``held``) beside an item in very many, by asking FTS5
    about each of the tenant's own keys, whichever reads less."""
    if held * KEY_COST_IN_MATCHES < everyone:
        keys = json.dumps(list(conn.execute(tenant.select(episodes_t, episodes_t.c.pk)).scalars()))
        among: int = conn.execute(_MATCHING_AMONG, {"item": item, "keys": keys}).scalar_one()
        return among
    walked: int = conn.execute(_own_matches(tenant), {"item": item}).scalar_one()
    return walked


def frequencies(rows: Iterable[tuple[int, str, str]], items: list[str]) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Each row's frequency of each query item, and its token count, as FTS5 counts them."""
    con = scratch()
    con.execute("BEGIN")
    try:
        con.executemany("INSERT INTO ranks(rowid, a, b) VALUES (?, ?, ?)", rows)
        lengths = {rowid: sum(varints(sz)) for rowid, sz in con.execute("SELECT id, sz FROM ranks_docsize")}
        count = len(lengths)
        average = sum(lengths.values()) / count if count else 0.0
        found: dict[int, list[int]] = {rowid: [0] * len(items) for rowid in lengths}
        for i, item in enumerate(items):
            hits = con.execute("SELECT rowid, bm25(ranks) FROM ranks WHERE ranks MATCH ?", (item,)).fetchall()
            weight = idf(count, len(hits))
            for rowid, score in hits:
                # bm25() = -idf * f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)): solved for f.
                g = -score / weight
                k = K1 * (1 - B + B * lengths[rowid] / average)
                found[rowid][i] = round(g * k / (K1 + 1 - g))
        return found, lengths
    finally:
        con.execute("ROLLBACK")


def shortlist(
    candidates: dict[int, tuple[float, int]],
    own: tuple[tuple[int, int], list[int]],
    index: tuple[tuple[int, int], list[int]],
    limit: int,
) -> list[int]:
    """The candidates (key: FTS5's score, token count) that can be among the best ``limit`` by
    the tenant's statistics (``own``: its totals and matches per item), judged from FTS5's score
    over the index's (``index``), without reading their texts.

    Per item, the tenant's score term is FTS5's times idf_T / idf_I (one ratio per item) times
    (f + K_I) / (f + K_T) for the item's frequency f >= 1 and each side's length norm K, which
    lies between 1 and (1 + K_I) / (1 + K_T). So each candidate's tenant score lies between
    FTS5's times the smallest such factors and times the largest; one whose upper bound is below
    the ``limit``-th best lower bound cannot be among the best."""
    if len(candidates) <= limit:
        return list(candidates)
    ((n_own, t_own), m_own), ((n_all, t_all), m_all) = own, index
    ratios = [idf(n_own, a) / idf(n_all, b) for a, b in zip(m_own, m_all, strict=True)]
    low_idf, high_idf = min(ratios), max(ratios)
    avg_own, avg_all = t_own / n_own, t_all / n_all
    bounds = {}
    for pk, (score, length) in candidates.items():
        k_own = K1 * (1 - B + B * length / avg_own)
        k_all = K1 * (1 - B + B * length / avg_all)
        norm = (1 + k_all) / (1 + k_own)
        low, high = min(1.0, norm), max(1.0, norm)
        # A margin for rounding: a bound a few ulps off must not drop a hit.
        bounds[pk] = (score * low_idf * low * (1 - 1e-9), score * high_idf * high * (1 + 1e-9))
    floor = sorted((low for low, _ in bounds.values()), reverse=True)[limit - 1]
    return [pk for pk, (_, high) in bounds.items() if high >= floor]


def rank(
    rows: list[tuple[int, str, str]], items: list[str], totals: tuple[int, int], matches: list[int], limit: int
) -> list[tuple[int, float]]:
    """The best ``limit`` of ``rows`` (key, input, output) by BM25 over the tenant's statistics."""
    found, lengths = frequencies(rows, items)
    documents, tokens = totals
    average = tokens / documents if documents else 0.0
    scored = [(pk, bm25(documents, average, matches, found[pk], lengths[pk])) for pk in found]
    scored.sort(key=lambda hit: (-hit[1], -hit[0]))
    return scored[:limit]


__all__ = ["TenantStatistics", "rank", "varints"]
