"""Messages that workers post back to the event loop. Workers never touch widgets.

One class per kind of result, so each has one handler and its fields say what it carries.
Results for one tenant carry ``tenant_key``: the App drops those for a tenant no longer selected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass
class StoreOpened(Message):
    description: str
    read_only_reason: str | None = None
    """Why the store was opened read-only (the file, its folder or its filesystem), or None."""


@dataclass
class StoreFailed(Message):
    """The store cannot be used (not opened, or found damaged later); ``error`` is the message a user reads."""

    error: str


@dataclass
class ModelReady(Message):
    backend: str


@dataclass
class ModelFailed(Message):
    error: str


@dataclass
class TenantNames(Message):
    """The tenants by name, before the store has opened; None when the file could not be read so."""

    names: list[Any] | None


@dataclass
class TenantsLoaded(Message):
    tenants: list[Any]


@dataclass
class TenantResult(Message):
    """Base of the results that belong to one tenant."""

    tenant_key: Any


@dataclass
class BlocksLoaded(TenantResult):
    blocks: list[Any]


@dataclass
class EpisodesLoaded(TenantResult):
    """One page of episodes; ``append`` adds it below what is shown."""

    page: Any
    append: bool = False


@dataclass
class FactsLoaded(TenantResult):
    facts: list[Any]
    valid_at: Any
    history: bool


@dataclass
class OverviewLoaded(TenantResult):
    """The tenant at a glance: its counts per tier (TierCounts) and episodes per day (Activity)."""

    counts: Any
    activity: Any


@dataclass
class SessionsLoaded(TenantResult):
    sessions: list[Any]


@dataclass
class SessionLoaded(TenantResult):
    """The working memory of one session: task state, key-value entries, notes, checkpoints."""

    session_id: str
    task: Any
    entries: list[Any]
    notes: list[Any]
    checkpoints: list[Any]


@dataclass
class AuditLoaded(TenantResult):
    entries: list[Any]


@dataclass
class StoreAuditLoaded(Message):
    """The audit log of the whole store, every tenant (erased ones included)."""

    entries: list[Any]


@dataclass
class SearchResults(Message):
    seq: int
    query: str
    mode: str
    hits: list[Any]
    elapsed_ms: float


@dataclass
class ForgetPreview(Message):
    receipt: Any


@dataclass
class ForgetDone(Message):
    receipt: Any


@dataclass
class ExportDone(Message):
    path: str
    manifest: dict[str, Any]


@dataclass
class CheckpointDiffed(Message):
    title: str
    diff: Any


@dataclass
class ActionFailed(Message):
    what: str
    error: str


@dataclass
class StoreChanged(Message):
    """Another process (or this one) committed to the store."""

    data_version: int = field(default=0)
