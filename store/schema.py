"""SQLAlchemy 2.0 typed tables. Every tenant-owned table carries ``user_id``.

Times are stored as integer microseconds since the epoch (UTC): compact, fast to
index and compare, and free of the string-format drift of SQLite's date text.
JSON columns hold text serialised by :func:`store.validation.check_json`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeEngine, UserDefinedType

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Microsecond timestamps (today: 1.8e15) and row keys need 64 bits: PostgreSQL's INTEGER is 32-bit
# ("integer out of range" on the first write). SQLite's INTEGER is 64-bit already, and only a
# column declared exactly INTEGER PRIMARY KEY is the rowid alias, so SQLite keeps INTEGER (and the
# frozen DDL stays what it was). The one engine name outside store/backend/: a type variant.
Int64 = BigInteger().with_variant(Integer(), "sqlite")


class _PgVector(UserDefinedType[bytes]):
    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"


class PackedVector(TypeDecorator[bytes]):
    """An embedding as the store handles it: float32 bytes. Kept as a BLOB; on PostgreSQL as a
    pgvector ``vector`` (so the server can rank by distance), converted at the boundary: pgvector's
    text form is a JSON array of numbers."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        return dialect.type_descriptor(_PgVector() if dialect.name == "postgresql" else LargeBinary())

    def process_bind_param(self, value: bytes | None, dialect: Dialect) -> Any:
        if value is None or dialect.name != "postgresql":
            return value
        import numpy as np

        return json.dumps(np.frombuffer(value, dtype=np.float32).tolist())

    def process_result_value(self, value: Any, dialect: Dialect) -> bytes | None:
        if value is None or dialect.name != "postgresql":
            return cast("bytes | None", value)  # a BLOB comes back as the bytes it was
        import numpy as np

        return np.asarray(json.loads(value), dtype=np.float32).tobytes()


def to_micros(value: datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    # Every time read goes through here (three per fact): the epoch plus a timedelta costs half
    # of fromtimestamp() and replace() (0.67 against 1.35 us).
    try:
        return _EPOCH + timedelta(microseconds=value)
    except OverflowError:  # what fromtimestamp() raised, which the readers of damaged files catch
        raise ValueError(f"year is out of range: {value} microseconds from 1970") from None


class UtcMicros(TypeDecorator[datetime]):
    impl = Int64
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> int | None:
        return None if value is None else to_micros(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return None if value is None else from_micros(value)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class MetaRow(Base):
    __tablename__ = "memlens_meta"
    key: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class TenantRow(Base):
    __tablename__ = "tenants"
    user_id: Mapped[str] = mapped_column(String, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcMicros)
    last_activity: Mapped[datetime] = mapped_column(UtcMicros)


class BlockRow(Base):
    __tablename__ = "blocks"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    user_id: Mapped[str] = mapped_column(String)
    name: Mapped[str] = mapped_column(String)
    content: Mapped[str] = mapped_column(Text)
    pinned_order: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UtcMicros)
    __table_args__ = (UniqueConstraint("user_id", "name"), Index(None, "user_id", "pinned_order"))


class BlockVersionRow(Base):
    """An earlier version of a working block: what it held from ``written_at`` until
    ``replaced_at``, and the operation that ended it (``update``, ``append`` or ``delete``).
    ``earlier_dropped``: older versions of the block were dropped by the cap on its history."""

    __tablename__ = "block_versions"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    user_id: Mapped[str] = mapped_column(String)
    name: Mapped[str] = mapped_column(String)
    content: Mapped[str] = mapped_column(Text)
    pinned_order: Mapped[int] = mapped_column(Integer)
    written_at: Mapped[datetime] = mapped_column(UtcMicros)
    replaced_at: Mapped[datetime] = mapped_column(UtcMicros)
    replaced_by: Mapped[str] = mapped_column(String)
    earlier_dropped: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index(None, "user_id", "name", "replaced_at"),)


