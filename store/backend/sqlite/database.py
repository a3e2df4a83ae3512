"""Opening an SQLite file safely: recognise it, refuse what is not ours, migrate, and
hand out short read and write transactions.

Writes start with ``BEGIN IMMEDIATE``: with deferred transactions two writers in WAL
mode fail with SQLITE_BUSY_SNAPSHOT despite the busy timeout (measured: two writers with
deferred transactions failed; with BEGIN IMMEDIATE, none did).
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import make_url

from ...errors import (
    DamagedStoreError,
    ForeignDatabaseError,
    MemlensError,
    NotADatabaseError,
    ReadOnlyStoreError,
    StoreBusyError,
    StoreDatabaseError,
    StoreFullError,
    StoreNotFoundError,
    StoreOpenError,
)
from ...tenancy import Tenant, being_erased
from ..shared import refuse_version, wait_out_erasure
from . import keyword_rewrite, maintenance, schema_check
from .keyword import SqliteKeywordIndex
from .migrations import APPLICATION_ID, CURRENT_VERSION, migrate, read_version

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")


def side_files(path: Path) -> list[Path]:
    """The files SQLite keeps beside a database, which hold its pages too."""
    return [Path(f"{path}{suffix}") for suffix in SIDE_SUFFIXES]


def index_folder(path: Path) -> Path:
    """Where the store's large tenants' approximate indexes are saved (store.recall.saved_index)."""
    return Path(f"{path}-vectors")


def _on_read_only_filesystem(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _can_write(path: Path) -> bool:
    # The effective uid decides what this process may do; access() uses the real one by default.
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective)


def _refuses_writes_its_mode_allows(path: Path) -> bool:
    """An immutable or append-only file (``chattr +i``): this process may not write it though its
    mode says it may."""
    if _can_write(path):
        return False
    st = path.stat()
    return os.geteuid() == 0 or (st.st_uid == os.geteuid() and bool(st.st_mode & stat.S_IWUSR))


def _refused_write(path: Path) -> str:
    """Why a file this process may not write is so: its mode, unless its mode allows the write
    (root, or an owner with u+w), when the file itself refuses changes."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if _refuses_writes_its_mode_allows(path):
        return f"the file refuses writes that its mode {mode:04o} allows: it is immutable or append-only (lsattr shows it)"
    return f"no write permission: file mode {mode:04o}"


def _read_only_reason(path: Path) -> str | None:
    """Why this process cannot write the store, or None if it can."""
    if _on_read_only_filesystem(path.parent):
        return "read-only filesystem"
    if path.exists() and not _can_write(path):
        return _refused_write(path)
    for side in side_files(path)[:2]:
        if side.exists() and not _can_write(side):
            return f"no write permission on {side.name}, which SQLite writes beside the store"
    if not _can_write(path.parent) and not all(p.exists() for p in side_files(path)[:2]):
        return f"its folder {path.parent} cannot be written, and SQLite creates {path.name}-wal and {path.name}-shm there"
    return None


# SQLite sizes a -shm in 32 KiB pages before any connection uses it: a smaller one is a creation
# that failed (a full disk), which no connection can be using.
SHM_PAGE = 32 * 1024


def remove_side_files_a_full_disk_left(path: Path) -> None:
    """An empty -wal beside a -shm smaller than SQLite's first page: what a connection leaves when
    the disk was too full to create them. Neither holds anything; both go."""
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    try:
        if wal.stat().st_size == 0 and shm.stat().st_size < SHM_PAGE:
            shm.unlink()
            wal.unlink()
    except OSError:
        pass  # absent, or not ours to remove: SQLite copes with them as they are


def wal_is_absent(path: Path) -> bool:
    """No -wal file: no connection has the store open (SQLite removes it when the last one closes)."""
    return not Path(f"{path}-wal").exists()


def sqlite_uri(path: Path, *, read_only: bool, immutable: bool = False) -> str:
    return f"file:{quote(str(path))}" + ("?mode=ro" if read_only else "?mode=rw") + ("&immutable=1" if immutable else "")


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


def _disk_is_full(path: Path) -> bool:
    """SQLite says "disk I/O error" when the disk is full as it writes its shared-memory index."""
    try:
        return shutil.disk_usage(path.parent).free < 64 * 1024
    except OSError:
        return False


