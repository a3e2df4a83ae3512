"""A memlens store inside a PostgreSQL database: the :class:`store.backend.interface.Backend`
assembled from this package's parts.

Writers lock what they write, for the whole transaction (:mod:`.locks`): a writer of tenants
takes each tenant's advisory lock, in key order so two writers of {a, b} and {b, a} never
deadlock, and the store lock in shared mode; a store-wide write (re-embedding, a migration)
takes the store lock exclusively and so waits for every tenant writer and holds them all off.
Writers of different tenants therefore run together, while two writers of one tenant take turns,
as SQLite's ``BEGIN IMMEDIATE`` makes every writer do: the services read, then write (a tenant's
id checks, a block's slot, the open fact a new one supersedes), and two writers of one tenant that
both read before either wrote would lose one's update. What the services read-then-write across
tenants (the erasure counter, the pending-scrub record, the embedding model's name) takes a
record lock of its own just before it reads (:meth:`~.sql.PostgresSql.serialise`). A writer waits
at most :data:`~.errors.LOCK_TIMEOUT_S` (read at each use, so one setting governs every lock wait) for a lock, then gets :class:`~store.errors.StoreBusyError`.
Reads are ``REPEATABLE READ, READ ONLY``: one snapshot for everything read inside.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, exc, text
from sqlalchemy.engine import URL, make_url

from ...errors import (
    ForeignDatabaseError,
    ModelMismatchError,
    ReadOnlyStoreError,
    StoreBusyError,
    StoreDatabaseError,
    StoreNotFoundError,
    StoreOpenError,
)
from ...locations import shown_url
from ...tenancy import Tenant, being_erased
from ..shared import refuse_version, wait_out_erasure
from . import ddl, engine, locks, partitions, scrub, tables
from . import errors as pg_errors
from .changes import ChangeCounter
from .errors import translate, translated
from .keyword import SNAPSHOT_VERSION, PostgresKeywordIndex
from .vectors import PgvectorIndex

# The width a store gets when it is created with no embedder (keyword recall only): the packaged
# model's, so the default model can embed into it later.
DEFAULT_VECTOR_DIM = 384


_UNSHOWN = "(the URL is not shown: it may hold a password)"


def parse(url: str) -> URL:
    """``postgresql://`` or ``postgresql+psycopg://`` (psycopg 3 is the one driver memlens speaks).

    A URL that does not parse is refused without being repeated: its text may hold a password."""
    try:
        parsed = make_url(url)
        parsed.port  # noqa: B018 (SQLAlchemy parses the port when asked, and raises ValueError then)
    except (exc.ArgumentError, ValueError):
        raise StoreOpenError(f"not a PostgreSQL URL of the form postgresql://role:password@host:port/database {_UNSHOWN}") from None
    if parsed.host and "@" in parsed.host:
        # postgresql://role:p@ss@host/db: the password's tail would show as part of the host
        raise StoreOpenError(f"the URL's role or password holds an '@': write it as %40 {_UNSHOWN}")
    if parsed.drivername not in ("postgresql", "postgresql+psycopg", "postgres"):
        raise StoreOpenError(
            f"memlens reaches PostgreSQL through psycopg 3: use postgresql:// or postgresql+psycopg://, not {parsed.drivername}://"
        )
    if not parsed.database:
        raise StoreOpenError("a PostgreSQL store URL names its database: postgresql://user@host/DATABASE")
    return parsed.set(drivername="postgresql+psycopg")


def address(url: URL) -> str:
    """What messages, manifests and the audit log name: the URL with no password (``shown_url``)."""
    return shown_url(url.render_as_string(hide_password=False))


class PostgresBackend:
    """The PostgreSQL :class:`store.backend.interface.Backend`."""

    after_write: Callable[[], None] | None = None
    schema_version = ddl.CURRENT_VERSION
    out_of_reach = scrub.OUT_OF_REACH
    tenants_per_read: int | None = tables.TENANTS_PER_READ

    def __init__(self, url: str | Path, *, read_only: bool = False, create: bool = True, vector_dim: int | None = None):
        self.url = parse(str(url))
        self.path = address(self.url)
        self.read_only = read_only
        self.index_folder: Path | None = None  # the database keeps its own vector index
        self._prepared: set[str] = set()
        self._prepared_lock = threading.Lock()
        self._changes: ChangeCounter | None = None
        self._changes_lock = threading.Lock()
        self.engine = engine.create(self.url.render_as_string(hide_password=False), pool_size=8, max_overflow=8, pool_pre_ping=True)
        self.vector_index = PgvectorIndex(self.engine, self.path, read_only)
        self.keyword = PostgresKeywordIndex()
        try:
            self._open(create, vector_dim)
        except BaseException:
            self.engine.dispose()
            raise

    def _open(self, create: bool, vector_dim: int | None) -> None:
        try:
            with self.engine.connect() as conn:
                version = ddl.read_version(conn)
                foreign = (
                    []
                    if version
                    else list(
                        conn.execute(
                            text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1 LIMIT 5")
                        ).scalars()
                    )
                )
                width = self._vector_width(conn) if version else None
                conn.rollback()
        except exc.DBAPIError as error:
            raise translate(error, self.path, connecting=True) from None
        if foreign:
            raise ForeignDatabaseError(f"{self.path} holds tables of another application ({', '.join(foreign)}); memlens will not touch it")
        refuse_version(self.path, version, ddl.CURRENT_VERSION, read_only=self.read_only)
        if version == 0 and (self.read_only or not create):
            hint = "" if self.read_only else " (pass create=True to create a store there)"
            raise StoreNotFoundError(f"{self.path} holds no memlens store; nothing was created{hint}")
        if width is not None and vector_dim is not None and width != vector_dim:
            raise ModelMismatchError(
                f"{self.path} keeps vectors of {width} dimensions and this embedder makes {vector_dim}; "
                "open it with the model that made them"
            )
        if version < ddl.CURRENT_VERSION:
            try:
                with self.engine.begin() as conn:
                    ddl.migrate(conn, dim=vector_dim or DEFAULT_VECTOR_DIM)
            except exc.DBAPIError as error:
                message = str(getattr(error, "orig", error)).lower()
                if "vector" in message and ("extension" in message or "control file" in message):
                    raise StoreOpenError(
                        f"cannot create a store in {self.path}: the server lacks the pgvector extension "
                        "(install it, or have an administrator run CREATE EXTENSION vector)"
                    ) from None
                raise translate(error, self.path) from None

    @staticmethod
    def _vector_width(conn: Connection) -> int | None:
        value = conn.execute(text("SELECT value FROM memlens_meta WHERE key = 'vector_dim'")).scalar()
        return int(value) if value else None

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A REPEATABLE READ, READ ONLY transaction: one snapshot for everything read inside."""
        with translated(self.path):
            # Read before the snapshot is taken, so the snapshot holds every commit it counts
            # (the keyword statistics cache relies on it: keyword.StatisticsCache).
            version = self.data_version()
            with self.engine.connect() as conn:
                conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                conn.info[SNAPSHOT_VERSION] = version
                try:
                    with conn.begin():
                        yield conn
                finally:
                    conn.info.pop(SNAPSHOT_VERSION, None)

    @contextmanager
    def snapshot_reads(self) -> Iterator[Callable[[], AbstractContextManager[Connection]]]:
        """Read transactions that each import the snapshot of one held open meanwhile
        (``pg_export_snapshot``): what each reads it unlocks at its end, and all see the same
        commits, as one transaction would."""
        with self.read() as holder:
            snapshot = holder.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            if not re.fullmatch(r"[0-9A-Fa-f-]+", snapshot):  # a SET takes no parameter: it is written in
                raise StoreDatabaseError(f"{self.path}: the server gave an unexpected snapshot id {snapshot!r}")
            version = holder.info[SNAPSHOT_VERSION]

            @contextmanager
            def read() -> Iterator[Connection]:
                with translated(self.path), self.engine.connect() as conn:
                    conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                    conn.info[SNAPSHOT_VERSION] = version
                    try:
                        with conn.begin():
                            # Before anything else in the transaction, as PostgreSQL requires.
                            conn.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
                            yield conn
                    finally:
                        conn.info.pop(SNAPSHOT_VERSION, None)

            yield read

    def prepare(self, tenant: Tenant) -> None:
        """Make the tenant's partitions exist (ATTACH, in its own short transaction), once per
        process: a row cannot be inserted before its partition exists."""
        if tenant.key in self._prepared:
            return
        with self._prepared_lock, translated(self.path):
            if tenant.key not in self._prepared:
                partitions.ensure(self.engine, tenant)
                self._prepared.add(tenant.key)

    @contextmanager
    def write(self, *tenants: Tenant, inserting: bool = True, whole_store: bool | None = None) -> Iterator[Connection]:
        """A write transaction holding the locks of ``tenants`` (or, naming none, of the whole
        store) from its start; with ``inserting`` their partitions exist throughout it."""
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} is open read-only; reopen it with read_only=False to change it")
        exclusive = not tenants if whole_store is None else whole_store
        since, dropped = time.monotonic(), 0
        while dropped < 3:  # a drop between the check and the locks, three times over, is busy
            if inserting:
                for tenant in tenants:
                    self.prepare(tenant)
            with translated(self.path), self.engine.connect() as conn:
                transaction = conn.begin()
                try:
                    conn.execute(text(f"SET LOCAL lock_timeout = '{pg_errors.LOCK_TIMEOUT_S}s'"))
                    locks.take(conn, tenants, exclusive=exclusive)
                    # Checked under the tenants' locks, which a whole-tenant erasure holds while it
                    # drops their partitions: this process may still believe they exist.
                    erasing = being_erased(conn, tenants)
                    gone = [t for t in tenants if inserting and not erasing and not partitions.all_attached(conn, t)]
                except BaseException:
                    transaction.rollback()
                    raise
                if erasing:
                    transaction.rollback()  # the erasure writes between its steps: let it
                    wait_out_erasure(erasing, since, self.path)
                    continue
                if gone:
                    transaction.rollback()
                    with self._prepared_lock:
                        self._prepared.difference_update(t.key for t in gone)
                    dropped += 1
                    continue
                with transaction:
                    yield conn
                break
        else:
            raise StoreBusyError(
                f"{self.path} is busy: the partitions of {', '.join(repr(t.key) for t in gone)} were dropped "
                "again and again while this write waited; nothing was changed, try again"
            )
        if self.after_write is not None:
            self.after_write()

    def forget_partitions(self, tenant: Tenant) -> None:
        """This process no longer assumes ``tenant``'s partitions exist (they were dropped)."""
        with self._prepared_lock:
            self._prepared.discard(tenant.key)

    # --- change detection, files, maintenance ----------------------------------------------

    def data_version(self) -> int:
        """The LISTEN/NOTIFY change counter (:mod:`.changes`), on a connection of its own."""
        with self._changes_lock:
            if self._changes is None:
                libpq = self.url.set(drivername="postgresql").render_as_string(hide_password=False)
                try:
                    self._changes = ChangeCounter(libpq)
                except Exception as error:  # psycopg.Error: the server went away since the store opened
                    raise translate(error, self.path) from None
            return self._changes.version()

    def files(self) -> list[Path]:
        """None on this machine: the store's pages live in the server's data directory."""
        return []

    def rewrite_keyword_indexes(self, max_steps: int = 100_000) -> bool:
        """Nothing to do apart: the scrub's VACUUM (FULL) of a tenant's partitions rebuilds their
        GIN indexes, and no other tenant's index ever held the erased words."""
        return True

    def flush_erased_pages(self, budget: float, tenants: Sequence[Tenant] = (), expired: Sequence[Tenant] = ()) -> tuple[bool, str | None]:
        """Rewrite (or, for a tenant erased whole, drop) the erased ``tenants``' partitions and
        the key-value partitions of ``expired``, and push the old pages out of the WAL
        (:func:`.scrub.scrub`); each wait for a partition's readers lasts at most ``budget``
        seconds (at least 0.1)."""
        if self.read_only:
            return False, "the store is open read-only; open it read-write to scrub"
        erased = list(dict.fromkeys(t.key for t in tenants))
        # A purge of expired keys touched only the key-value table and the vectors of searchable
        # keys: rewriting the tenant's episodes too would cost a purge what an erasure's scrub costs.
        work = [(key, list(tables.PARTITIONED)) for key in erased]
        work += [(key, ["kv_entries", "vectors"]) for key in dict.fromkeys(t.key for t in expired) if key not in erased]
        reasons = []
        for key, parents in work:
            try:
                result = scrub.scrub(self.engine, Tenant(key), parents, lock_timeout=max(budget, 0.1))
            except exc.DBAPIError as error:
                typed = translate(error, self.path)
                return False, f"{typed}; the scrub stays pending"
            if result.dropped:
                self.forget_partitions(Tenant(key))
            if not result.done:
                reasons.append(result.reason)
        if reasons:
            return False, "; ".join(dict.fromkeys(r for r in reasons if r))
        return True, None

    def close(self) -> None:
        with self._changes_lock:
            if self._changes is not None:
                self._changes.close()
                self._changes = None
        self.engine.dispose()


if TYPE_CHECKING:  # the engine declares what it implements; mypy checks every member and its types
    from ..interface import Backend

    _implements_backend: type[Backend] = PostgresBackend
