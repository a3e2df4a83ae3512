"""Messages that workers post back to the event loop. Workers never touch widgets.

One class per kind of result, so each has one handler and its fields say what it carries.
Results for one tenant carry ``tenant_key``: the tenant views drop those for a tenant no longer selected.

Plain classes rather than dataclasses: 22 ``@dataclass`` classes took 10.8 ms to import, on the
path to the first frame (``python -X importtime``), for constructors :class:`Carrier` gives at no cost.
Carrier is marked as dataclass-like (``dataclass_transform``), so mypy checks every message built
against its fields' types; the store's models they carry are imported for the type checker only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, dataclass_transform

from textual.message import Message

if TYPE_CHECKING:  # the store's models are imported after the first frame, when results come
    import threading
    from datetime import datetime

    from textual.worker import Worker

    from store.models import (
        Activity,
        AuditEntry,
        Block,
        BlockHistory,
        Change,
        Checkpoint,
        CheckpointDiff,
        EpisodePage,
        Fact,
        ForgetReceipt,
        KeyValueEntry,
        MemoryDiff,
        MemorySnapshot,
        RecallExplanation,
        RecallHit,
        RecallReplay,
        RecallTrace,
        ScratchpadEntry,
        SessionInfo,
        TaskState,
        TenantSummary,
        TierCounts,
    )


def _is_class_variable(annotation: object) -> bool:
    return str(annotation).startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform()
class Carrier(Message):
    """A message whose constructor takes the fields annotated on its class (inherited ones first),
    positionally or by name, as a dataclass's would; a field with a class-level value is optional."""

    fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Strings under ``from __future__ import annotations``, the types themselves without it.
        own = [name for name, kind in cls.__dict__.get("__annotations__", {}).items() if not _is_class_variable(kind)]
        cls.fields = cls.fields + tuple(name for name in own if name not in cls.fields)

    def __init__(self, *values: Any, **named: Any) -> None:
        if len(values) > len(self.fields):
            raise TypeError(f"{type(self).__name__} takes at most {len(self.fields)} values, got {len(values)}")
        given = dict(zip(self.fields, values, strict=False))  # fewer values than fields: the rest are named or defaulted
        for name, value in named.items():
            if name not in self.fields or name in given:
                raise TypeError(f"{type(self).__name__} got an unexpected or repeated field {name!r}")
            given[name] = value
        for name in self.fields:
            if name in given:
                setattr(self, name, given[name])
            elif not hasattr(type(self), name):
                raise TypeError(f"{type(self).__name__} is missing its field {name!r}")
        super().__init__()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.fields)
        return f"{type(self).__name__}({shown})"


class StoreOpened(Carrier):
    description: str
    read_only_reason: str | None = None
    """Why the store was opened read-only (the file, its folder or its filesystem), or None."""


class StoreFailed(Carrier):
    """The store cannot be used (not opened, or found damaged later); ``error`` is the message a user reads."""

    error: str


class ModelReady(Carrier):
    backend: str


class ModelFailed(Carrier):
    error: str


class TenantNames(Carrier):
    """The tenants by name, before the store has opened; None when the file could not be read so."""

    names: list[str | None] | None


@dataclass(frozen=True)
class TenantName:
    """A tenant known by name only, until the store has opened and counted its records."""

    user_id: str | None
    counts: None = None


class TenantsLoaded(Carrier):
    tenants: list[TenantSummary | TenantName]


class TenantResult(Carrier):
    """Base of the results that belong to one tenant, at one moment (``as_of``, stamped by TenantViews'
    fetch: None is now)."""

    tenant_key: Any
    as_of: ClassVar[Any] = None  # not a field: set after construction, by at()

    def at(self, moment: Any) -> TenantResult:
        """This result, stamped with the moment shown when it was asked for."""
        self.__dict__["as_of"] = moment
        return self


class BlocksLoaded(TenantResult):
    blocks: list[Block]


class EpisodesLoaded(TenantResult):
    """One page of episodes; ``append`` adds it below what is shown."""

    page: EpisodePage
    append: bool = False