def translate(error: BaseException, path: Path) -> MemlensError | None:
    """Map SQLite's own complaints about a file to the typed errors users can act on."""
    orig = getattr(error, "orig", error)
    message = str(orig).lower()
    if "file is not a database" in message:
        return NotADatabaseError(f"{path} is not an SQLite database (or it is encrypted)")
    if "malformed" in message or "disk image" in message:
        return DamagedStoreError(f"{path} is damaged ({orig}); restore it from a backup or recover it with `sqlite3 {path.name} .recover`")
    if "readonly" in message or "read-only" in message or "attempt to write a readonly" in message:
        reason = _read_only_reason(path)
        if reason:
            return ReadOnlyStoreError(f"{path} is read-only ({reason}); open it with read_only=True to look at it", reason)
        return ReadOnlyStoreError(f"{path} is open read-only; reopen it with read_only=False to change it")
    if "database is locked" in message or "database table is locked" in message:
        return StoreBusyError(
            f"{path} is busy: another connection held it for longer than the busy timeout "
            f"({BUSY_TIMEOUT_MS / 1000:g} s); nothing was changed, try again"
        )
    if "database or disk is full" in message or ("disk i/o error" in message and _disk_is_full(path)):
        return StoreFullError(
            f"{path}: the disk is full; nothing was changed (the whole transaction was rolled back). Free space and try again"
        )
    if "unable to open database file" in message:
        reason = _read_only_reason(path)
        return StoreOpenError(
            f"cannot open {path}" + (f": {reason}" if reason else f" ({orig}); check that it and its folder are readable")
        )
    return None


def inspect_file(path: Path, *, empty_ok: bool = False) -> tuple[bool, int]:
    """Look at an existing file without writing a byte or creating a file: (is_initialised,
    schema_version). An empty file or empty SQLite database is a new store only if ``empty_ok``.

    A memlens file must hold exactly the schema memlens made and metadata it wrote
    (:mod:`store.schema_check`); anything else is refused before any connection that can write
    opens it."""
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreOpenError(f"cannot read {path}: {error.strerror}") from error
    if header and header != SQLITE_HEADER:
        raise NotADatabaseError(f"{path} is not an SQLite database: its header is not 'SQLite format 3'")
    if not header:
        if empty_ok:
            return False, 0
        raise NotADatabaseError(f"{path} is an empty file, not a memlens store; it was left as it is")
    try:
        # Without a -wal nothing has the store open, and immutable=1 keeps SQLite from creating
        # the -wal and -shm a read-only connection otherwise leaves behind.
        conn = sqlite3.connect(sqlite_uri(path, read_only=True, immutable=wal_is_absent(path)), uri=True)
    except sqlite3.Error as error:
        raise translate(error, path) or StoreOpenError(f"cannot open {path}: {error}") from error
    try:
        # Nothing the file's schema defines may call a function with side effects while we look.
        conn.execute("PRAGMA trusted_schema = OFF")
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if not tables and app_id == 0:
            if empty_ok:
                return False, 0
            raise ForeignDatabaseError(f"{path} is an empty SQLite database, not a memlens store; memlens will not touch it")
        if app_id != APPLICATION_ID or "memlens_meta" not in tables:
            shown = ", ".join(sorted(tables)[:5]) or "none"
            raise ForeignDatabaseError(f"{path} is an SQLite database of another application (tables: {shown}); memlens will not touch it")
        version = schema_check.verify(conn, path)
    except sqlite3.Error as error:
        raise translate(error, path) or StoreOpenError(f"cannot read {path}: {error}") from error
    finally:
        conn.close()
    refuse_version(path, version, CURRENT_VERSION, read_only=False)  # an older one: the caller knows whether it may migrate
    return True, version


def _harden(conn: sqlite3.Connection, cur: sqlite3.Cursor) -> None:
    """SQLite's advice for files that may come from someone else (sqlite.org/security.html).

    ``trusted_schema`` is off: nothing the file's schema defines may call a function with side
    effects or use a virtual table. Write transactions turn it back on for their duration
    (``_begin``): memlens's own triggers keep the FTS5 indexes in step, and SQLite 3.40's FTS5 is
    not marked innocuous ("unsafe use of virtual table" otherwise). That is safe because
    :func:`inspect_file` refused any file whose schema memlens did not make, before this
    connection existed. Defensive mode needs ``sqlite3_db_config``, which Python's sqlite3
    exposes from 3.12 (``setconfig``); on 3.11 the only way would be ctypes on the private
    layout of CPython's connection object, which a different build turns into a crash, so
    3.11 goes without it. ``cell_size_check`` makes a damaged or crafted b-tree page an error
    instead of an out-of-bounds read; no memory map, so a corrupt page is never mapped.
    """
    cur.execute("PRAGMA trusted_schema = OFF")
    if cur.execute("PRAGMA trusted_schema").fetchone()[0] != 0:
        raise StoreOpenError("this SQLite build ignores trusted_schema; memlens needs SQLite 3.31 or newer")
    setconfig = getattr(conn, "setconfig", None)
    if setconfig is not None:
        setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)  # type: ignore[attr-defined]  # Python 3.12's name; setconfig exists only there
    cur.execute("PRAGMA cell_size_check = ON")
    cur.execute("PRAGMA mmap_size = 0")


