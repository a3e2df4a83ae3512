"""The one list of tiers: per tier its table, row key, export section and record type, vector
kind, count field and CLI column label, and what its module declares for the data rights (its
export records, its erasure rule, its import record and writer) and for time travel (what it
shows at a past moment, which of its rows are changes in the timeline). Everything that walks
the tiers (forget, export, import, migrate, the counts in overviews, snapshots, the timeline, the
CLI) reads it here.

Two public spellings differ from the internal ones and must stay as they are: the export
format calls the scratchpad section ``scratchpad`` (counts and receipts say
``scratchpad_entries``), and the CLI labels ``kv_entries`` "keys" and notes "notes". This table
is where the two meet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection, Table

from ..models import Change
from ..schema import (
    audit_t,
    block_versions_t,
    blocks_t,
    checkpoints_t,
    episodes_t,
    fact_changes_t,
    facts_t,
    kv_t,
    scratch_t,
    sessions_t,
    task_t,
    traces_t,
)
from ..tenancy import Tenant
from . import blocks, checkpoints, episodes, facts, notes, session_keys, sessions, task_states, traces
from .changes import Window
from .erasing import Erasing, Selector
from .importing import Importing
from .moments import Moment
from .record_fields import Record
from .records import AuditRecord, Reading, audit_records


@dataclass(frozen=True)
class Tier:
    name: str
    """Its name in counts (``TierCounts``) and forget receipts."""
    table: Table
    key: Column[Any]
    """The row key forget selects and deletes by."""
    section: str
    """Its section in export files and import reports."""
    record_type: str
    """The ``type`` of its records in export files."""
    records: Callable[[Reading], Iterator[dict[str, Any]]]
    """A tenant's rows as export records (its module says how), in the order they are exported."""
    erased: Selector | None
    """The keys of its rows an erasure removes (its module says which); None: forget never erases it."""
    record_model: type[Record]
    """Its export record as an import reads it, each field held to the API's check."""
    write: Callable[[Importing, Tenant, list[Any]], list[str]] | None
    """Writes a tenant's checked records of this tier in an import (its module says how), each's
    outcome in order; None: the data-rights service writes them (the audit log)."""
    vector_text: Callable[[Any], str] | None = None
    """For a tier whose vectors travel with its records (in exports, imports and migrations): the
    text an imported record's vector is of."""
    before_deleting: Callable[[Erasing, Connection, Sequence[int]], None] | None = None
    """What must change in rows an erasure keeps, given the keys of this tier's rows it is about
    to delete (facts that cite erased episodes)."""
    check_file: Callable[[list[tuple[int | None, Any]], set[tuple[str | None, str, str]]], None] | None = None
    """A rule of an import file across its records (a fact's change names facts the file holds),
    given every parsed record and the (tenant, type, id) of each with an id."""
    vector_kind: str | None = None
    """The ``kind`` of its rows' vectors, if it has any."""
    label: str | None = None
    """Its column in the CLI's overview; None: not shown there (nor counted per tenant)."""
    as_of: Callable[[Moment], dict[str, Any]] | None = None
    """What it shows of a tenant at a past moment, as fields of a ``MemorySnapshot`` (with, in
    ``gaps``, what it could not rebuild); None: shown within another tier's (a session's keys,
    task state, notes and checkpoints within its session) or not at all (histories)."""
    changes: Callable[[Window], Iterator[Change]] | None = None
    """Its rows that are changes in the tenant's timeline (a block written, a fact recorded), in a
    window of time, newest first; None: none of its rows is a moment to step to (episodes are too
    many, a session's keys change within it)."""


