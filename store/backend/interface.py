"""What the store needs from a database engine, and nothing it does not.

Services (recall, data rights, the tiers) talk to a :class:`Backend` and to the :class:`Sql`
of a connection's dialect; only ``store/backend/<engine>/`` knows which engine it is. The
SQLite backend lives in :mod:`store.backend.sqlite`. Each method is written so a PostgreSQL
backend can implement it too: a generated ``tsvector`` column with GIN for the keyword index,
LISTEN/NOTIFY for change detection, and ``DELETE`` then ``VACUUM (FULL)`` / ``CHECKPOINT`` /
``pg_switch_wal()`` for erasure that leaves the data directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from sqlalchemy import Column, ColumnElement, Connection, Table

from ..tenancy import Tenant

if TYPE_CHECKING:
    import numpy as np

QueryVector: TypeAlias = "Sequence[float] | np.ndarray"

# (row key, score, matched terms), best first: what a keyword list holds.
KeywordHit = tuple[int, float, list[str]]


class KeywordIndex(Protocol):
    """Full-text search over episodes and facts, always inside one tenant. Scores are "higher is
    better" (SQLite's BM25 is negated here); a query's syntax is never the user's to write."""

    def expression(self, conn: Connection, tenant: Tenant, terms: list[str], *, min_prefix: int | None, cut_common: bool) -> str | None:
        """The engine's query for a query's words (any of them; the last one as a prefix when it
        is at least ``min_prefix`` letters long), or None when there are none. ``cut_common``
        leaves out words so common in the tenant's episodes that ranking them costs more than
        they tell. Nothing the user typed becomes query syntax."""

    def episodes(
        self,
        conn: Connection,
        tenant: Tenant,
        expression: str,
        limit: int,
        session_id: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[KeywordHit]:
        """The tenant's best ``limit`` episodes for ``expression`` (matched terms left empty)."""

    def episode_highlights(
        self, conn: Connection, tenant: Tenant, expression: str, pks: list[int], texts: Mapping[int, tuple[str, str]] | None = None
    ) -> dict[int, list[str]]:
        """The terms ``expression`` matched in each of these episodes (only these: marking is costly);
        ``texts`` (input, output by key), when the caller has read them, spare reading them again."""

    def facts(self, conn: Connection, tenant: Tenant, expression: str, limit: int, allowed: set[int] | None) -> list[KeywordHit]:
        """The tenant's best ``limit`` facts for ``expression``, among ``allowed`` row keys if given."""

    def drop_tenant(self, tenant: Tenant) -> None:
        """Let go of every copy of the tenant's memory the index keeps outside the database (an
        erasure calls it; counts and statistics may stay, they are numbers)."""

    def phrase_episodes(
        self,
        conn: Connection,
        tenant: Tenant,
        phrases: list[tuple[str, ...]],
        limit: int,
        session_id: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[int]:
        """Row keys of the tenant's newest ``limit`` episodes holding any of ``phrases`` (words in
        that order, as an identifier's pieces run), newest first; unranked."""


class ServerVectorIndex(Protocol):
    """An approximate vector index kept by the database server (PostgreSQL: pgvector's HNSW), one
    per tenant, built on request: :meth:`store.memory.MemoryStore.build_vector_index`. A tenant
    that has one is searched by the server; its vectors are never loaded into the searching process."""

    def has_index(self, conn: Connection, tenant: Tenant) -> bool:
        """Whether the tenant has the index now (built or dropped by any process)."""

    def nearest(
        self, conn: Connection, tenant: Tenant, kind: str, query: QueryVector, k: int, allowed: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """The tenant's ``k`` items of ``kind`` nearest ``query`` by the index (only ``allowed``
        keys, if given): (item key, cosine similarity), best first. Rows come from the table, so
        an erased one is never returned."""

    def similarities(self, conn: Connection, tenant: Tenant, kind: str, query: QueryVector, pks: Sequence[int]) -> dict[int, float]:
        """The exact cosine similarity to ``query`` of each of ``pks`` that has a vector."""

    def sampled_recall(self, conn: Connection, tenant: Tenant, kind: str, sample: int, k: int = 10, seed: int = 0) -> tuple[float, int]:
        """Recall@``k`` of the index against exact search over up to ``sample`` of the tenant's own
        vectors as queries; (recall, queries used)."""

    def build(self, tenant: Tenant) -> None:
        """Build the tenant's index (once; without blocking its writers)."""

    def drop(self, tenant: Tenant) -> None:
        """Drop the tenant's index: its searches are exact again."""


class Backend(Protocol):
    """One open store: its connections and transactions, schema, change detection, keyword
    index and the maintenance that makes erased bytes leave the storage.

    Implementations: :class:`store.backend.sqlite.database.Database` (a file) and
    :class:`store.backend.postgres.backend.PostgresBackend` (a database on a server). What a
    server store needs that a file does not is explicit here: the vector width at creation
    (``open_backend(vector_dim=...)``), a tenant's storage made before its first insert
    (:meth:`write`'s ``tenants``), an address that is not a file (:attr:`path`), and which
    tenants a scrub rewrites (:meth:`flush_erased_pages`'s ``tenants``)."""

    # Read-only to callers (properties, so an engine may narrow a type: a file's path is a Path).
    @property
    def path(self) -> Path | str:
        """Where the store lives, for export manifests and messages: a file's :class:`Path` for
        SQLite; for a server, its URL without the password (``postgresql://role@host:5432/db``)."""

    @property
    def read_only(self) -> bool: ...

    @property
    def schema_version(self) -> int:
        """The schema version this memlens writes (the backend's migrations brought the store to it)."""

    @property
    def keyword(self) -> KeywordIndex: ...

    @property
    def out_of_reach(self) -> str:
        """What no erasure by this store can reach (copies made outside it); every receipt says it."""

    @property
    def vector_index(self) -> ServerVectorIndex | None:
        """The server's approximate vector index, where the database has one (PostgreSQL); None for
        SQLite, whose large tenants get an in-process approximate index instead (store.recall.approximate)."""

    @property
    def index_folder(self) -> Path | None:
        """Where the in-process approximate indexes of large tenants are saved, so that another
        process maps them instead of building them (store.recall.saved_index): a folder beside a
        store file; None for a server store, whose database keeps its own index."""

    after_write: Callable[[], None] | None
    """Called after every committed write transaction (the store retries pending scrubs there)."""

    tenants_per_read: int | None
    """How many tenants one read transaction may count when a read spans tenants (the tenant
    list with its counts): None for no limit, every tenant in one snapshot. A server engine that
    locks each tenant's storage a statement reads, until the transaction ends, sets a limit, and
    a listing of more tenants reads them a group at a time."""

    def read(self) -> AbstractContextManager[Connection]:
        """A read transaction: one consistent snapshot for everything read inside."""

    def snapshot_reads(self) -> AbstractContextManager[Callable[[], AbstractContextManager[Connection]]]:
        """Reads that all see one snapshot, each a transaction of its own: gives a function that
        opens one. For a read of every tenant that a server must not hold locked at once (a
        whole store's copy, :attr:`tenants_per_read` tenants a read); a file's are one transaction."""

    def write(self, *tenants: Tenant, inserting: bool = True, whole_store: bool | None = None) -> AbstractContextManager[Connection]:
        """A write transaction that serialises from its start with every other writer of the
        same tenants (so two writers never both read, then both write), commits on success and
        rolls back on any error. ``tenants`` are those whose rows it reads and changes; naming
        none (or ``whole_store=True``) makes it a store-wide write, serialised with every other
        writer. ``whole_store=False`` with no tenant: a write that changes only store-wide
        records, each under :meth:`Sql.serialise`, or the rows of a tenant whose erasure is under
        way (a step of :func:`store.rights.erasure.erase_in_steps`). A write naming a tenant whose
        erasure is under way waits for its end (:func:`store.backend.shared.wait_out_erasure`). With ``inserting`` (the default) it may insert
        rows for ``tenants``: PostgreSQL attaches their partitions first, in short transactions
        of their own (once per tenant and process, and again if they were dropped since),
        because ATTACH holds its lock to the end of the transaction that runs it; a transaction
        that only changes or deletes a tenant's rows passes ``inserting=False`` and makes no
        storage for a tenant that has none. SQLite serialises every writer (``BEGIN IMMEDIATE``)
        and needs nothing made. Raises a typed error from :mod:`store.errors`, never a driver's;
        refuses with ReadOnlyStoreError on a read-only open."""

    def data_version(self) -> int:
        """A number that changes whenever anyone, in any process, commits (SQLite: PRAGMA
        data_version; PostgreSQL: a counter moved by LISTEN/NOTIFY, read after a round trip so a
        commit that returned before the call is counted)."""

    def files(self) -> list[Path]:
        """Every local file that holds the store's pages (its size in stats; never an export
        target). None for a server store."""

    def rewrite_keyword_indexes(self, max_steps: int = 100_000) -> bool:
        """Rewrite the keyword indexes so erased terms leave them (FTS5 segment merge), in short
        write transactions. False if concurrent writes kept it from finishing. PostgreSQL: a
        no-op, :meth:`flush_erased_pages` rebuilds the erased tenants' GIN indexes."""

    def flush_erased_pages(self, budget: float, tenants: Sequence[Tenant] = (), expired: Sequence[Tenant] = ()) -> tuple[bool, str | None]:
        """Push deleted rows' old page images out of logs and free space (SQLite: truncate the
        WAL, store-wide, ``tenants`` and ``expired`` unused; PostgreSQL: VACUUM (FULL) of each of
        ``tenants``' partitions, or drop them when the tenant was erased whole, and of the
        key-value partition of each of ``expired`` (tenants whose expired keys were purged),
        then CHECKPOINT, pg_switch_wal), waiting at most ``budget`` seconds for readers.
        Returns (done, why not)."""

    def close(self) -> None:
        """Release every connection."""


class Sql(Protocol):
    """Statements whose spelling differs between engines, for a connection's dialect."""

    def upsert(self, conn: Connection, table: Table, values: dict[str, Any], keys: Sequence[str], update: dict[str, Any] | None) -> None:
        """Insert ``values``; on a clash on ``keys`` set ``update`` (None: leave the row as it is)."""

    def replace(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """Insert ``rows``, replacing any row with the same primary key."""

    def replace_renewing_versions(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
        """:meth:`replace`, where every row written gets a :meth:`row_version` that no earlier row
        of ``table`` ever had, so a cache that compares versions sees every replacement."""

    def insert_keyed(self, conn: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
        """Insert rows that each have a unique ``id`` in one statement and return their integer
        row keys in input order (inside the write transaction no one else inserts)."""

    def row_version(self, table: Table) -> ColumnElement[int]:
        """A column that changes whenever a row is replaced through :meth:`replace_renewing_versions`
        (SQLite: rowid; PostgreSQL: xmin)."""

    def json_array_items(self, column: Column[Any] | ColumnElement[Any], path: str | None = None, *, name: str) -> Any:
        """A table-valued function over a JSON array (at ``path`` inside ``column``), with a
        ``value`` column: for ``exists(select ... where value in ...)``."""

    def json_field(self, value: ColumnElement[Any], path: str) -> ColumnElement[Any]:
        """The field at ``path`` ("$.a") of a JSON value."""

    def json_set(self, column: Column[Any], fields: dict[str, Any]) -> ColumnElement[Any]:
        """``column``'s JSON object with ``fields`` ("$.a": value) set."""

    def serialise(self, conn: Connection, record: str) -> None:
        """Inside a write transaction, before reading a store-wide ``record`` in order to change
        it: wait until no other transaction doing the same is still open (PostgreSQL, whose
        writers of different tenants run at once: an advisory lock to the end of the
        transaction). SQLite: nothing, its writers take turns."""
