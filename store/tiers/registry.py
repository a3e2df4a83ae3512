"""The one list of tiers: per tier its table, row key, export section and record type, vector
kind, count field and CLI column label. Everything that walks the tiers (forget, export,
import, the counts in overviews, the CLI) reads it here.

Two public spellings differ from the internal ones and must stay as they are: the export
format calls the scratchpad section ``scratchpad`` (counts and receipts say
``scratchpad_entries``), and the CLI labels ``kv_entries`` "keys" and notes "notes". This table
is where the two meet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Table

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
)
from ..tenancy import Tenant
from . import blocks, checkpoints, episodes, facts, notes, session_keys, sessions, task_states
from .erasing import Selector
from .importing import Importing
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
    vector_kind: str | None = None
    """The ``kind`` of its rows' vectors, if it has any."""
    label: str | None = None
    """Its column in the CLI's overview; None: not shown there (nor counted per tenant)."""


# In export-section order: an export file lists its sections in this order.
TIERS: tuple[Tier, ...] = (
    Tier(
        "blocks",
        blocks_t,
        blocks_t.c.pk,
        "blocks",
        "block",
        blocks.records,
        blocks.erased,
        blocks.BlockRecord,
        blocks.write,
        "block",
        "blocks",
    ),
    Tier(
        "block_versions",
        block_versions_t,
        block_versions_t.c.pk,
        "block_versions",
        "block_version",
        blocks.version_records,
        blocks.erased_versions,
        blocks.BlockVersionRecord,
        blocks.write_versions,
    ),
    Tier(
        "episodes",
        episodes_t,
        episodes_t.c.pk,
        "episodes",
        "episode",
        episodes.records,
        episodes.erased,
        episodes.EpisodeRecord,
        episodes.write,
        "episode",
        "episodes",
    ),
    Tier("facts", facts_t, facts_t.c.pk, "facts", "fact", facts.records, facts.erased, facts.FactRecord, facts.write, "fact", "facts"),
    Tier(
        "fact_changes",
        fact_changes_t,
        fact_changes_t.c.pk,
        "fact_changes",
        "fact_change",
        facts.change_records,
        facts.erased_changes,
        facts.FactChangeRecord,
        facts.write_changes,
    ),
    Tier(
        "sessions",
        sessions_t,
        sessions_t.c.pk,
        "sessions",
        "session",
        sessions.records,
        sessions.erased,
        sessions.SessionRecord,
        sessions.write,
        None,
        "sessions",
    ),
    Tier(
        "kv_entries",
        kv_t,
        kv_t.c.pk,
        "kv_entries",
        "kv",
        session_keys.records,
        session_keys.erased,
        session_keys.KeyValueRecord,
        session_keys.write,
        None,
        "keys",
    ),
    Tier(
        "task_states",
        task_t,
        task_t.c.session_pk,
        "task_states",
        "task_state",
        task_states.records,
        task_states.erased,
        task_states.TaskStateRecord,
        task_states.write,
    ),
    Tier(
        "scratchpad_entries",
        scratch_t,
        scratch_t.c.pk,
        "scratchpad",
        "note",
        notes.records,
        notes.erased,
        notes.NoteRecord,
        notes.write,
        "scratchpad",
        "notes",
    ),
    Tier(
        "checkpoints",
        checkpoints_t,
        checkpoints_t.c.pk,
        "checkpoints",
        "checkpoint",
        checkpoints.records,
        checkpoints.erased,
        checkpoints.CheckpointRecord,
        checkpoints.write,
        None,
        "checkpoints",
    ),
)
# The audit log is exported (a section of its own) but is no tier: forget never erases it.
AUDIT = Tier("audit", audit_t, audit_t.c.pk, "audit", "audit", audit_records, None, AuditRecord, None)

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
CLI_COLUMNS = tuple((tier.label, tier.name) for tier in TIERS if tier.label is not None)
