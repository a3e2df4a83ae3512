"""What an import's write transaction offers the tiers: each tier's module writes its own checked
records (its ``write`` function, named in :mod:`.registry`) and says for each what became of it.

Ids are unique per tenant: an id already present in the target tenant is that record, kept as it
is; the same id in another tenant is someone else's record and no concern of this import.
Mutable records (blocks, key-value entries, task states) are written when the file's
``updated_at`` is newer, and a tie keeps what the store holds: re-importing an older export
never overwrites newer state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table

from ..backend import sql
from ..tenancy import Tenant
from .common import ensure_session

WRITTEN, UNCHANGED, KEPT = "written", "unchanged", "kept_existing"

SaveVectors = Callable[[Tenant, str, Sequence[int], Sequence[str], Sequence[str]], None]
"""(tenant, kind, row keys, record ids, texts): the vectors of rows an import inserted, saved by
whoever holds the model."""


class Importing:
    """One import's write transaction."""

    def __init__(self, conn: Connection, at: datetime, max_bytes: int, save_vectors: SaveVectors):
        self.conn, self.at, self.max_bytes = conn, at, max_bytes
        self.save_vectors = save_vectors
        self._session_pks: dict[tuple[Tenant, str], int] = {}

    def session_pk(self, tenant: Tenant, session_id: str) -> int:
        """The key of the tenant's session ``session_id``, made (untouched) if it is not there yet."""
        key = (tenant, session_id)
        if key not in self._session_pks:
            self._session_pks[key] = ensure_session(self.conn, tenant, session_id, self.at, touch=False)
        return self._session_pks[key]

    @staticmethod
    def newer(record: Any, row: Any, same: bool) -> str:
        """A mutable record against the row the store holds: the newer ``updated_at`` wins, a tie keeps the row."""
        if same:
            return UNCHANGED
        return WRITTEN if record.updated_at > row.updated_at else KEPT


def rows_by_id(conn: Connection, tenant: Tenant, table: Table, ids: list[str]) -> dict[str, Any]:
    """This tenant's rows of ``table`` with these ids, by id."""
    found: dict[str, Any] = {}
    for start in range(0, len(ids), 500):  # SQLite caps bound parameters per statement
        found.update((row.id, row) for row in conn.execute(tenant.select(table).where(table.c.id.in_(ids[start : start + 500]))))
    return found


def insert_with_vectors(importing: Importing, tenant: Tenant, table: Table, kind: str, new: list[tuple[str, dict[str, Any], str]]) -> None:
    """Rows new to the tenant, ``(record id, values, text of its vector)``, inserted in bulk (a
    few statements per episode took 238 s for 100k here, in bulk 32 s) and their vectors saved."""
    if new:
        pks = sql(importing.conn).insert_keyed(importing.conn, table, [tenant.stamp(values) for _, values, _ in new])
        importing.save_vectors(tenant, kind, pks, [record_id for record_id, _, _ in new], [text for _, _, text in new])