class FactsLoaded(TenantResult):
    facts: list[Fact]
    valid_at: datetime | None
    history: bool
    known_at: datetime | None = None


class OverviewLoaded(TenantResult):
    """The tenant at a glance: its counts per tier (TierCounts) and episodes per day (Activity)."""

    counts: TierCounts
    activity: Activity


class SessionsLoaded(TenantResult):
    sessions: list[SessionInfo]


class PastLoaded(TenantResult):
    """The tenant as it stood at a past moment (MemorySnapshot): its blocks, its sessions and the
    overview's counts come from this one snapshot; ``activity`` is the overview's sparkline."""

    snapshot: MemorySnapshot
    activity: Activity


class SessionLoaded(TenantResult):
    """The working memory of one session: task state, key-value entries, notes, checkpoints."""

    session_id: str
    task: TaskState | None
    entries: list[KeyValueEntry]
    notes: list[ScratchpadEntry]
    checkpoints: list[Checkpoint]
    note: str = ""
    """In the past: where the state shown comes from (a checkpoint), or why none is shown."""


class AuditLoaded(TenantResult):
    entries: list[AuditEntry]


class StoreAuditLoaded(Carrier):
    """The audit log of the whole store, every tenant (erased ones included)."""

    entries: list[AuditEntry]


class SearchResults(Carrier):
    """To the search view that asked: the results of its request ``seq``, and the search line."""

    seq: int
    hits: list[RecallHit]
    status: str
    painted: threading.Event | None = None
    """For the keyword half of a hybrid search: set once it is on screen (or will never be),
    which the hybrid half waits for."""


class ForgetPreview(Carrier):
    receipt: ForgetReceipt


class ForgetDone(Carrier):
    receipt: ForgetReceipt


class ExportDone(Carrier):
    path: str
    manifest: dict[str, Any]


class CheckpointDiffed(Carrier):
    """A diff of checkpoints, loaded by the tenant views; the main screen shows it."""

    title: str
    diff: CheckpointDiff


class RestoreAsked(Carrier):
    """``r`` on a checkpoint: the main screen asks the user, then the tenant views restore it."""

    checkpoint: Checkpoint


class CheckpointRestored(Carrier):
    tenant_key: Any
    checkpoint: Checkpoint


class BlockHistoryLoaded(Carrier):
    """A block's versions, loaded by the tenant views; the main screen shows them."""

    title: str
    history: BlockHistory


class WhyNotLoaded(Carrier):
    """Where a memory stands for the search as typed (``MemoryStore.explain``), loaded by the
    tenant views; the main screen shows it."""

    title: str
    explanation: RecallExplanation


class TracesLoaded(Carrier):
    """The tenant's kept recalls, newest first (``MemoryStore.recall_traces``), for the recalls screen."""

    traces: list[RecallTrace]


class ReplayLoaded(Carrier):
    """A kept recall made again and compared (``MemoryStore.replay``); the main screen shows it."""

    title: str
    replay: RecallReplay


class RecallsBeforeLoaded(Carrier):
    """What the agent had just retrieved before an episode; the main screen shows it."""

    title: str
    traces: list[RecallTrace]
    scope: str


class TimelineLoaded(Carrier):
    changes: list[Change]


class MomentChosen(Carrier):
    """A step in time worked out: from ``shown`` to ``moment`` (time_travel.NOW, or None: none)."""

    user_id: Any
    shown: Any
    moment: Any


class TenantDiffed(Carrier):
    title: str
    diff: MemoryDiff


class ActionFailed(Carrier):
    what: str
    error: str


class WorkerFailed(Carrier):
    """A worker raised something that is not a store error (inspector.workers)."""

    worker: Worker[Any]
    error: BaseException


class StoreChanged(Carrier):
    """Another process (or this one) committed to the store."""

    data_version: int = 0


class ViewsReady(Carrier):
    """The main screen's tier views are mounted: the App opens the store now (a store message may
    go to any of them)."""


class MomentShown(Carrier):
    """The main screen shows another moment of its tenant (None: now); the App's header says which."""

    at: datetime | None = None
