"""The SQLite backend: everything that knows the store is an SQLite file (open discipline and
PRAGMAs, frozen migrations, the schema check, FTS5, WAL maintenance, dialect SQL)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .sql import SQL

if TYPE_CHECKING:  # the module itself loads on open: it imports SQLAlchemy's engine
    from .database import Database


def open_backend(path_or_url: str | Path, *, read_only: bool, create: bool, vector_dim: int | None = None) -> Database:
    """``vector_dim`` is accepted and ignored: an SQLite file keeps vectors of any width."""
    from .database import Database

    return Database(path_or_url, read_only=read_only, create=create)


__all__ = ["SQL", "open_backend"]
