"""What one erasure takes from each tier: every tier's module says which of its rows a scope
erases (its ``erased`` function, named in :mod:`.registry`), as one ``select`` of row keys that
the data-rights service both counts (a dry run) and deletes, so the two cannot disagree.

A tier whose rows go with another's (a session's keys with the session, facts resting on erased
episodes) asks for that tier's keys by name: each is worked out once per erasure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select

from ..backend import Sql
from ..schema import sessions_t
from ..tenancy import Tenant


@dataclass(frozen=True)
class Scope:
    tenant: Tenant
    session_id: str | None
    before: datetime | None
    # Only the tenant's facts (recorded before ``before``, if given): loomflow's FactStore.delete.
    facts_only: bool = False

    @property
    def whole_tenant(self) -> bool:
        return self.session_id is None and self.before is None and not self.facts_only


Selector = Callable[["Erasing"], "Select[Any] | None"]
"""A tier's rule: the keys of its rows the erasure removes, or None where it removes none."""


class Erasing:
    """One erasure: its scope, and each tier's keys in it."""

    def __init__(self, dialect: Sql, scope: Scope, selectors: Mapping[str, Selector]):
        self.dialect = dialect
        self.scope = scope
        self.tenant = scope.tenant
        self._selectors = selectors
        self._keys: dict[str, Select[Any] | None] = {}

    def keys(self, tier: str) -> Select[Any] | None:
        """The keys of ``tier``'s rows this erasure removes (None: none of them)."""
        if tier not in self._keys:
            self._keys[tier] = self._selectors[tier](self)
        return self._keys[tier]

    def required(self, tier: str) -> Select[Any]:
        """``tier``'s keys, for a tier whose own rule depends on them and on nothing else."""
        keys = self.keys(tier)
        if keys is None:
            raise ValueError(f"the erasure of {self.scope} removes no {tier}, which another tier's rule needs")
        return keys

    def sessions(self) -> Select[Any]:
        """The keys of the sessions the scope names: all of the tenant's, or the one asked for
        (whether the sessions themselves go depends on the scope: a date range keeps them)."""
        sessions = self.tenant.select(sessions_t, sessions_t.c.pk)
        if self.scope.session_id is not None:
            sessions = sessions.where(sessions_t.c.session_id == self.scope.session_id)
        return sessions
