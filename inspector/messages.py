"""Messages that workers post back to the event loop. Workers never touch widgets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass
class StoreOpened(Message):
    description: str


@dataclass
class StoreFailed(Message):
    """The path could not be opened as a store; ``error`` is the message a user reads."""

    error: str


@dataclass
class ModelReady(Message):
    backend: str


@dataclass
class ModelFailed(Message):
    error: str


@dataclass
class TenantsLoaded(Message):
    tenants: list[Any]


@dataclass
class ViewLoaded(Message):
    """Data for one tier view of one tenant. ``append`` adds a page below what is shown."""

    view: str
    tenant_key: str
    data: Any
    append: bool = False


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
