"""Row keys and microsecond timestamps are 64-bit on PostgreSQL and stay INTEGER (the rowid
alias) on SQLite. Compiled with SQLAlchemy's dialects: no server needed."""

from __future__ import annotations

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateTable

from store.schema import T, UtcMicros

# Columns that hold row keys (and references to them): every one needs 64 bits.
KEYS = {"pk", "session_pk", "item_pk"}


def _wide_columns():
    for table in T.values():
        for column in table.columns:
            if column.name in KEYS or isinstance(column.type, UtcMicros):
                yield table, column


def test_keys_and_times_are_bigint_on_postgresql():
    dialect = postgresql.dialect()
    wide = list(_wide_columns())
    assert len(wide) >= 29  # every table's keys and times, not a handful
    for table, column in wide:
        ddl = str(CreateTable(table).compile(dialect=dialect))
        line = next(line.strip() for line in ddl.splitlines() if line.strip().startswith(f"{column.name} "))
        # BIGSERIAL: a BIGINT with its own sequence, what an autoincrementing key becomes.
        assert line.split()[1].rstrip(",") in ("BIGINT", "BIGSERIAL"), f"{table.name}.{column.name}: {line}"


def test_keys_and_times_stay_integer_on_sqlite():
    dialect = sqlite.dialect()
    for table, column in _wide_columns():
        ddl = str(CreateTable(table).compile(dialect=dialect))
        line = next(line.strip() for line in ddl.splitlines() if line.strip().startswith(f"{column.name} "))
        assert line.split()[1].rstrip(",") == "INTEGER", f"{table.name}.{column.name}: {line}"
