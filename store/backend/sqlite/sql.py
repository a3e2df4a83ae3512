"""Statements SQLite spells its own way: upserts, replace, keyed bulk inserts, rowid, JSON1."""

from __future__ import annotations

from typing import Any, Sequence

from sqlalchemy import Column, ColumnElement, Connection, Table, func, literal_column, select
from sqlalchemy.dialects.sqlite import insert

from ..shared import upsert


class SqliteSql:
    """:class:`store.backend.interface.Sql` for SQLite."""

    def upsert(self, conn: Connection, table: Table, values: dict[str, Any], keys: Sequence[str], update: dict[str, Any] | None) -> None:
        upsert(insert, conn, table, values, keys, update)

    def replace(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        if rows:
            conn.execute(table.insert().prefix_with("OR REPLACE"), rows)

    def insert_keyed(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
        """Ordered RETURNING would make SQLAlchemy run one statement per row (3x slower). Inside
        the write transaction no one else inserts, so the new rows are exactly those above the
        old maximum key, and their ids map them back to the input order."""
        key = table.c.pk
        before = conn.execute(select(func.coalesce(func.max(key), 0))).scalar()
        conn.execute(table.insert(), rows)
        keys = dict(conn.execute(select(table.c.id, key).where(key > before)).all())
        return [keys[row["id"]] for row in rows]

    def row_version(self, table: Table) -> ColumnElement[int]:
        # A replaced row (INSERT OR REPLACE) gets a new rowid.
        return literal_column(f"{table.name}.rowid")

    def json_array_items(self, column: Column | ColumnElement, path: str | None = None, *, name: str) -> Any:
        args = (column,) if path is None else (column, path)
        return func.json_each(*args).table_valued("value", name=name)

    def json_field(self, value: ColumnElement, path: str) -> ColumnElement:
        return func.json_extract(value, path)

    def json_set(self, column: Column, fields: dict[str, Any]) -> ColumnElement:
        args: list[Any] = []
        for path, value in fields.items():
            args += [path, func.json("true") if value is True else func.json("false") if value is False else value]
        return func.json_set(column, *args)


SQL = SqliteSql()
