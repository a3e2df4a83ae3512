"""Statements PostgreSQL spells its own way: upserts and replaces on named constraints, keyed
bulk inserts with ordered RETURNING, a row version from ``xmin``, and JSON through ``jsonb``
(JSON columns stay TEXT, as on SQLite, and are cast where a statement looks inside them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Column,
    ColumnElement,
    Connection,
    Table,
    Text,
    TypeDecorator,
    cast,
    func,
    literal,
    literal_column,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, insert

from ..shared import upsert
from .locks import take_record


def _path(path: str) -> list[str]:
    """ "$.a.b" -> ["a", "b"] (the only JSON paths the store uses: object keys from the root)."""
    if path == "$":
        return []
    if not path.startswith("$."):
        raise ValueError(f"unsupported JSON path {path!r}")
    return path[2:].split(".")


def _at(column: Column[Any] | ColumnElement[Any], path: str | None) -> ColumnElement[Any]:
    document = cast(column, JSONB)
    keys = _path(path) if path else []
    return document.op("#>")(cast(literal(keys, ARRAY(Text)), ARRAY(Text))) if keys else document


class _JsonValue(TypeDecorator[Any]):
    """A jsonb value that binds what it is compared with as jsonb too (SQLite's json_extract
    returns typed values): ``field < 5`` compares numbers as numbers."""

    impl = JSONB
    cache_ok = True

    def coerce_compared_value(self, op: Any, value: Any) -> _JsonValue:
        return self


class PostgresSql:
    """:class:`store.backend.interface.Sql` for PostgreSQL."""

    def upsert(self, conn: Connection, table: Table, values: dict[str, Any], keys: Sequence[str], update: dict[str, Any] | None) -> None:
        upsert(insert, conn, table, values, keys, update)

    def replace(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """On PostgreSQL a table's key includes its tenant (partitioned tables need it), so the
        conflict target is the key constraint by name rather than the ORM's key columns."""
        if not rows:
            return
        stmt = insert(table)
        keys = {c.name for c in table.primary_key.columns}
        stmt = stmt.on_conflict_do_update(
            constraint=f"pk_{table.name}", set_={name: stmt.excluded[name] for name in rows[0] if name not in keys}
        )
        conn.execute(stmt, rows)

    def replace_renewing_versions(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """:meth:`replace`: every row it writes, inserted or updated, carries this transaction's xmin."""
        self.replace(conn, table, rows)

    def insert_keyed(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
        if not rows:
            return []
        stmt = insert(table).returning(table.c.pk, sort_by_parameter_order=True)
        return [pk for (pk,) in conn.execute(stmt, rows)]

    def row_version(self, table: Table) -> ColumnElement[int]:
        # xmin, the transaction that wrote this row version: any replacement writes a new one.
        return cast(cast(literal_column(f"{table.name}.xmin"), Text), BigInteger)

    def json_array_items(self, column: Column[Any] | ColumnElement[Any], path: str | None = None, *, name: str) -> Any:
        # _text: strings come out bare (for `value IN (ids)`), objects as JSON text (json_field reads them).
        return func.jsonb_array_elements_text(_at(column, path)).table_valued("value", name=name)

    def json_field(self, value: ColumnElement[Any], path: str) -> ColumnElement[Any]:
        return type_coerce(_at(value, path), _JsonValue())

    def serialise(self, conn: Connection, record: str) -> None:
        """The record's advisory lock, to the end of the transaction (:func:`.locks.take_record`)."""
        take_record(conn, record)

    def json_set(self, column: Column[Any], fields: dict[str, Any]) -> ColumnElement[Any]:
        document: ColumnElement[Any] = cast(column, JSONB)
        for path, value in fields.items():
            keys = _path(path)
            document = func.jsonb_set(document, cast(literal(keys, ARRAY(Text)), ARRAY(Text)), literal(value, JSONB), True)
        return cast(document, Text)


SQL = PostgresSql()


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import Sql

    _implements_sql: type[Sql] = PostgresSql
