"""A tenant's changes over a window of time: what each tier's ``changes`` reads.

Each tier whose changes are moments a debugging person steps through says, in its own module,
which of its rows are changes (its ``changes``, named in :mod:`.registry`): a block's versions
and deletes, a fact's recording and validity changes, a session's start and checkpoints.
:mod:`.timeline` walks the registry to put them together, newest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Connection, Select

from ..tenancy import Tenant
from .common import session_names


@dataclass
class Window:
    """One tenant's changes in ``[since, until)`` being read, newest first, at most ``limit`` of
    each kind (the timeline keeps the newest ``limit`` of them all)."""

    conn: Connection
    tenant: Tenant
    since: datetime | None
    until: datetime | None
    limit: int
    _session_names: dict[int, str] | None = field(default=None, repr=False)

    def within(self, stmt: Select[Any], column: Column[Any]) -> Select[Any]:
        """``stmt``'s rows whose ``column`` falls in the window, the newest ``limit`` of them."""
        if self.since is not None:
            stmt = stmt.where(column >= self.since)
        if self.until is not None:
            stmt = stmt.where(column < self.until)
        return stmt.order_by(column.desc()).limit(self.limit)

    def session_names(self) -> dict[int, str]:
        """Each of the tenant's sessions' id by its key, for the changes that belong to a session."""
        if self._session_names is None:
            self._session_names = session_names(self.conn, self.tenant)
        return self._session_names


def first_line(text: str) -> str:
    """A change's detail: the first line of a text, at most 80 characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"
