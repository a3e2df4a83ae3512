"""Marking the words a keyword query matched in a few chosen hits, without the big index.

FTS5's highlight() over the store's index evaluates the whole MATCH expression: this SQLite's
planner does not seek the hits' row ids for an ``IN`` list, and even one ``rowid = ?`` seek per hit
re-reads the doclists of every word of an OR query. Marking ten hits of a typed query cost 6-9 ms
at 100k episodes (cProfile of search-as-you-type, a third of each keystroke). highlight() only
looks at the text it marks, the query and the tokenizer, so the same ten texts put in a small
FTS5 table with the same tokenizer come back marked identically, in about a tenth of a millisecond.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable

from ..shared import MARK_END, MARK_START, marked_terms
from .migrations import _FTS_TOKENIZER

_local = threading.local()


def scratch() -> sqlite3.Connection:
    """This thread's in-memory database with empty FTS5 tables of the store's tokenizer, which
    marking (``hits``) and ranking by the tenant's statistics (``ranks``, :mod:`.tenant_bm25`)
    fill inside a transaction they roll back: nothing ever persists in it."""
    con = getattr(_local, "con", None)
    if con is None:
        con = sqlite3.connect(":memory:", isolation_level=None)
        con.execute(f"CREATE VIRTUAL TABLE hits USING fts5(a, b, c, tokenize='{_FTS_TOKENIZER}')")
        con.execute(f"CREATE VIRTUAL TABLE ranks USING fts5(a, b, tokenize='{_FTS_TOKENIZER}')")
        _local.con = con
    return con


def mark(expression: str, rows: Iterable[tuple[int, ...]], columns: int) -> dict[int, list[str]]:
    """The terms ``expression`` matches in each row (``(key, text, ...)`` with ``columns`` texts),
    as :func:`store.backend.shared.marked_terms` lists them; rows it does not match are left out."""
    con = scratch()
    padded = [(key, *texts, *([""] * (3 - columns))) for key, *texts in rows]
    if not padded:
        return {}
    # Only the expression's columns are searched: the padding columns stay empty.
    marks = ", ".join(f"highlight(hits, {i}, ?, ?)" for i in range(columns))
    con.execute("BEGIN")
    try:
        con.executemany("INSERT INTO hits(rowid, a, b, c) VALUES (?, ?, ?, ?)", padded)
        found = con.execute(f"SELECT rowid, {marks} FROM hits WHERE hits MATCH ?", (*[MARK_START, MARK_END] * columns, expression))
        return {key: marked_terms(*marked) for key, *marked in found}
    finally:
        con.execute("ROLLBACK")
