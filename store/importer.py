"""Importing an export: validate every record and the manifest first, embed what needs it,
then write everything in one transaction. Re-importing the same file changes nothing."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from sqlalchemy import Connection

from . import audit
from .errors import ImportValidationError, InvalidInputError
from .export import FORMAT, FORMAT_VERSION, SECTIONS, Digests, canonical
from .schema import audit_t, blocks_t, checkpoints_t, episodes_t, facts_t, kv_t, scratch_t, sessions_t, task_t
from .tenancy import Tenant, owner_of
from .tiers.common import content_hash, ensure_session, touch_tenant
from .tiers.episodes import embed_text
from .tiers.facts import fact_text
from .validation import check_datetime, check_int, check_json, check_text

if TYPE_CHECKING:
    from .memory import MemoryStore


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: str | None

    @field_validator("*", mode="after")
    @classmethod
    def _aware(cls, value):
        if isinstance(value, datetime) and value.tzinfo is None:
            raise ValueError("datetimes must carry a timezone")
        return value


class BlockRecord(_Record):
    type: Literal["block"]
    name: str
    content: str
    pinned_order: int
    updated_at: datetime


class EpisodeRecord(_Record):
    type: Literal["episode"]
    id: str
    session_id: str | None
    occurred_at: datetime
    input: str
    output: str
    tool_calls: list[Any]
    metadata: dict[str, Any]
    embedding: str | None = None


class FactRecord(_Record):
    type: Literal["fact"]
    id: str
    subject: str
    predicate: str
    object: str
    confidence: float = Field(ge=0, le=1)
    valid_from: datetime
    valid_until: datetime | None
    recorded_at: datetime
    source_episode_ids: list[str]
    embedding: str | None = None


class SessionRecord(_Record):
    type: Literal["session"]
    session_id: str
    created_at: datetime
    updated_at: datetime


class KeyValueRecord(_Record):
    type: Literal["kv"]
    session_id: str
    key: str
    value: Any
    expires_at: datetime | None
    updated_at: datetime


class TaskStateRecord(_Record):
    type: Literal["task_state"]
    session_id: str
    state: dict[str, Any]
    updated_at: datetime


class NoteRecord(_Record):
    type: Literal["note"]
    session_id: str
    created_at: datetime
    content: str


class CheckpointRecord(_Record):
    type: Literal["checkpoint"]
    id: str
    session_id: str
    description: str
    created_at: datetime
    snapshot: dict[str, Any]


class AuditRecord(_Record):
    type: Literal["audit"]
    at: datetime
    actor: str
    action: Literal["forget", "export", "import"]
    scope: dict[str, Any]
    counts: dict[str, int]
    digest: str


AnyRecord = Annotated[
    Union[BlockRecord, EpisodeRecord, FactRecord, SessionRecord, KeyValueRecord, TaskStateRecord, NoteRecord, CheckpointRecord, AuditRecord],
    Field(discriminator="type"),
]
RECORD = TypeAdapter(AnyRecord)
SECTION_OF = {
    "block": "blocks", "episode": "episodes", "fact": "facts", "session": "sessions", "kv": "kv_entries",
    "task_state": "task_states", "note": "scratchpad", "checkpoint": "checkpoints", "audit": "audit",
}


# --- reading the source ---------------------------------------------------------------------


def _lines(source: Any) -> tuple[Callable[[], Iterator[tuple[int | None, dict]]], dict | None]:
    """A way to iterate (line number, raw record) any number of times, and the manifest if known upfront."""
    if isinstance(source, dict):
        manifest = source.get("manifest")
        if "records" in source:
            records = source["records"]
        else:
            records = [r for section in SECTIONS for r in source.get(section, [])]
        if not isinstance(records, list):
            raise ImportValidationError("records must be a list")
        return (lambda: ((None, r) for r in records)), manifest
    if not isinstance(source, (str, Path)):
        raise ImportValidationError(f"import takes a path or the dict export() returns, not a {type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise ImportValidationError(f"{path} is not a file")
    with path.open("rb") as handle:
        head = handle.read(64).lstrip()
    if head.startswith(b'{"records"'):
        try:
            document = _loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise ImportValidationError(f"{path} is not valid JSON: {exc}") from None
        return _lines(document)

    def jsonl() -> Iterator[tuple[int | None, dict]]:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, _loads(line)
                except (ValueError, RecursionError) as exc:
                    raise ImportValidationError(f"not valid JSON: {exc}", line=number) from None

    return jsonl, None


def _loads(text: str) -> Any:
    """JSON as the standard defines it: json accepts NaN and Infinity, which no export holds."""
    return json.loads(text, parse_constant=_not_json)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _records(read, manifest_upfront: dict | None) -> tuple[list[tuple[int | None, dict]], dict]:
    manifest = manifest_upfront
    checked: list[tuple[int | None, dict]] = []
    for number, raw in read():
        if not isinstance(raw, dict):
            raise ImportValidationError("a record must be a JSON object", line=number)
        if raw.get("type") == "manifest":
            manifest = {k: v for k, v in raw.items() if k != "type"}
            continue
        checked.append((number, raw))
    if manifest is None:
        raise ImportValidationError("no manifest: this is not a complete memlens export (was it truncated?)")
    return checked, manifest


def validate(source: Any, max_bytes: int) -> tuple[list[tuple[int | None, Any]], dict]:
    """Every record parsed and checked, and the manifest's counts and digests verified."""
    read, upfront = _lines(source)
    raw_records, manifest = _records(read, upfront)
    if not isinstance(manifest, dict):
        raise ImportValidationError("the manifest must be an object")
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise ImportValidationError(
            f"unsupported export format {manifest.get('format')!r} version {manifest.get('format_version')!r}; "
            f"this memlens reads {FORMAT!r} version {FORMAT_VERSION}"
        )
    digests = Digests()
    parsed = []
    for index, (number, raw) in enumerate(raw_records):
        try:
            record = RECORD.validate_python(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            where = number if number is not None else None
            raise ImportValidationError(first["msg"], line=where, field=field if number else f"records[{index}].{field}") from None
        for name, value in record:
            try:
                if isinstance(value, str) and name != "embedding":
                    check_text(value, name, limit=max_bytes)
                elif isinstance(value, datetime):
                    check_datetime(value, name)
                elif isinstance(value, int) and not isinstance(value, bool):
                    check_int(value, name, minimum=-(2**63))
                elif isinstance(value, (dict, list)):
                    check_json(value, name, limit=max_bytes)
            except InvalidInputError as exc:
                raise ImportValidationError(str(exc), line=number, field=name) from None
        digests.add(SECTION_OF[record.type], canonical(raw))
        parsed.append((number, record))
    if not isinstance(manifest.get("counts", {}), dict) or not isinstance(manifest.get("sha256", {}), dict):
        raise ImportValidationError("the manifest's counts and sha256 must be objects")
    expected = manifest.get("counts", {})
    for section in SECTIONS:
        if digests.counts[section] != expected.get(section, 0):
            raise ImportValidationError(
                f"the manifest lists {expected.get(section, 0)} {section} but the file holds {digests.counts[section]}"
            )
    actual = digests.manifest("", [], datetime.now(), None, False)["sha256"]
    for section, value in manifest.get("sha256", {}).items():
        if actual.get(section) != value:
            raise ImportValidationError(f"section {section!r} does not match its sha256 in the manifest; the file was altered")
    return parsed, manifest


# --- writing ---------------------------------------------------------------------------------


def apply(store: "MemoryStore", conn: Connection, parsed, vectors: dict[tuple[str, str], bytes], actor: str, at: datetime) -> dict[str, int]:
    counts = {s: 0 for s in SECTIONS}
    tenants: dict[str | None, Tenant] = {}
    per_tenant: dict[str | None, dict[str, int]] = {}
    for number, r in parsed:
        tenant = tenants.get(r.user_id)
        if tenant is None:
            tenant = tenants[r.user_id] = Tenant.of(r.user_id)
            touch_tenant(conn, tenant, at)
            per_tenant[r.user_id] = {s: 0 for s in SECTIONS}
        per_tenant[r.user_id][SECTION_OF[r.type]] += 1
        session_pk = ensure_session(conn, tenant, r.session_id, at, touch=False) if getattr(r, "session_id", None) and r.type != "episode" else None
        added = True
        if r.type == "block":
            if conn.execute(tenant.update(blocks_t).where(blocks_t.c.name == r.name).values(content=r.content, updated_at=r.updated_at)).rowcount == 0:
                conn.execute(blocks_t.insert().values(tenant.stamp({"name": r.name, "content": r.content, "pinned_order": r.pinned_order, "updated_at": r.updated_at})))
        elif r.type in ("episode", "fact", "checkpoint"):
            table = {"episode": episodes_t, "fact": facts_t, "checkpoint": checkpoints_t}[r.type]
            owner = owner_of(conn, table, table.c.id, r.id)
            if owner is not None:
                if owner != tenant:
                    raise ImportValidationError(f"{r.type} {r.id} already belongs to another tenant", line=number, field="id")
                added = False
            elif r.type == "episode":
                if r.session_id:
                    ensure_session(conn, tenant, r.session_id, at, touch=False)
                row = {"id": r.id, "session_id": r.session_id, "occurred_at": r.occurred_at, "input": r.input, "output": r.output,
                       "tool_calls": json.dumps(r.tool_calls, ensure_ascii=False, sort_keys=True),
                       "metadata": json.dumps(r.metadata, ensure_ascii=False, sort_keys=True),
                       "content_hash": content_hash(embed_text(r.input, r.output))}
                pk = conn.execute(episodes_t.insert().values(tenant.stamp(row))).inserted_primary_key[0]
                _vector(store, conn, tenant, "episode", pk, embed_text(r.input, r.output), vectors.get(("episode", r.id)))
            elif r.type == "fact":
                row = {"id": r.id, "subject": r.subject, "predicate": r.predicate, "object": r.object, "confidence": r.confidence,
                       "valid_from": r.valid_from, "valid_until": r.valid_until, "recorded_at": r.recorded_at,
                       "source_episode_ids": json.dumps(r.source_episode_ids)}
                pk = conn.execute(facts_t.insert().values(tenant.stamp(row))).inserted_primary_key[0]
                _vector(store, conn, tenant, "fact", pk, fact_text(r.subject, r.predicate, r.object), vectors.get(("fact", r.id)))
            else:
                conn.execute(checkpoints_t.insert().values(tenant.stamp({
                    "id": r.id, "session_pk": session_pk, "description": r.description, "created_at": r.created_at,
                    "snapshot": json.dumps(r.snapshot, ensure_ascii=False)})))
        elif r.type == "session":
            conn.execute(tenant.update(sessions_t).where(sessions_t.c.session_id == r.session_id).values(created_at=r.created_at, updated_at=r.updated_at))
        elif r.type == "kv":
            values = {"value": json.dumps(r.value, ensure_ascii=False, sort_keys=True), "expires_at": r.expires_at, "updated_at": r.updated_at}
            if conn.execute(tenant.update(kv_t).where(kv_t.c.session_pk == session_pk, kv_t.c.key == r.key).values(**values)).rowcount == 0:
                conn.execute(kv_t.insert().values(tenant.stamp({"session_pk": session_pk, "key": r.key, **values})))
        elif r.type == "task_state":
            conn.execute(tenant.delete(task_t).where(task_t.c.session_pk == session_pk))
            conn.execute(task_t.insert().values(tenant.stamp({"session_pk": session_pk, "state": json.dumps(r.state), "updated_at": r.updated_at})))
        elif r.type == "note":
            same = tenant.select(scratch_t, scratch_t.c.pk).where(scratch_t.c.session_pk == session_pk, scratch_t.c.created_at == r.created_at, scratch_t.c.content == r.content)
            if conn.execute(same).first():
                added = False
            else:
                conn.execute(scratch_t.insert().values(tenant.stamp({"session_pk": session_pk, "created_at": r.created_at, "content": r.content})))
        elif r.type == "audit":
            same = tenant.select(audit_t, audit_t.c.pk).where(audit_t.c.digest == r.digest, audit_t.c.action == r.action)
            if conn.execute(same).first():
                added = False
            else:
                conn.execute(audit_t.insert().values(tenant.stamp({
                    "at": r.at, "actor": r.actor, "action": r.action, "scope": json.dumps(r.scope, sort_keys=True),
                    "counts": json.dumps(r.counts, sort_keys=True), "digest": r.digest})))
        if added:
            counts[SECTION_OF[r.type]] += 1
    for user_id, tenant in tenants.items():
        audit.record(conn, tenant, action="import", actor=actor, scope={"records": len(parsed)}, counts=per_tenant[user_id], at=at)
    return counts


def _vector(store: "MemoryStore", conn: Connection, tenant: Tenant, kind: str, pk: int, text: str, vector: bytes | None) -> None:
    if vector is not None:
        store._store_vectors(conn, tenant, kind, [pk], [content_hash(text)], [vector])


def vectors_needed(store: "MemoryStore", parsed, manifest: dict) -> tuple[dict[tuple[str, str], bytes], int]:
    """Vectors for imported episodes and facts, and how many had to be embedded afresh: the
    file's own are used when they come from the store's model (outside any write transaction)."""
    embedder = store.embedder
    if embedder is None:
        return {}, 0
    same_model = manifest.get("includes_embeddings") and manifest.get("embedding_model") == embedder.name
    out: dict[tuple[str, str], bytes] = {}
    todo: list[tuple[tuple[str, str], str]] = []
    for _, r in parsed:
        if r.type not in ("episode", "fact"):
            continue
        key = (r.type, r.id)
        if same_model and r.embedding:
            out[key] = base64.b64decode(r.embedding)
        else:
            todo.append((key, embed_text(r.input, r.output) if r.type == "episode" else fact_text(r.subject, r.predicate, r.object)))
    if todo:
        out.update(zip((k for k, _ in todo), store._indexer.embed([t for _, t in todo])))
    return out, len(todo)
