"""The database engine behind the store, behind one interface (:mod:`store.backend.interface`).

This module is the one place that maps a store's address, or a connection's dialect, to the
engine package that serves it (``store/backend/<engine>/``); nothing above it names an engine.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from sqlalchemy import Connection

from ..errors import StoreOpenError
from ..locations import scheme
from .interface import Backend, KeywordIndex, ServerVectorIndex, Sql

__all__ = ["Backend", "KeywordIndex", "ServerVectorIndex", "Sql", "engine_names", "open_backend", "sql"]

# Dialect name -> the engine package; a new backend adds its line here.
_ENGINES = {"sqlite": "store.backend.sqlite", "postgresql": "store.backend.postgres", "postgres": "store.backend.postgres"}


def engine_names() -> tuple[str, ...]:
    """Every engine, by its package's name (``sqlite``, ``postgres``): what the tests run on each."""
    return tuple(dict.fromkeys(package.rsplit(".", 1)[1] for package in _ENGINES.values()))


def _engine(name: str) -> ModuleType:
    if name not in _ENGINES:
        raise StoreOpenError(
            f"memlens has no backend for {name!r} URLs; its stores are SQLite files (a path or an sqlite:/// URL) "
            "or PostgreSQL databases (postgresql://...)"
        )
    try:
        return importlib.import_module(_ENGINES[name])
    except ImportError as error:
        raise StoreOpenError(f"{name} stores need the postgres extra: pip install 'memlens[postgres]' ({error})") from None


def open_backend(path_or_url: str | Path, *, read_only: bool, create: bool, vector_dim: int | None = None) -> Backend:
    """Open the store at a path (an SQLite file) or a URL (``sqlite:///...``,
    ``postgresql://...``). ``vector_dim`` is the embedder's width, or None with no embedder: a
    server store fixes its vector column's width when it is created, and refuses an embedder of
    another width on open (an SQLite file keeps any width and ignores it)."""
    opened: Backend = _engine(scheme(path_or_url)).open_backend(path_or_url, read_only=read_only, create=create, vector_dim=vector_dim)
    return opened


def sql(conn: Connection) -> Sql:
    """The engine-specific statements for this connection's dialect."""
    statements: Sql = _engine(conn.dialect.name).SQL
    return statements