# In export-section order: an export file lists its sections in this order. Each tier's module
# says how its rows are exported, erased, checked and written on import (docs/architecture.md).
TIERS: tuple[Tier, ...] = (
    Tier(
        "blocks", blocks_t, blocks_t.c.pk, "blocks", "block",
        records=blocks.records, erased=blocks.erased, record_model=blocks.BlockRecord, write=blocks.write,
        vector_kind="block", label="blocks", as_of=blocks.as_of, changes=blocks.changes,
    ),
    Tier(
        "block_versions", block_versions_t, block_versions_t.c.pk, "block_versions", "block_version",
        records=blocks.version_records, erased=blocks.erased_versions, record_model=blocks.BlockVersionRecord, write=blocks.write_versions,
        changes=blocks.version_changes,
    ),
    Tier(
        "episodes", episodes_t, episodes_t.c.pk, "episodes", "episode",
        records=episodes.records, erased=episodes.erased, record_model=episodes.EpisodeRecord, write=episodes.write,
        vector_text=episodes.vector_text, vector_kind="episode", label="episodes", as_of=episodes.as_of,
    ),
    Tier(
        "facts", facts_t, facts_t.c.pk, "facts", "fact",
        records=facts.records, erased=facts.erased, record_model=facts.FactRecord, write=facts.write,
        vector_text=facts.vector_text, before_deleting=facts.before_deleting, vector_kind="fact", label="facts",
        as_of=facts.as_of, changes=facts.changes,
    ),
    Tier(
        "fact_changes", fact_changes_t, fact_changes_t.c.pk, "fact_changes", "fact_change",
        records=facts.change_records, erased=facts.erased_changes, record_model=facts.FactChangeRecord, write=facts.write_changes,
        check_file=facts.check_file, changes=facts.validity_changes,
    ),
    Tier(
        "sessions", sessions_t, sessions_t.c.pk, "sessions", "session",
        records=sessions.records, erased=sessions.erased, record_model=sessions.SessionRecord, write=sessions.write,
        label="sessions", as_of=sessions.as_of, changes=sessions.changes,
    ),
    Tier(
        "kv_entries", kv_t, kv_t.c.pk, "kv_entries", "kv",
        records=session_keys.records, erased=session_keys.erased, record_model=session_keys.KeyValueRecord, write=session_keys.write,
        vector_kind="key", label="keys",
    ),
    Tier(
        "task_states", task_t, task_t.c.session_pk, "task_states", "task_state",
        records=task_states.records, erased=task_states.erased, record_model=task_states.TaskStateRecord, write=task_states.write,
    ),
    Tier(
        "scratchpad_entries", scratch_t, scratch_t.c.pk, "scratchpad", "note",
        records=notes.records, erased=notes.erased, record_model=notes.NoteRecord, write=notes.write,
        vector_kind="scratchpad", label="notes",
    ),
    Tier(
        "checkpoints", checkpoints_t, checkpoints_t.c.pk, "checkpoints", "checkpoint",
        records=checkpoints.records, erased=checkpoints.erased, record_model=checkpoints.CheckpointRecord, write=checkpoints.write,
        label="checkpoints", changes=checkpoints.changes,
    ),
    Tier(
        "recall_traces", traces_t, traces_t.c.pk, "recall_traces", "recall_trace",
        records=traces.records, erased=traces.erased, record_model=traces.RecallTraceRecord, write=traces.write,
        as_of=traces.as_of,
    ),
)  # fmt: skip
# The audit log is exported (a section of its own) but is no tier: forget never erases it, and
# the data-rights service writes its records.
AUDIT = Tier("audit", audit_t, audit_t.c.pk, "audit", "audit", records=audit_records, erased=None, record_model=AuditRecord, write=None)

BY_NAME = {tier.name: tier for tier in TIERS}
# Sessions first, so a session's own times are in place before its other records touch it.
IMPORT_ORDER = (BY_NAME["sessions"], *(tier for tier in TIERS if tier.name != "sessions"))
# Children before parents, so cascades never hide a count; receipts list tiers in this order.
ERASE_ORDER = tuple(
    BY_NAME[name]
    for name in (
        "kv_entries",
        "task_states",
        "scratchpad_entries",
        "checkpoints",
        "recall_traces",
        "fact_changes",
        "facts",
        "episodes",
        "sessions",
        "block_versions",
        "blocks",
    )
)
# What overviews count per tenant (TierCounts), in the order the CLI shows them.
COUNTED = (*(tier for tier in TIERS if tier.label is not None), BY_NAME["task_states"])
EXPORTED = (*TIERS, AUDIT)
SECTIONS = [tier.section for tier in EXPORTED]
SECTION_OF = {tier.record_type: tier.section for tier in EXPORTED}
VECTOR_KINDS = {tier.name: tier.vector_kind for tier in TIERS if tier.vector_kind is not None}
VECTOR_TEXT: dict[str, Callable[[Any], str]] = {tier.record_type: tier.vector_text for tier in TIERS if tier.vector_text is not None}
"""For the tiers whose vectors travel with their records, by record type (their vector kind): the
text of an imported record's vector."""
TABLE_OF = {tier.record_type: tier.table for tier in EXPORTED}
CLI_COLUMNS = tuple((tier.label, tier.name) for tier in TIERS if tier.label is not None)
