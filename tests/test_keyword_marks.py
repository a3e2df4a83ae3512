"""The words a keyword hit is marked with (``RecallHit.matched_terms``) come from a small FTS5 table
holding only the hits (store/backend/sqlite/highlight.py), not from the store's index: they must
be exactly what highlight() over the store's own index marks, for every kind of query a search
builds (OR of words, a prefix while typing, stemmed forms, accents, other scripts, identifiers)."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from store import MemoryStore, testing
from store.backend.shared import MARK_END, MARK_START, marked_terms
from store.backend.sqlite.keyword import episode_highlights, fts_expression
from store.recall.query import MIN_PREFIX, query_terms
from store.tenancy import Tenant

TEXTS = [
    ("Booked the hotels in Lisbon for the 3rd", "Café near Praça do Comércio, running late"),
    ("invoice INV-20931 was paid", "and INV-29031 is still open; see https://ops.example.com/t/4471"),
    ("Naïve résumé für Jürgen", "Ελληνικά γράμματα and 日本語のテキスト"),
    ("the printer jammed again", "printers, printing, printed: all of them"),
    ("nothing relevant here", ""),
    ("", "only an output about running shoes and a runner"),
]
QUERIES = [
    "hotel lisbon",
    "run",
    "runn",
    "printing jammed",
    "INV-20931 paid",
    "cafe comercio",
    "resume jurgen",
    "γράμματα",
    "ops example",
    "printer",
    "the",
    "shoes runn",
    "3rd booked",
    "nothing at all",
]


def index_marks(db_path, pks: list[int], expression: str) -> dict[int, list[str]]:
    """highlight() over the store's own index, as memlens asked it before."""
    con = sqlite3.connect(db_path)
    try:
        rows = con.execute(
            f"SELECT rowid, highlight(episodes_fts, 0, ?, ?), highlight(episodes_fts, 1, ?, ?) FROM episodes_fts "
            f"WHERE episodes_fts MATCH ? AND rowid IN ({','.join('?' * len(pks))})",
            (MARK_START, MARK_END, MARK_START, MARK_END, expression, *pks),
        ).fetchall()
    finally:
        con.close()
    return {pk: marked_terms(*marked) for pk, *marked in rows}


def expressions(query: str) -> list[str]:
    terms = query_terms(query)
    return [e for e in (fts_expression(terms, min_prefix=None), fts_expression(terms, min_prefix=MIN_PREFIX)) if e]


def test_marks_equal_the_index_highlights_for_every_query(db_path):
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many([{"input": i, "output": o} for i, o in TEXTS], user_id="u")
        s.remember_many([{"input": i, "output": o} for i, o in TEXTS], user_id="other")
        with testing.backend(s).read() as conn:
            pks = list(conn.exec_driver_sql("SELECT pk FROM episodes WHERE user_id = 'u' ORDER BY pk").scalars())
            texts = {pk: (i, o) for pk, i, o in conn.exec_driver_sql("SELECT pk, input, output FROM episodes WHERE user_id = 'u'")}
            checked = 0
            for query in QUERIES:
                for expression in expressions(query):
                    expected = index_marks(db_path, pks, expression)
                    assert episode_highlights(conn, Tenant("u"), expression, pks) == expected, (query, expression)
                    # The same marks from texts the caller read (recall passes its hits' rows).
                    assert episode_highlights(conn, Tenant("u"), expression, pks, texts) == expected, (query, expression)
                    checked += bool(expected)
            assert checked >= 10  # most queries match something: the comparison is not of empty dicts
            # Another tenant's rows are never read, even when asked for by key.
            others = list(conn.exec_driver_sql("SELECT pk FROM episodes WHERE user_id = 'other'").scalars())
            assert episode_highlights(conn, Tenant("u"), '"hotel"', others) == {}


WORDS = st.sampled_from(
    [
        "run",
        "running",
        "runner",
        "Café",
        "cafe",
        "hotels",
        "hotel",
        "INV-204",
        "x1",
        "über",
        "printing",
        "printer",
        "the",
        "a",
        "naïve",
        "日本",
        "zzz",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.lists(WORDS, max_size=8), st.lists(WORDS, max_size=8)), min_size=1, max_size=5),
    st.lists(WORDS, min_size=1, max_size=4),
    st.booleans(),
)
def test_marks_equal_the_index_highlights_on_random_texts(tmp_path_factory, docs, words, typing):
    db_path = tmp_path_factory.mktemp("marks") / "m.db"
    items = [{"input": " ".join(i), "output": " ".join(o)} for i, o in docs if i or o]
    if not items:
        return
    expression = fts_expression(query_terms(" ".join(words)), min_prefix=MIN_PREFIX if typing else None)
    if expression is None:
        return
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many(items, user_id="u")
        with testing.backend(s).read() as conn:
            pks = list(conn.exec_driver_sql("SELECT pk FROM episodes").scalars())
            assert episode_highlights(conn, Tenant("u"), expression, pks) == index_marks(db_path, pks, expression)
