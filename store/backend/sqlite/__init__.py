"""The SQLite backend: everything that knows the store is an SQLite file (open discipline and
PRAGMAs, frozen migrations, the schema check, FTS5, WAL maintenance, dialect SQL)."""

from __future__ import annotations

from pathlib import Path

from .sql import SQL


def open_backend(path_or_url: str | Path, *, read_only: bool, create: bool):
    from .database import Database

    return Database(path_or_url, read_only=read_only, create=create)


__all__ = ["SQL", "open_backend"]