class EpisodeRow(Base):
    __tablename__ = "episodes"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    id: Mapped[str] = mapped_column(String)
    user_id: Mapped[str] = mapped_column(String)
    session_id: Mapped[str | None] = mapped_column(String, nullable=True)
    occurred_at: Mapped[datetime] = mapped_column(UtcMicros)
    input: Mapped[str] = mapped_column(Text)
    output: Mapped[str] = mapped_column(Text)
    tool_calls: Mapped[str] = mapped_column(Text)
    metadata_json: Mapped[str] = mapped_column("metadata", Text)
    content_hash: Mapped[str] = mapped_column(String)
    # When consolidate() showed the episode to an extractor; None: never.
    consolidated_at: Mapped[datetime | None] = mapped_column(UtcMicros, nullable=True)
    __table_args__ = (
        UniqueConstraint("user_id", "id"),
        Index(None, "user_id", "occurred_at", "pk"),
        Index(None, "user_id", "session_id", "occurred_at", "pk"),
    )


class FactRow(Base):
    __tablename__ = "facts"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    id: Mapped[str] = mapped_column(String)
    user_id: Mapped[str] = mapped_column(String)
    subject: Mapped[str] = mapped_column(Text)
    predicate: Mapped[str] = mapped_column(Text)
    object: Mapped[str] = mapped_column(Text)
    confidence: Mapped[float]
    valid_from: Mapped[datetime] = mapped_column(UtcMicros)
    valid_until: Mapped[datetime | None] = mapped_column(UtcMicros, nullable=True)
    recorded_at: Mapped[datetime] = mapped_column(UtcMicros)
    source_episode_ids: Mapped[str] = mapped_column(Text)
    __table_args__ = (UniqueConstraint("user_id", "id"), Index(None, "user_id", "subject", "predicate", "valid_from"))


class FactChangeRow(Base):
    """The store's transaction time for facts: when a fact's ``valid_until`` changed (it was
    superseded, or a correction of the past cut its interval), what it was until then, and which
    fact's recording changed it. A fact's ``valid_until`` as the store knew it at any moment is
    its current one, or the ``valid_until_before`` of its first change after that moment."""

    __tablename__ = "fact_changes"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    user_id: Mapped[str] = mapped_column(String)
    fact_id: Mapped[str] = mapped_column(String)
    valid_until_before: Mapped[datetime | None] = mapped_column(UtcMicros, nullable=True)
    changed_at: Mapped[datetime] = mapped_column(UtcMicros)
    caused_by: Mapped[str] = mapped_column(String)
    __table_args__ = (Index(None, "user_id", "fact_id", "changed_at"),)


class SessionRow(Base):
    __tablename__ = "sessions"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    user_id: Mapped[str] = mapped_column(String)
    session_id: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(UtcMicros)
    updated_at: Mapped[datetime] = mapped_column(UtcMicros)
    __table_args__ = (UniqueConstraint("user_id", "session_id"),)


class KeyValueRow(Base):
    """A session's key-value entry. ``ttl_seconds``: the time to live it was written with (None:
    it never expires); a refresh (:meth:`store.tiers.sessions.SessionMemory.touch`) moves
    ``expires_at`` to that long after the refresh. ``created_at`` stays what the first write set.
    ``search_text``: what :meth:`store.memory.MemoryStore.search_keys` finds it by (None: it is
    not searched); its vector is of kind ``key``."""

    __tablename__ = "kv_entries"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    session_pk: Mapped[int] = mapped_column(Int64, ForeignKey("sessions.pk", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String)
    key: Mapped[str] = mapped_column(String)
    value: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime | None] = mapped_column(UtcMicros, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UtcMicros)
    created_at: Mapped[datetime] = mapped_column(UtcMicros)
    ttl_seconds: Mapped[float | None] = mapped_column(Double, nullable=True)
    search_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    __table_args__ = (UniqueConstraint("session_pk", "key"), Index(None, "user_id"))


class TaskStateRow(Base):
    __tablename__ = "task_states"
    session_pk: Mapped[int] = mapped_column(Int64, ForeignKey("sessions.pk", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String, index=True)
    state: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcMicros)


