"""A LangGraph ``SqliteStore`` file (langgraph-checkpoint-sqlite) read without changing it:
``memlens langgraph-sqlite:PATH`` and ``store.open("langgraph-sqlite:PATH")`` show it where it
lives, and :func:`import_langgraph_sqlite` brings it into a memlens store.

Each item becomes what :class:`~store.compat.langgraph.MemlensStore` would have written: a
session key of the tenant its namespace names (by default its second label, LangGraph's
documented ``("memories", user_id)`` shape; ``user_at`` names another; a namespace too short for
it goes to the anonymous tenant), in the
session ``langgraph:`` plus the namespace, with its creation and update times, its expiry and
its time to live. The file keeps no record of which fields were indexed, so an item's search
text is the text its document holds (every string in it). Items past their expiry that
LangGraph has not swept yet are left out, as memlens hides an expired key from every read.

The file is read as a loomflow file is (:func:`.loomflow_sqlite.read_sqlite_source`:
``immutable``, or a private copy while it has pending content; a reading torn by a writer is read
again), and its schema is checked: a table LangGraph does not create, or a column it does not
write, is refused. No LangGraph install is needed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ImportValidationError, InvalidInputError, SourceSchemaTooNewError, UnrecognizedSourceError
from ..memory import MemoryStore
from .loomflow_sqlite import EXPORT_FORMAT, EXPORT_VERSION, LoomflowImportReport, LoomflowSource, Reading, read_sqlite_source

__all__ = [
    "ITEM_COLUMNS",
    "SESSION_PREFIX",
    "item_records",
    "reading_of",
    "import_langgraph_sqlite",
    "read_langgraph_sqlite",
    "schema_objects_langgraph_does_not_create",
    "source_time",
    "strings",
]

SESSION_PREFIX = "langgraph:"
"""The sessions that hold LangGraph items begin with this; the rest is the namespace, its labels joined by ``.``."""

# langgraph-checkpoint-sqlite 3.x's SqliteStore: table -> columns. ``store`` is what makes a file
# LangGraph's; the vector tables come with an index configuration.
KNOWN = {
    "store": {"prefix", "key", "value", "created_at", "updated_at", "expires_at", "ttl_minutes"},
    "store_migrations": {"v"},
    "store_vectors": {"prefix", "key", "field_name", "embedding", "created_at", "updated_at"},
    "vector_migrations": {"v"},
}
KNOWN_INDEXES = {"store_prefix_idx", "idx_store_expires_at", "store_vectors_embedding_idx"}


def read_langgraph_sqlite(path: str | Path, *, now: datetime | None = None, keep_expired: bool = False, user_at: int = 1) -> LoomflowSource:
    """Read a LangGraph ``SqliteStore`` file into memory, never changing it; a file that is
    missing, not LangGraph's, of a newer schema or written to meanwhile raises a typed error.
    ``keep_expired``: items past their expiry too (an erasure takes them as well). ``user_at``:
    the namespace label that names an item's user (as ``MemlensStore`` states it)."""
    if isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0:
        raise InvalidInputError(f"user_at must be a label position (0 or more), not {user_at!r}")
    source = Path(path)
    at = datetime.min.replace(tzinfo=UTC) if keep_expired else (now or datetime.now(UTC))
    document, where, _, unknown = read_sqlite_source(
        source, lambda p, conn: _read_memory(p, conn, at, user_at), "LangGraph SqliteStore file"
    )
    return LoomflowSource(source, document, where, 0, tuple(unknown))


def import_langgraph_sqlite(
    store: MemoryStore, path: str | Path | LoomflowSource, *, actor: str = "langgraph-import"
) -> LoomflowImportReport:
    """Read the LangGraph ``SqliteStore`` file at ``path`` (never changing it) into ``store``, each
    item a session key of its namespace's tenant; one transaction, verified by counts (every
    namespace and item read must be held as read, or nothing is written)."""
    from .loomflow_sqlite import import_loomflow_sqlite  # the import of a read source is the same

    source = path if isinstance(path, LoomflowSource) else read_langgraph_sqlite(path)
    return import_loomflow_sqlite(store, source, actor=actor)


def _read_memory(path: Path, connection: sqlite3.Connection, now: datetime, user_at: int) -> Reading:
    with closing(connection) as conn:
        # Its schema is someone else's: run none of its SQL functions, write nothing.
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA query_only = ON")
        conn.execute("BEGIN")  # one snapshot for the schema and the rows
        _check_schema(path, conn)
        unknown = schema_objects_langgraph_does_not_create(conn)
        records, where = _records(path, conn, now, user_at)
    return reading_of(records, where, unknown)


def _check_schema(path: Path, conn: sqlite3.Connection) -> None:
    kinds = {name: kind for kind, name in conn.execute("SELECT type, name FROM sqlite_master") if name in KNOWN}
    if kinds.get("store") != "table":
        raise UnrecognizedSourceError(f"{path} is not a LangGraph SqliteStore file (it has no store table); nothing was imported")
    for name in kinds:
        columns = {row[1] for row in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))}
        if columns - KNOWN[name]:
            raise SourceSchemaTooNewError(
                f"{path}: table {name} has columns LangGraph's SqliteStore 3.x does not write "
                f"({', '.join(sorted(columns - KNOWN[name]))}); nothing was imported"
            )
    missing = KNOWN["store"] - {row[1] for row in conn.execute("SELECT * FROM pragma_table_info('store')")}
    if missing:
        raise UnrecognizedSourceError(
            f"{path}: its store table lacks {', '.join(sorted(missing))}, as an older LangGraph wrote it; open it once with "
            "SqliteStore and call setup() (which migrates it); nothing was imported"
        )


