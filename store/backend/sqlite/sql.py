"""Statements SQLite spells its own way: upserts, replace, keyed bulk inserts, rowid, JSON1."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Column, ColumnElement, Connection, Table, func, literal_column, select
from sqlalchemy.dialects.sqlite import insert

from ...schema import meta_t
from ...tenancy import Tenant
from ..shared import upsert


class SqliteSql:
    """:class:`store.backend.interface.Sql` for SQLite."""

    def upsert(self, conn: Connection, table: Table, values: dict[str, Any], keys: Sequence[str], update: dict[str, Any] | None) -> None:
        upsert(insert, conn, table, values, keys, update)

    def replace(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        if rows:
            conn.execute(table.insert().prefix_with("OR REPLACE"), rows)

    def replace_renewing_versions(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """SQLite gives a new row the largest rowid plus one, so a replaced newest row (deleted,
        then inserted) came back with the rowid it had, and a cache comparing rowids kept its old
        vector. Rowids are handed out above a high-water mark kept in ``memlens_meta`` instead,
        raised in the same transaction: no rowid of the table is ever given twice. (VACUUM may
        renumber rows; their versions then change, which costs a cache a reload, never a stale row.)"""
        if not rows:
            return
        mark = f"rowid_high:{table.name}"
        stored = _plain_count(conn.execute(select(meta_t.c.value).where(meta_t.c.key == mark)).scalar())
        newest: int = conn.execute(select(func.coalesce(func.max(literal_column("rowid")), 0)).select_from(table)).scalar_one()
        first = max(stored, newest) + 1
        high = str(first + len(rows) - 1)
        self.upsert(conn, meta_t, {"key": mark, "value": high}, ["key"], {"value": high})
        _insert_many(conn, table, rows, replace_from_rowid=first)

    def insert_keyed(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
        """Ordered RETURNING would make SQLAlchemy run one statement per row (3x slower). Inside
        the write transaction no one else inserts, and SQLite gives each new row the table's
        maximum key plus one: when the maximum moved by exactly the number of rows, the keys are
        the run above the old maximum, in input order. Otherwise (a table at the largest key
        gets random ones) each row's (tenant, id), unique in the table, maps it back."""
        if not rows:
            return []
        key = table.c.pk
        before: int = conn.execute(select(func.coalesce(func.max(key), 0))).scalar_one()
        _insert_many(conn, table, rows)
        after: int = conn.execute(select(func.max(key))).scalar_one()  # rows were just inserted: never NULL
        if after == before + len(rows):
            return list(range(before + 1, after + 1))
        keys: dict[tuple[str, str], int] = {}
        for owner in dict.fromkeys(row["user_id"] for row in rows):  # rows come stamped by their tenant
            tenant = Tenant(owner)
            ids = list(dict.fromkeys(row["id"] for row in rows if row["user_id"] == owner))
            for start in range(0, len(ids), 500):  # SQLite caps bound parameters per statement
                stmt = tenant.select(table, table.c.id, key).where(table.c.id.in_(ids[start : start + 500]))
                keys.update(((owner, id_), pk) for id_, pk in conn.execute(stmt))
        return [keys[(row["user_id"], row["id"])] for row in rows]

    def row_version(self, table: Table) -> ColumnElement[int]:
        # A replaced row (INSERT OR REPLACE) gets a new rowid.
        return literal_column(f"{table.name}.rowid")

    def json_array_items(self, column: Column[Any] | ColumnElement[Any], path: str | None = None, *, name: str) -> Any:
        args = (column,) if path is None else (column, path)
        return func.json_each(*args).table_valued("value", name=name)

    def json_field(self, value: ColumnElement[Any], path: str) -> ColumnElement[Any]:
        return func.json_extract(value, path)

    def serialise(self, conn: Connection, record: str) -> None:
        """Nothing: a write transaction already holds the file's one write lock (BEGIN IMMEDIATE)."""

    def json_set(self, column: Column[Any], fields: dict[str, Any]) -> ColumnElement[Any]:
        args: list[Any] = []
        for path, value in fields.items():
            args += [path, func.json("true") if value is True else func.json("false") if value is False else value]
        return func.json_set(column, *args)


# Rows per INSERT statement. SQLite opens a savepoint for every statement that writes an FTS5
# table (the episodes' and facts' insert triggers do), and FTS5 writes its pending terms out as a
# new index segment at each one: one statement per row made FTS5 write and merge one segment per
# row. Raw sqlite3, 100k episodes, same schema and trigger, CPU time at load 3: one row per
# statement 17.5k/s, 100 rows 34.4k/s, 1,000 rows 46.8k/s, 3,000 rows 44.2k/s (no FTS5 at all:
# 64.8k/s).
ROWS_PER_STATEMENT = 1000


def _insert_many(conn: Connection, table: Table, rows: list[dict[str, Any]], *, replace_from_rowid: int | None = None) -> None:
    """Multi-row INSERT statements of plain tuples (see ROWS_PER_STATEMENT), the columns' own bind
    conversions applied here: building SQLAlchemy's parameters for each of 100k rows was a tenth
    of ingest without embeddings (cProfile). Rows with differing columns, or leaving out a column
    SQLAlchemy fills in, go through SQLAlchemy. With ``replace_from_rowid``, INSERT OR REPLACE
    with the rows' rowids counting up from it (every row then names the same columns)."""
    columns = list(rows[0])
    if replace_from_rowid is None and (
        any(c.default is not None and c.name not in rows[0] for c in table.c)
        or any(len(row) != len(columns) or row.keys() != rows[0].keys() for row in rows)
    ):
        conn.execute(table.insert(), rows)
        return
    quote = conn.dialect.identifier_preparer.quote
    convert = [table.c[name].type.bind_processor(conn.dialect) for name in columns]
    named = columns if replace_from_rowid is None else ["rowid", *columns]
    driver = conn.connection.driver_connection
    assert driver is not None  # a checked-out connection has its driver connection
    per_statement = max(1, min(ROWS_PER_STATEMENT, driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(named)))
    verb = "INSERT" if replace_from_rowid is None else "INSERT OR REPLACE"
    head = f"{verb} INTO {quote(table.name)} ({', '.join(map(quote, named))}) VALUES "
    one = "(" + ", ".join("?" * len(named)) + ")"
    full = head + ", ".join([one] * per_statement)
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        values: list[Any] = []
        for n, row in enumerate(chunk, start=start):
            if replace_from_rowid is not None:
                values.append(replace_from_rowid + n)
            values += [row[name] if f is None else f(row[name]) for name, f in zip(columns, convert, strict=True)]
        conn.exec_driver_sql(full if len(chunk) == per_statement else head + ", ".join([one] * len(chunk)), tuple(values))


def _plain_count(text: str | None) -> int:
    """A stored high-water mark; anything memlens would not have written counts as none."""
    if text is None or not text.isdigit() or len(text) > 18:
        return 0
    return int(text)


SQL = SqliteSql()


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import Sql

    _implements_sql: type[Sql] = SqliteSql
