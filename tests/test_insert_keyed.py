"""Bulk inserts return each row's key in input order without reading the rows back (SQLite gives
a new row the table's maximum key plus one); when that does not hold, the keys still map right."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from store import MemoryStore, testing
from store.backend.sqlite.sql import SQL
from store.schema import episodes_t
from store.tenancy import Tenant

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def rows(prefix: str, n: int) -> list[dict]:
    return [
        Tenant("u").stamp(
            {
                "id": f"{prefix}{i}",
                "session_id": None,
                "occurred_at": WHEN,
                "input": f"text {prefix}{i}",
                "output": "",
                "tool_calls": "[]",
                "metadata": "{}",
                "content_hash": "h",
            }
        )
        for i in range(n)
    ]


def check(conn, batch, keys):
    found = dict(conn.execute(select(episodes_t.c.id, episodes_t.c.pk).where(episodes_t.c.pk.in_(keys))).all())
    assert [found[row["id"]] for row in batch] == keys


def test_keys_come_back_in_input_order(db_path):
    with MemoryStore.open(db_path, embedder=None) as s, testing.backend(s).write() as conn:
        first = rows("a", 5)
        check(conn, first, SQL.insert_keyed(conn, episodes_t, first))
        conn.execute(episodes_t.delete().where(episodes_t.c.id == "a4"))  # the top key is free again
        second = rows("b", 7)
        keys = SQL.insert_keyed(conn, episodes_t, second)
        check(conn, second, keys)
        assert keys == list(range(5, 12))


def test_keys_map_right_when_the_table_holds_the_largest_key(db_path):
    with MemoryStore.open(db_path, embedder=None) as s, testing.backend(s).write() as conn:
        top = rows("top", 1)
        top[0]["pk"] = 2**63 - 1
        conn.execute(episodes_t.insert(), top)
        batch = rows("c", 20)
        keys = SQL.insert_keyed(conn, episodes_t, batch)  # SQLite picks random free keys now
        check(conn, batch, keys)
        assert len(set(keys)) == 20 and max(keys) < 2**63 - 1


def test_rows_with_their_columns_in_another_order_are_stored_alike(db_path):
    with MemoryStore.open(db_path, embedder=None) as s, testing.backend(s).write() as conn:
        batch = rows("d", 3)
        batch[1] = {k: batch[1][k] for k in reversed(list(batch[1]))}
        keys = SQL.insert_keyed(conn, episodes_t, batch)
        check(conn, batch, keys)
        stored = conn.execute(select(episodes_t).where(episodes_t.c.pk.in_(keys)).order_by(episodes_t.c.pk)).all()
        assert [r.occurred_at for r in stored] == [WHEN] * 3 and [r.input for r in stored] == ["text d0", "text d1", "text d2"]
        assert [(r.user_id, r.tool_calls, r.metadata) for r in stored] == [("u", "[]", "{}")] * 3


def test_a_bulk_insert_is_a_few_statements_and_the_keyword_index_holds_every_row(db_path):
    """FTS5 writes an index segment at the end of every statement that writes it (through the
    insert trigger): one statement per row made ingest write and merge a segment per row (3x
    slower). The index must still hold every row, each under its own key."""
    from store.backend.sqlite.sql import ROWS_PER_STATEMENT

    n = 2 * ROWS_PER_STATEMENT + 7
    with MemoryStore.open(db_path, embedder=None) as s, testing.backend(s).write() as conn:
        raw = conn.connection.driver_connection
        seen: list[str] = []
        raw.set_trace_callback(seen.append)
        try:
            keys = SQL.insert_keyed(conn, episodes_t, [dict(r, input=f"word{i}x") for i, r in enumerate(rows("e", n))])
        finally:
            raw.set_trace_callback(None)
        # Each segment FTS5 writes (and each merge) is a write of its blocks to the _data table.
        segment_writes = [sql for sql in seen if "'episodes_fts_data'" in sql and "REPLACE INTO" in sql]
        assert len(segment_writes) < n / 50
        conn.exec_driver_sql("INSERT INTO episodes_fts(episodes_fts, rank) VALUES ('integrity-check', 1)")
        for i in (0, ROWS_PER_STATEMENT, n - 1):
            found = conn.exec_driver_sql("SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH ?", (f'"word{i}x"',)).all()
            assert found == [(keys[i],)]
