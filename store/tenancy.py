"""The one place that enforces the tenant partition.

Every table has a ``user_id`` column; the anonymous bucket is stored as the empty
string so that it is a partition like any other (NULL would slip past unique
constraints and ``=`` comparisons). Store code never names that column: it asks a
:class:`Tenant` for its selects, updates, deletes and insert values, so no query
can be built without the partition.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Delete, Select, Table, Update, delete, func, select, update

from .errors import InvalidInputError, UnknownTenantError

ANONYMOUS_KEY = ""


class _Unset:
    def __repr__(self) -> str:
        return "<anonymous>"


UNSET: Any = _Unset()
"""Default of every ``user_id`` parameter: the anonymous bucket, with an IsolationWarning when
the store holds named users. Pass ``user_id=None`` to mean the anonymous bucket on purpose."""


@dataclass(frozen=True, slots=True)
class Tenant:
    key: str

    @classmethod
    def of(cls, user_id: str | None) -> "Tenant":
        if user_id is None:
            return cls(ANONYMOUS_KEY)
        if not isinstance(user_id, str):
            raise InvalidInputError(f"user_id must be a string or None, not {type(user_id).__name__}")
        if not user_id or user_id.strip() != user_id or "\x00" in user_id or len(user_id) > 256:
            raise InvalidInputError(
                "user_id must be 1-256 characters without surrounding spaces or NULs; "
                "use None for the anonymous bucket"
            )
        try:
            user_id.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError("user_id contains a lone surrogate") from None
        return cls(user_id)

    @property
    def user_id(self) -> str | None:
        return None if self.key == ANONYMOUS_KEY else self.key

    @property
    def is_anonymous(self) -> bool:
        return self.key == ANONYMOUS_KEY

    def owns(self, table: Table):
        return table.c.user_id == self.key

    def select(self, table: Table, *columns: Any) -> Select:
        return select(*(columns or (table,))).where(self.owns(table))

    def select_keys(self, table: Table, key_column: Any, keys: list[int]) -> Select:
        """Rows by primary key, still only this tenant's. The tenant test is written so SQLite
        cannot use the (unselective) tenant index for it and looks the keys up directly."""
        return select(table).where(key_column.in_(keys), table.c.user_id.concat("") == self.key)

    def update(self, table: Table) -> Update:
        return update(table).where(self.owns(table))

    def delete(self, table: Table) -> Delete:
        return delete(table).where(self.owns(table))

    def stamp(self, row: dict[str, Any]) -> dict[str, Any]:
        """Insert values for this tenant; a row can never name another tenant."""
        return {**row, "user_id": self.key}


def user_id_of(key: str) -> str | None:
    return None if key == ANONYMOUS_KEY else key


def count_by_tenant(conn, table: Table) -> dict[str, int]:
    """Rows per tenant key, for overviews that span tenants (they never return content)."""
    rows = conn.execute(select(table.c.user_id, func.count()).group_by(table.c.user_id))
    return {key: count for key, count in rows}


def named_tenants_exist(conn, tenants_table: Table) -> bool:
    stmt = select(tenants_table.c.user_id).where(tenants_table.c.user_id != ANONYMOUS_KEY).limit(1)
    return conn.execute(stmt).first() is not None


def all_tenants(conn, tenants_table: Table) -> list[Tenant]:
    """Every tenant that has written anything, for store-wide maintenance (re-embedding)."""
    return [Tenant(key) for key in conn.execute(select(tenants_table.c.user_id)).scalars()]


def owner_of(conn, table: Table, key_column, value) -> "Tenant | None":
    """The tenant owning the row whose globally unique ``key_column`` is ``value``, if any:
    imports use it to refuse ids that belong to someone else."""
    row = conn.execute(select(table.c.user_id).where(key_column == value)).first()
    return None if row is None else Tenant(row[0])


def require_tenant(conn, tenant: Tenant, *, missing_ok: bool = False) -> bool:
    """Whether ``tenant`` holds anything here (a row in ``tenants``). A missing one raises
    :class:`~store.errors.UnknownTenantError` naming close matches, so a typo (``Alice`` for
    ``alice``) is caught instead of acted on, unless ``missing_ok``."""
    from .schema import tenants_t

    if conn.execute(tenant.select(tenants_t, tenants_t.c.user_id)).first() is not None:
        return True
    if missing_ok:
        return False
    names = [k for k in conn.execute(select(tenants_t.c.user_id)).scalars() if k != ANONYMOUS_KEY]
    wanted = tenant.key.casefold()
    close = [n for n in names if n.casefold() == wanted]
    close += [n for n in difflib.get_close_matches(tenant.key, names) if n not in close]
    who = "the anonymous bucket" if tenant.is_anonymous else f"tenant {tenant.key!r}"
    hint = f"; did you mean {', '.join(repr(n) for n in close)}?" if close else ""
    raise UnknownTenantError(f"{who} holds nothing in this store{hint}", close_matches=close)
