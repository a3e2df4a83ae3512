"""The database engine behind the store, behind one interface (:mod:`store.backend.interface`).

This module is the one place that maps a store's address, or a connection's dialect, to the
engine package that serves it (``store/backend/<engine>/``); nothing above it names an engine.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from sqlalchemy import Connection

from ..errors import StoreOpenError
from .interface import Backend, KeywordIndex, Sql

__all__ = ["Backend", "KeywordIndex", "Sql", "open_backend", "sql"]

# Dialect name -> the engine package; a new backend adds its line here.
_ENGINES = {"sqlite": "store.backend.sqlite"}


def _engine(name: str):
    if name not in _ENGINES:
        raise StoreOpenError(f"memlens has no backend for {name!r} URLs yet; its stores are SQLite files (a path or an sqlite:/// URL)")
    return importlib.import_module(_ENGINES[name])


def open_backend(path_or_url: str | Path, *, read_only: bool, create: bool) -> Backend:
    """Open the store at a path (an SQLite file) or a URL (``sqlite:///...``)."""
    raw = str(path_or_url)
    name = raw.split("://", 1)[0].split("+", 1)[0] if "://" in raw else "sqlite"
    return _engine(name).open_backend(path_or_url, read_only=read_only, create=create)


def sql(conn: Connection) -> Sql:
    """The engine-specific statements for this connection's dialect."""
    return _engine(conn.dialect.name).SQL
