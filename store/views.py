"""What can be looked at: the part of a store the inspector and the command line read, and may
ask to erase, whatever holds the memory.

:class:`~store.memory.MemoryStore` is one; a view of another library's memory where it lives
(:mod:`store.compat.loomflow_view`) is another, and refuses what would write. Open either with
:func:`store.open`; ``tests/test_store_view.py`` holds that each has every member here, taking
what the store's own takes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .embedding import Embedder
    from .models import (
        Activity,
        AuditEntry,
        Block,
        BlockHistory,
        Change,
        Episode,
        EpisodePage,
        Fact,
        ForgetReceipt,
        MemoryDiff,
        MemorySnapshot,
        PendingScrub,
        Profile,
        RecallExplanation,
        RecallHit,
        SessionInfo,
        TenantSummary,
    )
    from .recall.hits import Mode
    from .recall.service import RecallScope
    from .tiers.sessions import SessionMemory


@runtime_checkable
class StoreView(Protocol):
    """Memory to look at: its tenants and every tier, searched and seen at any moment, exported,
    and erased where the source allows it (a read-only one raises
    :class:`~store.errors.ReadOnlyStoreError` and changes nothing)."""

    @property
    def path(self) -> Path | str: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def model_ready(self) -> bool: ...

    def data_version(self) -> int: ...

    def close(self) -> None: ...

    def warm_model(self) -> None: ...

    def warm_vectors(self, *, user_id: str | None = ...) -> int: ...

    # Tenants.
    def tenants(self, *, user_ids: Iterable[str | None] | None = ...) -> list[TenantSummary]: ...

    def tenant_names(self) -> list[str | None]: ...

    def require_tenant(self, *, user_id: Any = ..., missing_ok: bool = ...) -> bool: ...

    # The tiers, now and at a moment.
    def recall(
        self,
        query: str,
        *,
        user_id: str | None = ...,
        limit: int = ...,
        session_id: str | None = ...,
        time_range: tuple[datetime | None, datetime | None] | None = ...,
        kind: RecallScope = ...,
        mode: Mode = ...,
        prefix: bool = ...,
        label: str | None = ...,
    ) -> list[RecallHit]: ...

    def explain(
        self,
        query: str,
        memory_id: str,
        *,
        user_id: str | None = ...,
        limit: int = ...,
        session_id: str | None = ...,
        time_range: tuple[datetime | None, datetime | None] | None = ...,
        kind: RecallScope = ...,
        mode: Mode = ...,
    ) -> RecallExplanation: ...

    def get_episode(self, episode_id: str, *, user_id: str | None = ...) -> Episode: ...

    def search_keys(
        self,
        query: str,
        *,
        user_id: str | None = ...,
        among: Iterable[tuple[str, str]] | None = ...,
        limit: int = ...,
        mode: Mode = ...,
        label: str | None = ...,
    ) -> list[RecallHit]: ...

    def episodes(
        self,
        *,
        user_id: str | None = ...,
        session_id: str | None = ...,
        since: datetime | None = ...,
        until: datetime | None = ...,
        limit: int = ...,
        cursor: str | None = ...,
    ) -> EpisodePage: ...

    def facts(
        self,
        *,
        user_id: str | None = ...,
        valid_at: datetime | None = ...,
        subject: str | None = ...,
        include_history: bool = ...,
        predicate: str | None = ...,
        object: str | None = ...,
        known_at: datetime | None = ...,
    ) -> list[Fact]: ...

    def working(self, *, user_id: str | None = ..., as_of: datetime | None = ...) -> list[Block]: ...

    def block_history(self, name: str, *, user_id: str | None = ...) -> BlockHistory: ...

    def sessions(self, *, user_id: str | None = ...) -> list[SessionInfo]: ...

    def session(self, session_id: str, *, user_id: str | None = ..., create: bool = ...) -> SessionMemory: ...

    def snapshot(self, *, user_id: str | None = ..., as_of: datetime) -> MemorySnapshot: ...

    def memory_diff(self, *, user_id: str | None = ..., a: datetime, b: datetime) -> MemoryDiff: ...

    def timeline(
        self, *, user_id: str | None = ..., since: datetime | None = ..., until: datetime | None = ..., limit: int = ...
    ) -> list[Change]: ...

    def activity(self, *, user_id: str | None = ..., days: int = ..., until: datetime | None = ...) -> Activity: ...

    def profile(self, *, user_id: str | None = ...) -> Profile: ...

    def audit_log(
        self, *, user_id: Any = ..., all_tenants: bool = ..., limit: int = ..., origin: str | None = ..., missing_ok: bool = ...
    ) -> list[AuditEntry]: ...

    # Data rights.
    def export(self, *, user_id: Any = ..., include_embeddings: bool = ..., actor: str = ..., missing_ok: bool = ...) -> dict[str, Any]: ...

    def export_to(
        self,
        target: str | Path | IO[str],
        *,
        user_ids: list[str | None] | None = ...,
        fmt: str = ...,
        include_embeddings: bool = ...,
        actor: str = ...,
        progress: Callable[[int, int], None] | None = ...,
        overwrite: bool = ...,
        missing_ok: bool = ...,
    ) -> dict[str, Any]: ...

    def forget(
        self,
        *,
        user_id: Any = ...,
        session_id: str | None = ...,
        before: datetime | None = ...,
        dry_run: bool = ...,
        actor: str = ...,
        missing_ok: bool = ...,
        facts_only: bool = ...,
    ) -> ForgetReceipt: ...

    def scrub(self) -> bool: ...

    def pending_scrub(self) -> PendingScrub | None: ...
