"""A LangGraph ``PostgresStore`` database (langgraph-checkpoint-postgres) read without changing
it: ``memlens langgraph-postgres:postgresql://...`` and ``store.open("langgraph-postgres:URL")``
show it where it lives, read-only and live, and :func:`import_langgraph_postgres` brings it into
a memlens store. Each item is placed as :mod:`.langgraph_sqlite` places a ``SqliteStore`` file's
(the same rule, ``user_at``), with the same search text.

The database is read in one read-only, repeatable-read transaction (the session's
``default_transaction_read_only`` on as well), so the reading is one snapshot and nothing can be
written through it; its ``store`` table must have the columns LangGraph writes and its
``store_migrations`` no version newer than LangGraph's known ones. The URL's password is in no
message, title or file memlens writes (``shown_url``).

Not erased in place: a row LangGraph deletes leaves its old versions in the table's heap and the
server's write-ahead log until vacuum and checkpoints have run, which memlens can neither force
for another application's database nor check byte for byte, as it checks a file. Erase with
LangGraph (``store.delete`` of each of the user's items), or import the memory into a memlens
store, where ``forget`` scrubs and checks. Needs ``psycopg`` (``pip install memlens[postgres]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..errors import InvalidInputError, SourceNotFoundError, SourceSchemaTooNewError, SourceToolMissingError, UnrecognizedSourceError
from ..locations import shown_url
from ..memory import MemoryStore
from .langgraph_sqlite import ITEM_COLUMNS, item_records, reading_of
from .loomflow_sqlite import LoomflowImportReport, LoomflowSource

__all__ = ["import_langgraph_postgres", "langgraph_postgres_stamp", "read_langgraph_postgres"]

# LangGraph's PostgresStore MIGRATIONS (langgraph/store/postgres/base.py): versions 0-3.
KNOWN_VERSION = 3
COLUMNS = {"prefix", "key", "value", "created_at", "updated_at", "expires_at", "ttl_minutes"}


def read_langgraph_postgres(url: str, *, now: datetime | None = None, keep_expired: bool = False, user_at: int = 1) -> LoomflowSource:
    """Read a LangGraph ``PostgresStore`` database into memory, never changing it; a database that
    cannot be reached, is not LangGraph's or of a newer schema raises a typed error naming it
    without its password. ``keep_expired`` and ``user_at`` as :func:`.langgraph_sqlite.read_langgraph_sqlite`."""
    if isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0:
        raise InvalidInputError(f"user_at must be a label position (0 or more), not {user_at!r}")
    at = datetime.min.replace(tzinfo=UTC) if keep_expired else (now or datetime.now(UTC))
    with _snapshot(url) as cur:
        _check_schema(cur, shown_url(url))
        cur.execute(f"SELECT {ITEM_COLUMNS} FROM store ORDER BY prefix, key")
        records, where = item_records(cur, at, user_at)
    document, where, _, unknown = reading_of(records, where, [])
    return LoomflowSource(Path(shown_url(url)), document, where, 0, tuple(unknown))


def import_langgraph_postgres(
    store: MemoryStore, url: str | LoomflowSource, *, actor: str = "langgraph-import", user_at: int = 1
) -> LoomflowImportReport:
    """Read the LangGraph ``PostgresStore`` database at ``url`` (never changing it) into ``store``,
    as :func:`.langgraph_sqlite.import_langgraph_sqlite` does a file."""
    from .loomflow_sqlite import import_loomflow_sqlite

    source = url if isinstance(url, LoomflowSource) else read_langgraph_postgres(url, user_at=user_at)
    return import_loomflow_sqlite(store, source, actor=actor)


def langgraph_postgres_stamp(url: str | Path) -> Any:
    """What changes when an item is written or deleted: the count of items and the latest write
    (LangGraph sets ``updated_at`` at every put), read in one snapshot."""
    with _snapshot(str(url)) as cur:
        _check_schema(cur, shown_url(str(url)))
        cur.execute("SELECT count(*), max(updated_at) FROM store")
        return cur.fetchone()


@contextmanager
def _snapshot(url: str) -> Iterator[Any]:
    """A cursor in a read-only, repeatable-read transaction on the database, rolled back and
    closed on leaving; the driver's errors become SourceNotFoundError, without the password."""
    try:
        import psycopg
    except ImportError:
        raise SourceToolMissingError("reading a LangGraph PostgresStore needs psycopg: pip install memlens[postgres]") from None
    conninfo = "postgresql://" + url.split("://", 1)[-1]
    try:
        conn = psycopg.connect(conninfo, connect_timeout=10, options="-c default_transaction_read_only=on")
        conn.read_only = True
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    except psycopg.Error as error:
        raise SourceNotFoundError(f"{shown_url(url)}: cannot read it ({_without_password(str(error), url)})") from None
    try:
        yield conn.cursor()
    except psycopg.Error as error:
        raise SourceNotFoundError(f"{shown_url(url)}: reading it failed ({_without_password(str(error), url)})") from None
    finally:
        try:
            conn.rollback()
        except psycopg.Error:
            pass  # the connection is gone: closing it is all there is to do
        conn.close()


def _check_schema(cur: Any, shown: str) -> None:
    cur.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name IN ('store', 'store_migrations')"
    )
    columns: dict[str, set[str]] = {}
    for table, column in cur.fetchall():
        columns.setdefault(table, set()).add(column)
    if "store" not in columns or "store_migrations" not in columns:
        raise UnrecognizedSourceError(f"{shown}: not a LangGraph PostgresStore database (no store and store_migrations tables)")
    missing = COLUMNS - columns["store"]
    if missing:
        raise UnrecognizedSourceError(f"{shown}: its store table lacks {', '.join(sorted(missing))}, which LangGraph writes")
    cur.execute("SELECT max(v) FROM store_migrations")
    version = cur.fetchone()[0]
    if version is not None and version > KNOWN_VERSION:
        raise SourceSchemaTooNewError(f"{shown}: LangGraph's store schema version {version} is newer than memlens reads ({KNOWN_VERSION})")


def _without_password(message: str, url: str) -> str:
    """A driver's message with any password of the URL taken out (libpq does not repeat it; kept safe anyway)."""
    rest = url.split("://", 1)[-1]
    userinfo = rest.partition("/")[0].rpartition("@")[0]
    secrets = [unquote(userinfo.partition(":")[2])] if ":" in userinfo else []
    secrets += [
        unquote(p.partition("=")[2])
        for p in rest.partition("?")[2].split("&")
        if p.partition("=")[0].lower() in ("password", "sslpassword")
    ]
    for secret in filter(None, secrets):
        message = message.replace(secret, "***")
    return " ".join(message.split())
