"""Where a store is: a file (a path or an ``sqlite:///`` URL) or a database on a server. The one
rule for telling them apart, with the standard library alone, so the inspector's first frame can
ask it without importing SQLAlchemy."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote


def scheme(location: str | Path) -> str:
    """The URL scheme a store's address names, without a driver (``postgresql+psycopg`` is
    ``postgresql``); ``sqlite`` for a plain path."""
    raw = str(location)
    return raw.split("://", 1)[0].split("+", 1)[0].lower() if "://" in raw else "sqlite"


# Memory another library keeps, shown where it lives (read-only): ``loomflow-sqlite:PATH``,
# ``langgraph-sqlite:PATH``, ``langgraph-postgres:URL``, ``mem0:CONFIG.json``, ``chroma:DIR``,
# ``mcp-memory:FILE.jsonl`` (the reference MCP memory server's file).
FOREIGN_SCHEMES = ("loomflow-sqlite", "langgraph-sqlite", "langgraph-postgres", "mem0", "chroma", "mcp-memory")

# libpq's connection parameters that hold a secret; a URL may carry them in its query string
# (postgresql://role@host/db?password=...), which libpq accepts as it does the userinfo's.
SECRET_PARAMETERS = ("password", "sslpassword")


def foreign_scheme(location: str | Path) -> str | None:
    """The scheme of an address naming another library's memory (``loomflow-sqlite:bot.db``), or None."""
    raw = str(location)
    return next((s for s in FOREIGN_SCHEMES if raw.startswith(s + ":")), None)


def is_server_url(location: str | Path) -> bool:
    """A store on a database server (``postgresql://...``), not a file."""
    return scheme(location) != "sqlite"


def shown_url(url: str) -> str:
    """A server URL as messages, manifests, titles and the audit log name it: ``postgresql://``,
    with no password, in the userinfo or the query (``postgresql://role@host:port/db``). Split by
    hand: a host the driver would refuse later (``[localhost``) must not make this raise."""
    rest = url.split("://", 1)[1] if "://" in url else url
    rest, hash_, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    netloc = f"{userinfo.partition(':')[0]}@{hostport}" if at else hostport
    # Each parameter kept as written (its encoding too); a secret one left out.
    kept = [piece for piece in query.split("&") if piece and unquote(piece.partition("=")[0]).lower() not in SECRET_PARAMETERS]
    shown = f"postgresql://{netloc}{slash}{path}"
    return shown + ("?" + "&".join(kept) if kept else "") + (hash_ + fragment if fragment else "")
