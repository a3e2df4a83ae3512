"""Opening an SQLite file safely: recognise it, refuse what is not ours, migrate, and
hand out short read and write transactions.

Writes start with ``BEGIN IMMEDIATE``: with deferred transactions two writers in WAL
mode fail with SQLITE_BUSY_SNAPSHOT despite the busy timeout (see MEASUREMENTS.md).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import make_url

from .errors import (
    DamagedStoreError,
    ForeignDatabaseError,
    MemlensError,
    NotADatabaseError,
    ReadOnlyStoreError,
    SchemaTooNewError,
    StoreBusyError,
    StoreOpenError,
)
from .migrations import APPLICATION_ID, CURRENT_VERSION, migrate, read_version

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000


def resolve_path(path_or_url: str | Path) -> Path:
    """Accept a filesystem path or an ``sqlite:///`` URL; memlens only speaks SQLite."""
    raw = str(path_or_url)
    if "://" in raw:
        url = make_url(raw)
        if url.get_backend_name() != "sqlite":
            raise StoreOpenError(f"memlens stores are SQLite files; {url.get_backend_name()!r} URLs are not supported")
        if not url.database or url.database == ":memory:":
            raise StoreOpenError("memlens needs a database file; in-memory SQLite cannot be shared between threads")
        raw = url.database
    return Path(raw).expanduser().resolve()


def translate(error: BaseException, path: Path) -> MemlensError | None:
    """Map SQLite's own complaints about a file to the typed errors users can act on."""
    orig = getattr(error, "orig", error)
    message = str(orig).lower()
    if "file is not a database" in message:
        return NotADatabaseError(f"{path} is not an SQLite database (or it is encrypted)")
    if "malformed" in message or "disk image" in message:
        return DamagedStoreError(
            f"{path} is damaged ({orig}); restore it from a backup or recover it with `sqlite3 {path.name} .recover`"
        )
    if "readonly" in message or "read-only" in message or "attempt to write a readonly" in message:
        return ReadOnlyStoreError(f"{path} is open read-only; reopen it with read_only=False to change it")
    if "database is locked" in message or "database table is locked" in message:
        return StoreBusyError(
            f"{path} is busy: another connection held it for longer than the busy timeout "
            f"({BUSY_TIMEOUT_MS / 1000:g} s); nothing was changed, try again"
        )
    return None


def inspect_file(path: Path) -> tuple[bool, int]:
    """Look at an existing file without writing a byte: (is_initialised, schema_version)."""
    with path.open("rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header and header != SQLITE_HEADER:
        raise NotADatabaseError(f"{path} is not an SQLite database: its header is not 'SQLite format 3'")
    if not header:
        return False, 0
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise translate(error, path) or StoreOpenError(f"cannot open {path}: {error}") from error
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if not tables and app_id == 0:
            return False, 0
        if app_id != APPLICATION_ID or "memlens_meta" not in tables:
            shown = ", ".join(sorted(tables)[:5]) or "none"
            raise ForeignDatabaseError(
                f"{path} is an SQLite database of another application (tables: {shown}); "
                "memlens will not touch it"
            )
        row = conn.execute("SELECT value FROM memlens_meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
    except sqlite3.Error as error:
        raise translate(error, path) or StoreOpenError(f"cannot read {path}: {error}") from error
    finally:
        conn.close()
    if version > CURRENT_VERSION:
        raise SchemaTooNewError(
            f"{path} has schema version {version}, newer than this memlens understands ({CURRENT_VERSION}); "
            "upgrade memlens to open it. The file was not changed."
        )
    return True, version


class Database:
    """An engine plus the discipline around it: pragmas, migrations, typed errors."""

    # Called after every committed write transaction (the store retries pending scrubs there).
    after_write: Callable[[], None] | None = None

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = resolve_path(path)
        self.read_only = read_only
        self._watch: sqlite3.Connection | None = None
        self._watch_lock = threading.Lock()
        exists = self.path.exists()
        if read_only and not exists:
            raise StoreOpenError(f"{self.path} does not exist; a read-only store cannot be created")
        if exists and self.path.is_dir():
            raise StoreOpenError(f"{self.path} is a directory, not a store file")
        if not exists and not self.path.parent.is_dir():
            raise StoreOpenError(f"cannot create {self.path}: folder {self.path.parent} does not exist")
        initialised, version = inspect_file(self.path) if exists else (False, 0)
        if read_only and version < CURRENT_VERSION:
            raise StoreOpenError(
                f"{self.path} has schema version {version} and needs migrating to {CURRENT_VERSION}; "
                "open it once without read_only"
            )
        self.engine = self._make_engine()
        if not read_only and (not initialised or version < CURRENT_VERSION):
            with self.write() as conn:
                migrate(conn, read_version(conn) if initialised else 0)

    def _make_engine(self) -> Engine:
        target = quote(str(self.path))
        url = f"sqlite:///file:{target}?uri=true" + ("&mode=ro" if self.read_only else "")
        engine = create_engine(url, connect_args={"check_same_thread": False}, pool_size=8)
        read_only = self.read_only

        @event.listens_for(engine, "connect")
        def _configure(dbapi_conn, _record):
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves, below
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys = ON")
            # Builds differ in the default (on here, off in apsw/pysqlite3): set it and check it took.
            cur.execute("PRAGMA secure_delete = ON")
            if cur.execute("PRAGMA secure_delete").fetchone()[0] != 1:
                raise StoreOpenError("this SQLite build refuses secure_delete; erased data could stay on disk")
            if read_only:
                cur.execute("PRAGMA query_only = ON")
            else:
                cur.execute("PRAGMA journal_mode = WAL")
                cur.execute("PRAGMA synchronous = NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql(f"BEGIN {conn.get_execution_options().get('memlens_begin', 'DEFERRED')}")

        return engine

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A deferred transaction: one consistent snapshot for everything read inside."""
        with self._guard(), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction; it commits on success and rolls back on any error."""
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} is open read-only; reopen it with read_only=False to change it")
        with self._guard(), self.engine.connect() as conn:
            conn.execution_options(memlens_begin="IMMEDIATE")
            with conn.begin():
                yield conn
        if self.after_write is not None:
            self.after_write()

    @contextmanager
    def raw(self) -> Iterator[sqlite3.Connection]:
        """The DBAPI connection, outside any transaction, for pragmas and maintenance."""
        with self._guard(), self.engine.connect() as conn:
            yield conn.connection.driver_connection

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except (exc.DBAPIError, sqlite3.Error) as error:
            typed = translate(error, self.path)
            if typed is None:
                raise
            raise typed from error

    def data_version(self) -> int:
        """A number that changes whenever any other connection, in any process, commits.
        Read on a connection of its own that never writes, so this store's writes count too."""
        with self._watch_lock:
            if self._watch is None:
                self._watch = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, check_same_thread=False)
            return self._watch.execute("PRAGMA data_version").fetchone()[0]

    def close(self) -> None:
        with self._watch_lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None
        self.engine.dispose()
