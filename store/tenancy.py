"""The one place that enforces the tenant partition.

Every table has a ``user_id`` column; the anonymous bucket is stored as the empty
string so that it is a partition like any other (NULL would slip past unique
constraints and ``=`` comparisons). Store code never names that column: it asks a
:class:`Tenant` for its selects, updates, deletes and insert values, so no query
can be built without the partition.

A tenant whose whole-tenant erasure is under way carries a marker (a ``memlens_meta`` row,
:func:`erasing_key`), written in the transaction that commits the erasure, removed in the one
that deletes its last row. The erasure deletes in short transactions in between, so other
tenants' writers never wait long; the marker makes the tenant read as gone from the first of
them: every tenant-scoped statement and every listing of tenants tests it, so no reader or
export sees a half-erased tenant, and the tenant's writers wait until it is gone (the backends'
``write``). The audit log is the exception: an erasure's proof outlives it.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from sqlalchemy import (
    BindParameter,
    Column,
    ColumnElement,
    Connection,
    Delete,
    Select,
    Table,
    Update,
    and_,
    delete,
    exists,
    func,
    literal,
    select,
    update,
)

from .errors import InvalidInputError, IsolationWarning, UnknownTenantError, close_matches, did_you_mean
from .schema import audit_t, meta_t, tenants_t

T = TypeVar("T")

ANONYMOUS_KEY = ""


class _Unset:
    def __repr__(self) -> str:
        return "<anonymous>"


ERASING_PREFIX = "erasing:"


def erasing_key(tenant_key: str) -> str:
    """The ``memlens_meta`` key of the marker of a tenant whose erasure is under way."""
    return ERASING_PREFIX + tenant_key


def not_being_erased(user_id: ColumnElement[str] | Column[str] | str) -> ColumnElement[bool]:
    """The tenant (a key, or a row's tenant column) has no erasure under way. For a key the
    subquery does not depend on the row, so the engine evaluates it once per statement."""
    if isinstance(user_id, str):
        return _not_being_erased(user_id)
    return ~exists(select(meta_t.c.key).where(meta_t.c.key == literal(ERASING_PREFIX).concat(user_id)))


@lru_cache(maxsize=4096)
def _not_being_erased(key: str) -> ColumnElement[bool]:
    # Built once per tenant: clauses are immutable, and building this one cost about a tenth of a
    # millisecond a query (measured: 14% of a LangGraph put/get/search/list cycle).
    return ~exists(select(meta_t.c.key).where(meta_t.c.key == erasing_key(key)))


# Audit entries are the proof of what was done to a tenant, its erasure included: they stay
# readable while the erasure runs and after it.
_OUTLIVE_ERASURE = frozenset({audit_t.name})


@lru_cache(maxsize=4096)
def _owned_by(tenant: Tenant, table: Table) -> ColumnElement[bool]:
    # The most built clause of all (every tenant-scoped statement): built once per tenant and table.
    return tenant._visible(table, table.c.user_id == tenant.key)


UNSET: Any = _Unset()
"""Default of every ``user_id`` parameter: the anonymous bucket, with an IsolationWarning when
the store holds named users. Pass ``user_id=None`` to mean the anonymous bucket on purpose."""


@dataclass(frozen=True, slots=True)
class Tenant:
    key: str

    @classmethod
    def of(cls, user_id: str | None) -> Tenant:
        if user_id is None:
            return cls(ANONYMOUS_KEY)
        if not isinstance(user_id, str):
            raise InvalidInputError(f"user_id must be a string or None, not {type(user_id).__name__}")
        try:
            user_id.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError("user_id contains a lone surrogate") from None
        # One name, one tenant: "zoë" typed on one keyboard (NFC, what terminals send) and stored
        # from another (NFD, e + combining diaeresis) is the same person, and an erasure of one
        # form must reach the other. Every name is kept in NFC; the migrations moved older ones.
        user_id = unicodedata.normalize("NFC", user_id)
        if not user_id or user_id.strip() != user_id or "\x00" in user_id or len(user_id) > 256:
            raise InvalidInputError(
                "user_id must be 1-256 characters without surrounding spaces or NULs; use None for the anonymous bucket"
            )
        return cls(user_id)

    @property
    def user_id(self) -> str | None:
        return user_id_of(self.key)

    @property
    def is_anonymous(self) -> bool:
        return self.key == ANONYMOUS_KEY

    def owns(self, table: Table) -> ColumnElement[bool]:
        return _owned_by(self, table)

    def _visible(self, table: Table, test: ColumnElement[bool]) -> ColumnElement[bool]:
        return test if table.name in _OUTLIVE_ERASURE else and_(test, not_being_erased(self.key))

    def owns_while_erasing(self, table: Table) -> ColumnElement[bool]:
        """The tenant's rows, its erasure marker notwithstanding: for the erasure's own deletes."""
        return table.c.user_id == self.key

    def select(self, table: Table, *columns: Any) -> Select[Any]:
        return select(*(columns or (table,))).where(self.owns(table))

    def select_keys(self, table: Table, key_column: Any, keys: Sequence[int] | BindParameter[Any]) -> Select[Any]:
        """Rows by primary key, still only this tenant's. The tenant test is written so SQLite
        cannot use the (unselective) tenant index for it and looks the keys up directly."""
        return select(table).where(key_column.in_(keys), self.owns_unindexed(table))

    def owns_unindexed(self, table: Table) -> ColumnElement[bool]:
        """The tenant test written so SQLite cannot use the tenant index for it: for queries that
        another index drives (the keyword index, row keys) and that stop after a few rows."""
        return self._visible(table, table.c.user_id.concat("") == self.key)

    def update(self, table: Table) -> Update:
        return update(table).where(self.owns(table))

    def delete(self, table: Table) -> Delete:
        return delete(table).where(self.owns(table))

    def key_columns(self, *columns: str) -> list[str]:
        """The conflict target of an upsert into a tenant-scoped table: the tenant, then ``columns``."""
        return ["user_id", *columns]

    def stamp(self, row: dict[str, Any]) -> dict[str, Any]:
        """Insert values for this tenant; a row can never name another tenant."""
        return {**row, "user_id": self.key}


def resolve(user_id: Any, named_tenants_exist: Callable[[], bool], *, stacklevel: int) -> Tenant:
    """The tenant a caller's ``user_id`` names. Omitted (:data:`UNSET`), it is the anonymous
    bucket, with an :class:`IsolationWarning` when the store holds named users (``user_id=None``
    says the anonymous bucket is meant); ``stacklevel`` counts from the caller of this function
    to the line the warning should name."""
    if user_id is UNSET:
        if named_tenants_exist():
            warnings.warn(
                "no user_id given: using the anonymous bucket of a store that holds named users; pass user_id=None to mean it",
                IsolationWarning,
                stacklevel=stacklevel + 1,
            )
        return Tenant.of(None)
    return Tenant.of(user_id)


def user_id_of(key: str) -> str | None:
    return None if key == ANONYMOUS_KEY else key


# Keys bound in one statement at most (SQLite allows 32,766; PostgreSQL 65,535).
KEYS_PER_STATEMENT = 1000


def key_batches(keys: list[str]) -> list[list[str]]:
    """``keys`` in batches of at most KEYS_PER_STATEMENT, one statement each."""
    return [keys[start : start + KEYS_PER_STATEMENT] for start in range(0, len(keys), KEYS_PER_STATEMENT)]


def _per_tenant(conn: Connection, table: Table, value: Any, keys: list[str] | None, *conditions: Any) -> dict[str, Any]:
    """``value`` aggregated over each tenant's rows of ``table`` meeting ``conditions``, by tenant
    key: of every tenant, or of ``keys`` (bound in batches, one statement each)."""
    stmt = select(table.c.user_id, value).where(*conditions).group_by(table.c.user_id)
    batches = [stmt] if keys is None else [stmt.where(table.c.user_id.in_(batch)) for batch in key_batches(keys)]
    return {key: found for batch in batches for key, found in conn.execute(batch)}


def count_by_tenant(conn: Connection, table: Table, keys: list[str] | None = None) -> dict[str, int]:
    """Rows per tenant key (of every tenant, or of ``keys``), for overviews that span tenants
    (they never return content)."""
    return _per_tenant(conn, table, func.count(), keys, not_being_erased(table.c.user_id))


def latest_by_tenant(conn: Connection, table: Table, column: Any, tenants: Iterable[Tenant], *conditions: Any) -> dict[Tenant, Any]:
    """The largest ``column`` of each of ``tenants``' rows of ``table`` meeting ``conditions``, for
    the tenants that have one: one statement for many tenants (when each was last erased)."""
    by_key = {t.key: t for t in tenants}
    latest = _per_tenant(conn, table, func.max(column), list(by_key), *conditions)
    return {by_key[key]: at for key, at in latest.items() if at is not None}


def tenants_having(conn: Connection, table: Table, *conditions: Any, keys: list[str] | None = None) -> list[Tenant]:
    """The tenants (of every tenant, or of ``keys``), in key order, with a row of ``table``
    meeting ``conditions``: for store-wide maintenance that then works tenant by tenant
    (purging expired keys)."""
    stmt = select(table.c.user_id).where(not_being_erased(table.c.user_id), *conditions).distinct()
    if keys is not None:
        stmt = stmt.where(table.c.user_id.in_(keys))
    return [Tenant(key) for key in sorted(conn.execute(stmt).scalars())]


def any_row(conn: Connection, table: Table, *conditions: Any, keys: list[str] | None = None) -> bool:
    """Whether any tenant's (or any of ``keys``') row of ``table`` meets ``conditions``."""
    stmt = select(literal(1)).select_from(table).where(*conditions)
    if keys is not None:
        stmt = stmt.where(table.c.user_id.in_(keys))
    return conn.execute(stmt.limit(1)).first() is not None


def in_groups(tenants: list[T], per_read: int | None) -> list[list[T]]:
    """``tenants`` in groups of ``per_read``, each for a read transaction of its own (one group
    of all when None, or when there are none)."""
    if per_read is None or not tenants:
        return [tenants]
    return [tenants[start : start + per_read] for start in range(0, len(tenants), per_read)]


def tenant_groups(conn: Connection, tenants_table: Table, per_read: int | None) -> list[list[str] | None]:
    """Every tenant's key in groups of ``per_read``, each for a read transaction of its own
    (:attr:`store.backend.interface.Backend.tenants_per_read`); ``[None]``, every tenant at once,
    when ``per_read`` is None."""
    if per_read is None:
        return [None]
    keys: list[str] = sorted(conn.execute(listed_tenants(tenants_table)).scalars())
    return list(in_groups(keys, per_read))  # a list of str lists, typed as the wider list


def keys_and_tenants(conn: Connection, table: Table, key_column: Any, *conditions: Any) -> list[tuple[int, str]]:
    """(row key, tenant key) of the rows meeting ``conditions``, by row key: which tenants a
    store-wide log names (the caches drop only the erased tenants' vectors)."""
    stmt = select(key_column, table.c.user_id).where(*conditions).order_by(key_column)
    return [(int(pk), key) for pk, key in conn.execute(stmt)]


def named_tenants_exist(conn: Connection, tenants_table: Table) -> bool:
    stmt = listed_tenants(tenants_table).where(tenants_table.c.user_id != ANONYMOUS_KEY).limit(1)
    return conn.execute(stmt).first() is not None


def other_tenants_exist(conn: Connection, tenants_table: Table, tenant: Tenant) -> bool:
    """Whether any tenant but ``tenant`` has written to the store (index-wide statistics are
    then not this tenant's alone)."""
    stmt = listed_tenants(tenants_table).where(tenants_table.c.user_id != tenant.key).limit(1)
    return conn.execute(stmt).first() is not None


def listed_tenants(tenants_table: Table, *columns: Any, keys: list[str] | None = None) -> Select[Any]:
    """``columns`` (default: the key) of every tenant in ``tenants_table`` (or of ``keys``) but
    those whose erasure is under way."""
    stmt = select(*(columns or (tenants_table.c.user_id,))).where(not_being_erased(tenants_table.c.user_id))
    return stmt if keys is None else stmt.where(tenants_table.c.user_id.in_(keys))


def across_tenants(table: Table, *columns: Any, keys: list[str] | None = None) -> Select[Any]:
    """The tenant key and ``columns`` of ``table``'s rows of every tenant (or of ``keys``) but
    those whose erasure is under way: a listing that spans tenants, each row naming its own."""
    return listed_tenants(table, table.c.user_id, *columns, keys=keys)


def in_tenant_groups(
    read: Callable[[], AbstractContextManager[Connection]],
    tenants_table: Table,
    per_read: int | None,
    find: Callable[[Connection, list[str] | None], list[T]],
) -> list[T]:
    """What ``find`` finds across every tenant's rows, in read transactions of ``per_read``
    tenants each (``find`` is given their keys; None: every tenant, in one read). A PostgreSQL
    statement over every tenant locked each tenant's partitions at once, which fails past about
    1,500 tenants on default settings."""
    with read() as conn:
        groups = tenant_groups(conn, tenants_table, per_read)
    found: list[T] = []
    for keys in groups:
        with read() as conn:
            found.extend(find(conn, keys))
    return found


def same_tenant(table: Table, other: Table) -> ColumnElement[bool]:
    """Rows of ``table`` and ``other`` of one tenant: the join of a query spanning tenants."""
    return table.c.user_id == other.c.user_id


def being_erased(conn: Connection, tenants: Iterable[Tenant]) -> list[Tenant]:
    """Those of ``tenants`` whose erasure is under way (their writers wait)."""
    wanted = {erasing_key(t.key): t for t in tenants}
    if not wanted:
        return []
    found = conn.execute(select(meta_t.c.key).where(meta_t.c.key.in_(list(wanted)))).scalars()
    return [wanted[key] for key in found]


def all_tenants(conn: Connection, tenants_table: Table) -> list[Tenant]:
    """Every tenant that has written anything, for store-wide maintenance (re-embedding)."""
    return [Tenant(key) for key in conn.execute(listed_tenants(tenants_table)).scalars()]


def tenants_with_history(conn: Connection, tenants_table: Table, audit_table: Table) -> list[Tenant]:
    """Every tenant with a tenant row or an audit entry, in key order: an erased tenant has lost
    its row but keeps its audit entries, and moving a whole store must move those too."""
    keys = set(conn.execute(listed_tenants(tenants_table)).scalars())
    keys.update(conn.execute(select(audit_table.c.user_id).distinct()).scalars())
    return [Tenant(key) for key in sorted(keys)]


def require_tenant(conn: Connection, tenant: Tenant, *, missing_ok: bool = False) -> bool:
    """Whether ``tenant`` holds anything in this store (has a tenant row). Unless ``missing_ok``,
    a missing tenant raises :class:`UnknownTenantError` naming tenants whose names differ only
    slightly, so ``alice`` typed for ``Alice`` is caught rather than acted on as an empty tenant."""
    if conn.execute(select(tenants_t.c.user_id).where(tenant.owns(tenants_t))).first() is not None:
        return True
    if missing_ok:
        return False
    if tenant.is_anonymous:
        raise UnknownTenantError("the anonymous bucket holds nothing in this store; nothing was done")
    names = [key for key in conn.execute(listed_tenants(tenants_t)).scalars() if key != ANONYMOUS_KEY]
    matches = close_matches(tenant.key, names)
    raise UnknownTenantError(f"no tenant {tenant.key!r} in this store{did_you_mean(matches)}; nothing was done", close_matches=matches)


def require_history(conn: Connection, tenant: Tenant, audit_table: Table) -> None:
    """For reading a tenant's history: ``tenant`` holds something or has audit entries (an erased
    tenant keeps its entries). Otherwise :class:`UnknownTenantError`, naming the tenants and erased
    tenants whose names differ only slightly, as :func:`require_tenant` does."""
    known = tenants_with_history(conn, tenants_t, audit_table)
    if tenant in known:
        return
    if tenant.is_anonymous:
        raise UnknownTenantError("the anonymous bucket holds nothing and has no audit entries in this store")
    matches = close_matches(tenant.key, [t.key for t in known if not t.is_anonymous])
    raise UnknownTenantError(f"no tenant or audit entry {tenant.key!r} in this store{did_you_mean(matches)}", close_matches=matches)
