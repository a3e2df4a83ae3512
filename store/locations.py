"""Where a store is: a file (a path or an ``sqlite:///`` URL) or a database on a server. The one
rule for telling them apart, with the standard library alone, so the inspector's first frame can
ask it without importing SQLAlchemy."""

from __future__ import annotations

from pathlib import Path


def scheme(location: str | Path) -> str:
    """The URL scheme a store's address names, without a driver (``postgresql+psycopg`` is
    ``postgresql``); ``sqlite`` for a plain path."""
    raw = str(location)
    return raw.split("://", 1)[0].split("+", 1)[0].lower() if "://" in raw else "sqlite"


# Memory another library keeps, shown where it lives (read-only): ``loomflow-sqlite:PATH``,
# ``langgraph-sqlite:PATH``, ``mem0:CONFIG.json``, ``chroma:DIR``.
FOREIGN_SCHEMES = ("loomflow-sqlite", "langgraph-sqlite", "mem0", "chroma")


def foreign_scheme(location: str | Path) -> str | None:
    """The scheme of an address naming another library's memory (``loomflow-sqlite:bot.db``), or None."""
    raw = str(location)
    return next((s for s in FOREIGN_SCHEMES if raw.startswith(s + ":")), None)


def is_server_url(location: str | Path) -> bool:
    """A store on a database server (``postgresql://...``), not a file."""
    return scheme(location) != "sqlite"