def schema_objects_langgraph_does_not_create(conn: sqlite3.Connection) -> list[str]:
    """Every trigger, view, table and index in the file that LangGraph's SqliteStore does not create."""
    found = []
    for kind, name in conn.execute("SELECT type, name FROM sqlite_master"):
        if name.startswith("sqlite_"):
            continue
        if not ((kind == "table" and name in KNOWN) or (kind == "index" and name in KNOWN_INDEXES)):
            found.append(f"{kind} {name}")
    return sorted(found)


# What both LangGraph stores keep of an item, in the order item_records reads it.
ITEM_COLUMNS = "prefix, key, value, created_at, updated_at, expires_at, ttl_minutes"


def _records(path: Path, conn: sqlite3.Connection, now: datetime, user_at: int) -> tuple[list[dict[str, Any]], list[str]]:
    return item_records(conn.execute(f"SELECT {ITEM_COLUMNS} FROM store ORDER BY prefix, key"), now, user_at)


def reading_of(records: list[dict[str, Any]], where: list[str], unknown: list[str]) -> Reading:
    """The reading of a LangGraph store's records: its sessions and items, counted."""
    items = sum(1 for r in records if r["type"] == "kv")
    counts = {"sessions": len(records) - items, "kv_entries": items}
    tenants = list(dict.fromkeys(r["user_id"] for r in records))
    manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "tenants": tenants, "counts": counts}
    return {"records": records, "manifest": manifest}, where, 0, unknown


def item_records(rows: Iterable[Any], now: datetime, user_at: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The sessions and keys of a LangGraph store's rows (``ITEM_COLUMNS``, by prefix and key),
    and where each came from. Times are text (SQLite) or datetimes (PostgreSQL); a value is JSON
    text or the decoded document."""
    sessions: dict[tuple[str | None, str], dict[str, Any]] = {}
    items: list[dict[str, Any]] = []
    where: list[str] = []
    for prefix, key, raw, created, updated, expires, ttl_minutes in rows:
        here = f"store[{prefix!r}, {key!r}]"
        expires_at = None if expires is None else _time(expires, f"{here}.expires_at")
        if expires_at is not None and expires_at <= now:
            continue  # past its expiry, not yet swept: hidden, as memlens hides an expired key
        namespace = tuple(str(prefix).split("."))
        user = namespace[user_at] if len(namespace) > user_at else None
        session_id = SESSION_PREFIX + str(prefix)
        value = _value(raw, f"{here}.value")
        created_at, updated_at = _time(created, f"{here}.created_at"), _time(updated, f"{here}.updated_at")
        session = sessions.setdefault((user, session_id), {"created_at": created_at, "updated_at": updated_at})
        session["created_at"], session["updated_at"] = min(session["created_at"], created_at), max(session["updated_at"], updated_at)
        try:
            texts = list(strings(value))
        except RecursionError:
            raise ImportValidationError(f"{here}.value: nested deeper than memlens reads") from None
        items.append(
            {
                "type": "kv",
                "user_id": user,
                "session_id": session_id,
                "key": key,
                "value": value,
                "expires_at": None if expires_at is None else expires_at.isoformat(),
                "updated_at": updated_at.isoformat(),
                "created_at": created_at.isoformat(),
                "ttl_seconds": None if ttl_minutes is None else float(ttl_minutes) * 60,
                "search_text": "\n".join(texts) if texts else None,
            }
        )
        where.append(here)
    records = [
        {
            "type": "session",
            "user_id": user,
            "session_id": sid,
            "created_at": t["created_at"].isoformat(),
            "updated_at": t["updated_at"].isoformat(),
        }
        for (user, sid), t in sessions.items()
    ]
    return records + items, [f"namespace {sid.removeprefix(SESSION_PREFIX)!r}" for _, sid in sessions] + where


def _time(value: Any, where: str) -> datetime:
    """LangGraph writes SQLite's CURRENT_TIMESTAMP (UTC, ``YYYY-MM-DD HH:MM:SS``) or an ISO time
    with its offset; PostgreSQL gives a time with its zone."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    return source_time(value, where, "LangGraph")


def source_time(value: Any, where: str, writer: str) -> datetime:
    """An ISO time another library wrote, in UTC (one without an offset is UTC, as SQLite's
    CURRENT_TIMESTAMP is); anything else is refused naming ``where`` and the ``writer``."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    raise ImportValidationError(f"{where}: {value!r} is not a time {writer} writes")


def _value(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, dict):  # PostgreSQL's jsonb, decoded by the driver
        return raw
    try:
        value = json.loads(raw)
    except (TypeError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
        raise ImportValidationError(f"{where}: not the JSON document LangGraph writes") from None
    if not isinstance(value, dict):
        raise ImportValidationError(f"{where}: a {type(value).__name__}, not the JSON object LangGraph writes")
    return value


def strings(value: Any) -> Iterator[str]:
    """Every non-blank string a JSON document holds, in document order."""
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
