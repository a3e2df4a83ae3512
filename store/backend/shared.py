"""What every engine's implementation shares: the highlight markers and the upsert's shape."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Table

# Matched words come back from every engine's highlighter between these two control characters,
# which no stored text can hold unnoticed (validation refuses control characters in names, and a
# marker inside text only ever adds a word to the highlight list).
MARK_START, MARK_END = "\x02", "\x03"
_MARK = re.compile(f"{MARK_START}(.*?){MARK_END}", re.DOTALL)


def marked_terms(*highlighted: str) -> list[str]:
    """The words an engine's highlighter marked, lower-cased, first seen first."""
    seen: dict[str, None] = {}
    for value in highlighted:
        for term in _MARK.findall(value or ""):
            seen.setdefault(term.lower(), None)
    return list(seen)


def upsert(
    insert: Callable[[Table], Any],
    conn: Connection,
    table: Table,
    values: dict[str, Any],
    keys: Sequence[str],
    update: dict[str, Any] | None,
) -> None:
    """INSERT ... ON CONFLICT, with the engine's own ``insert`` construct (SQLite's and
    PostgreSQL's spell the conflict clause alike)."""
    stmt = insert(table).values(values)
    if update is None:
        stmt = stmt.on_conflict_do_nothing(index_elements=list(keys))
    else:
        stmt = stmt.on_conflict_do_update(index_elements=list(keys), set_=update)
    conn.execute(stmt)