class Database:
    """An engine plus the discipline around it: pragmas, migrations, typed errors. The SQLite
    :class:`store.backend.interface.Backend`."""

    # Called after every committed write transaction (the store retries pending scrubs there).
    after_write: Callable[[], None] | None = None
    schema_version = CURRENT_VERSION
    out_of_reach = "copies of the file made outside memlens (backups, snapshots, synced or copied files)"
    vector_index = None  # large tenants get an in-process approximate index (store.recall.approximate)
    tenants_per_read: int | None = None  # a read locks nothing: one snapshot counts every tenant

    def __init__(self, path: str | Path, *, read_only: bool = False, create: bool = True):
        self.path = resolve_path(path)
        self.read_only = read_only
        self.index_folder: Path | None = index_folder(self.path)
        self.keyword = SqliteKeywordIndex(self.read, self.data_version)
        self._watch: sqlite3.Connection | None = None
        self._watch_lock = threading.Lock()
        exists = self.path.exists()
        if not exists:
            if read_only or not create:
                hint = "" if read_only else " (pass create=True to create a store there)"
                raise StoreNotFoundError(f"{self.path} does not exist; nothing was created{hint}")
            if not self.path.parent.is_dir():
                raise StoreOpenError(f"cannot create {self.path}: folder {self.path.parent} does not exist")
        elif self.path.is_dir():
            raise StoreOpenError(f"{self.path} is a directory, not a store file")
        elif not stat.S_ISREG(self.path.stat().st_mode):
            raise StoreOpenError(f"{self.path} is not a regular file")
        elif not read_only:
            self._check_writable()
        elif wal_is_absent(self.path) and not _on_read_only_filesystem(self.path.parent) and not _can_write(self.path.parent):
            raise StoreOpenError(
                f"cannot read {self.path}: SQLite must create {self.path.name}-wal and -shm beside it to read it, "
                f"and this process cannot write its folder {self.path.parent}; look at a copy in a writable folder"
            )
        initialised, version = inspect_file(self.path, empty_ok=create and not read_only) if exists else (False, 0)
        refuse_version(self.path, version, CURRENT_VERSION, read_only=read_only)
        # Nothing can change a file on a read-only filesystem, so SQLite may skip the -shm it
        # could not create there; elsewhere an immutable reader would miss other processes' writes.
        # So may a file that refuses every write (chattr +i): only its attribute's removal changes it.
        unchangeable = _on_read_only_filesystem(self.path.parent) or (exists and _refuses_writes_its_mode_allows(self.path))
        self.immutable = read_only and wal_is_absent(self.path) and unchangeable
        self._tidy_on_close = read_only and not self.immutable
        created = not exists and self._create_private_file()
        try:
            self.engine = self._make_engine()
            if not read_only and (not initialised or version < CURRENT_VERSION):
                with self.write() as conn:
                    migrate(conn, read_version(conn) if initialised else 0)
        except BaseException:
            if hasattr(self, "engine"):
                self.engine.dispose()  # the last connection to close removes the -wal and -shm
            if created:
                for leftover in (self.path, *side_files(self.path)):
                    leftover.unlink(missing_ok=True)
            else:
                remove_side_files_a_full_disk_left(self.path)
            raise

    def _create_private_file(self) -> bool:
        """Create the store file owner-only before SQLite does: SQLite gives the -wal and -shm the
        database file's mode, so they hold personal data owner-only too."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            os.close(os.open(self.path, flags, 0o600))
        except FileExistsError:
            return False  # another process created it a moment ago; it opens as an existing store
        except OSError as error:
            raise StoreOpenError(f"cannot create {self.path}: {error.strerror}") from error
        return True

    def _check_writable(self) -> None:
        """Refuse, with the reason, a store this process cannot write, before SQLite quietly
        opens it read-only and fails at the first write. Opening for writing changes nothing."""
        refused = None
        try:
            os.close(os.open(self.path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0)))
        except OSError as error:
            if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise StoreOpenError(f"cannot open {self.path}: {error.strerror}") from error
            refused = error.strerror
        reason = _read_only_reason(self.path) or refused
        if reason:
            raise ReadOnlyStoreError(f"{self.path} is read-only ({reason}); open it with read_only=True to look at it", reason)

    def _make_engine(self) -> Engine:
        url = f"sqlite:///{sqlite_uri(self.path, read_only=self.read_only, immutable=self.immutable)}&uri=true"
        engine = create_engine(url, connect_args={"check_same_thread": False}, pool_size=8)
        read_only = self.read_only

        @event.listens_for(engine, "connect")
        def _configure(dbapi_conn: sqlite3.Connection, _record: object) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves, below
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys = ON")
            # Builds differ in the default (on here, off in apsw/pysqlite3): set it and check it took.
            cur.execute("PRAGMA secure_delete = ON")
            if cur.execute("PRAGMA secure_delete").fetchone()[0] != 1:
                raise StoreOpenError("this SQLite build refuses secure_delete; erased data could stay on disk")
            _harden(dbapi_conn, cur)
            if read_only:
                cur.execute("PRAGMA query_only = ON")
            else:
                cur.execute("PRAGMA journal_mode = WAL")
                cur.execute("PRAGMA synchronous = NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            mode = conn.get_execution_options().get("memlens_begin", "DEFERRED")
            # Only write transactions fire memlens's triggers, which need a trusted schema (_harden).
            raw = conn.connection.dbapi_connection
            assert raw is not None  # the transaction's connection is checked out
            raw.execute(f"PRAGMA trusted_schema = {int(mode == 'IMMEDIATE')}")
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A deferred transaction: one consistent snapshot for everything read inside."""
        with self._guard(), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def snapshot_reads(self) -> Iterator[Callable[[], AbstractContextManager[Connection]]]:
        """One read transaction, which every read given out shares (a read locks nothing here)."""
        with self.read() as conn:
            yield lambda: nullcontext(conn)

    @contextmanager
    def write(self, *tenants: Tenant, inserting: bool = True, whole_store: bool | None = None) -> Iterator[Connection]:
        """A write transaction; it commits on success and rolls back on any error. Every writer
        of a file takes turns (BEGIN IMMEDIATE), whatever ``tenants`` and ``whole_store`` say,
        and a file needs nothing made before a tenant's first row (``inserting``)."""
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} is open read-only; reopen it with read_only=False to change it")
        since = time.monotonic()
        with self._guard():
            while True:
                with self.engine.connect() as conn:
                    conn.execution_options(memlens_begin="IMMEDIATE")
                    transaction = conn.begin()
                    erasing = being_erased(conn, tenants)
                    if not erasing:
                        with transaction:
                            yield conn
                        break
                    transaction.rollback()  # the erasure writes between its steps: let it
                wait_out_erasure(erasing, since, self.path)
        if self.after_write is not None:
            self.after_write()

    @contextmanager
    def raw(self) -> Iterator[sqlite3.Connection]:
        """The DBAPI connection, outside any transaction, for pragmas and maintenance."""
        with self._guard(), self.engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None  # a checked-out connection has its driver connection
            yield raw

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except (exc.DBAPIError, sqlite3.Error) as error:
            typed = translate(error, self.path)
            if typed is None:
                # Never a raw driver error: the caller gets a typed one, with SQLite's own words.
                orig = getattr(error, "orig", error)
                typed = StoreDatabaseError(f"{self.path}: SQLite refused a statement ({type(orig).__name__}: {orig}); nothing was changed")
            raise typed from error

    def data_version(self) -> int:
        """A number that changes whenever any other connection, in any process, commits.
        Read on a connection of its own that never writes, so this store's writes count too."""
        with self._watch_lock:
            if self._watch is None:
                uri = sqlite_uri(self.path, read_only=True, immutable=self.immutable)
                self._watch = sqlite3.connect(uri, uri=True, check_same_thread=False)
            version: int = self._watch.execute("PRAGMA data_version").fetchone()[0]
            return version

    def files(self) -> list[Path]:
        """The database file, the side files that can hold its pages, and the saved indexes."""
        folder = index_folder(self.path)
        saved = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
        return [self.path, *side_files(self.path), *saved]

    def rewrite_keyword_indexes(self, max_steps: int = 100_000) -> bool:
        return keyword_rewrite.rewrite_keyword_indexes(self.write, max_steps)

    def flush_erased_pages(self, budget: float, tenants: Sequence[Tenant] = (), expired: Sequence[Tenant] = ()) -> tuple[bool, str | None]:
        with self.raw() as raw:
            return maintenance.truncate_wal(raw, budget)

    def close(self) -> None:
        with self._watch_lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None
        self.engine.dispose()
        if self._tidy_on_close:
            self._remove_side_files()
        remove_side_files_a_full_disk_left(self.path)

    def _remove_side_files(self) -> None:
        """Read-only connections create the -wal and -shm when they are missing and cannot remove
        them, nor can a writer that closes while they are open. A read-write connection that closes
        last removes both, after checkpointing what the WAL holds (nothing, after a clean close);
        while another connection is open it removes nothing."""
        if wal_is_absent(self.path) or not _can_write(self.path) or not _can_write(self.path.parent):
            return
        try:
            conn = sqlite3.connect(sqlite_uri(self.path, read_only=False), uri=True, timeout=0)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # busy or unreadable: the files stay, as SQLite itself would leave them


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import Backend

    _implements_backend: type[Backend] = Database
