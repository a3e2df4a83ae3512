"""Refusing database files whose schema or metadata memlens did not write.

An SQLite file carries code: a trigger, a view, a CHECK or DEFAULT expression, an index
on an expression all run inside the application that opens the file. A planted trigger
on ``episodes`` that copies each deleted row into a table of its own kept erased text
while ``forget`` reported the disk clean. So before a store is used, its ``sqlite_master``
must be exactly what memlens's own migrations create for the file's schema version: the
same objects (type, name, table) with the same SQL, nothing more and nothing less.

The reference is built by running :data:`store.migrations.MIGRATIONS` on an in-memory
database with this process's SQLite, so it follows the migrations as written and needs no
second copy of the DDL. Everything here only reads: the caller's connection is read-only.
"""

from __future__ import annotations

import re
import sqlite3
from functools import cache
from pathlib import Path
from typing import TypeGuard

from sqlalchemy import create_engine
from sqlalchemy.pool import StaticPool

from ...errors import InvalidMetadataError, UntrustedSchemaError
from .migrations import CURRENT_VERSION, MIGRATIONS

Entry = tuple[str, str, str, str | None]  # type, name, tbl_name, normalised sql

# Tables SQLite itself creates when someone runs ANALYZE (the sqlite3 shell, `PRAGMA optimize`):
# they only steer the query planner, so a store that has them is still memlens's own.
_PLANNER_TABLES = ("sqlite_stat1", "sqlite_stat4")
# Embedding sizes of real sentence models are in the hundreds to low thousands.
MAX_EMBEDDING_DIM = 65_536


def normalise(sql: str | None) -> str | None:
    """SQL text with runs of whitespace made single, so only the statement itself is compared."""
    return None if sql is None else re.sub(r"\s+", " ", sql).strip()


@cache
def expected_schema(version: int) -> tuple[dict[str, Entry], dict[str, Entry]]:
    """What memlens's migrations create up to ``version``, by lower-cased name, and the
    planner tables SQLite may add (allowed, not required)."""
    engine = create_engine("sqlite://", poolclass=StaticPool)
    try:
        with engine.begin() as conn:
            for step in MIGRATIONS[:version]:
                step(conn)
            raw = conn.connection.driver_connection
            assert raw is not None  # a checked-out connection has its driver connection
            required = _entries(raw)
            conn.exec_driver_sql("ANALYZE")
            optional = {k: v for k, v in _entries(raw).items() if k not in required}
    finally:
        engine.dispose()
    return required, optional


def _entries(conn: sqlite3.Connection) -> dict[str, Entry]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {name.lower(): (kind, name, table, normalise(sql)) for kind, name, table, sql in rows}


def check_schema(conn: sqlite3.Connection, version: int, path: Path) -> None:
    """Raise UntrustedSchemaError unless the file's schema is the one memlens made for ``version``."""
    required, optional = expected_schema(version)
    found = _entries(conn)
    extra = [entry for key, entry in found.items() if key not in required and optional.get(key) != entry]
    changed = [entry for key, entry in found.items() if key in required and required[key] != entry]
    missing = [entry for key, entry in required.items() if key not in found]
    if not (extra or changed or missing):
        return
    problems = [f"{kind} {name!r} that memlens did not create" for kind, name, _, _ in extra]
    problems += [f"{kind} {name!r} whose definition memlens did not write" for kind, name, _, _ in changed]
    problems += [f"no {kind} {name!r}, which memlens needs" for kind, name, _, _ in missing]
    raise UntrustedSchemaError(
        f"{path} is not a store as memlens made it: it has {'; '.join(problems[:5])}"
        f"{'; …' if len(problems) > 5 else ''}. memlens will not open it, because code in a database "
        "file runs inside whatever opens it; the file was not changed. Open a trusted copy or a backup."
    )


def read_schema_version(conn: sqlite3.Connection, path: Path) -> int:
    """The version in ``memlens_meta``, refusing anything memlens never writes there."""
    meta = {key: value for key, value in conn.execute("SELECT key, value FROM memlens_meta")}
    raw = meta.get("schema_version")
    if not _whole(raw) or int(raw) < 1:
        raise InvalidMetadataError(
            f"{path} has a schema version of {raw!r} in memlens_meta, which memlens never writes "
            "(a positive whole number); the file was changed outside memlens. Restore it from a backup."
        )
    return int(raw)


def check_metadata(conn: sqlite3.Connection, path: Path) -> None:
    """The embedding model and its dimension come together, as memlens records them."""
    meta = {key: value for key, value in conn.execute("SELECT key, value FROM memlens_meta")}
    model, dim = meta.get("embedding_model"), meta.get("embedding_dim")
    if model is None and dim is None:
        return
    problem = None
    if not isinstance(model, str) or not model.strip():
        problem = f"an embedding dimension ({dim!r}) without a model name"
    elif not _whole(dim) or not 1 <= int(dim) <= MAX_EMBEDDING_DIM:
        problem = f"model {model!r} with an embedding dimension of {dim!r}, not a whole number from 1 to {MAX_EMBEDDING_DIM:,}"
    if problem:
        raise InvalidMetadataError(
            f"{path} records {problem} in memlens_meta, which memlens never writes; the file was changed "
            "outside memlens. Restore it from a backup."
        )


def _whole(value: object) -> TypeGuard[str]:
    """Text that is a whole number written as memlens writes one (``str(int)``)."""
    return isinstance(value, str) and value.isdecimal() and str(int(value)) == value


def verify(conn: sqlite3.Connection, path: Path) -> int:
    """Check an existing memlens file read-only and return its schema version.

    The ``memlens_meta`` table is checked before it is read (it is the same in every version),
    then the version it names picks the schema the whole file must match. A version newer than
    this memlens is returned unchecked: the caller refuses it anyway.
    """
    required, _ = expected_schema(1)
    found = _entries(conn)
    for key in ("memlens_meta", "sqlite_autoindex_memlens_meta_1"):
        if found.get(key) != required[key]:
            check_schema(conn, 1, path)  # raises, naming what differs
    version = read_schema_version(conn, path)
    if version > CURRENT_VERSION:
        return version
    check_schema(conn, version, path)
    check_metadata(conn, path)
    return version