class ScratchpadRow(Base):
    __tablename__ = "scratchpad"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    session_pk: Mapped[int] = mapped_column(Int64, ForeignKey("sessions.pk", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(UtcMicros)
    content: Mapped[str] = mapped_column(Text)
    __table_args__ = (Index(None, "session_pk", "pk"), Index(None, "user_id"))


class CheckpointRow(Base):
    __tablename__ = "checkpoints"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    id: Mapped[str] = mapped_column(String)
    session_pk: Mapped[int] = mapped_column(Int64, ForeignKey("sessions.pk", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcMicros)
    snapshot: Mapped[str] = mapped_column(Text)
    __table_args__ = (UniqueConstraint("user_id", "id"), Index(None, "session_pk", "created_at"), Index(None, "user_id"))


class RecallTraceRow(Base):
    """One recall an agent made through a store opened with tracing on
    (:mod:`store.tiers.traces`): what was asked (``call``, ``query``, its ``session_id`` filter and
    the other ``arguments`` as JSON), what came back (``hits``: JSON, each hit's kind, id and
    scores, never its text), how long it took and the caller's ``label``."""

    __tablename__ = "recall_traces"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    id: Mapped[str] = mapped_column(String)
    user_id: Mapped[str] = mapped_column(String)
    at: Mapped[datetime] = mapped_column(UtcMicros)
    call: Mapped[str] = mapped_column(String)
    query: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str | None] = mapped_column(String, nullable=True)
    label: Mapped[str | None] = mapped_column(Text, nullable=True)
    arguments: Mapped[str] = mapped_column(Text)
    hits: Mapped[str] = mapped_column(Text)
    took_ms: Mapped[float] = mapped_column(Double)
    __table_args__ = (UniqueConstraint("user_id", "id"), Index(None, "user_id", "at", "pk"), Index(None, "user_id", "session_id", "at"))


class VectorRow(Base):
    """One embedding per searchable item; ``kind`` names the table ``item_pk`` points into."""

    __tablename__ = "vectors"
    kind: Mapped[str] = mapped_column(String, primary_key=True)
    item_pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    user_id: Mapped[str] = mapped_column(String)
    content_hash: Mapped[str] = mapped_column(String)
    vector: Mapped[bytes] = mapped_column(PackedVector)
    __table_args__ = (Index(None, "user_id", "kind", "item_pk"), Index(None, "user_id", "content_hash"))


class AuditRow(Base):
    """Who exported or erased what, when. Holds counts and digests, never erased content."""

    __tablename__ = "audit_log"
    pk: Mapped[int] = mapped_column(Int64, primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcMicros)
    actor: Mapped[str] = mapped_column(Text)
    action: Mapped[str] = mapped_column(String)
    user_id: Mapped[str] = mapped_column(String, index=True)
    scope: Mapped[str] = mapped_column(Text)
    counts: Mapped[str] = mapped_column(Text)
    digest: Mapped[str] = mapped_column(String)
    # 'local': it happened in this store; 'imported': history that arrived in an import file.
    origin: Mapped[str] = mapped_column(String, default="local", server_default="local")


T = Base.metadata.tables


def _table(row: type[Base]) -> Table:
    """A mapped class's table, typed as the ``Table`` it is (``__table__`` is declared as a ``FromClause``)."""
    return T[row.__tablename__]


meta_t = _table(MetaRow)
tenants_t = _table(TenantRow)
blocks_t = _table(BlockRow)
block_versions_t = _table(BlockVersionRow)
episodes_t = _table(EpisodeRow)
facts_t = _table(FactRow)
fact_changes_t = _table(FactChangeRow)
sessions_t = _table(SessionRow)
kv_t = _table(KeyValueRow)
task_t = _table(TaskStateRow)
scratch_t = _table(ScratchpadRow)
checkpoints_t = _table(CheckpointRow)
vectors_t = _table(VectorRow)
audit_t = _table(AuditRow)
traces_t = _table(RecallTraceRow)
