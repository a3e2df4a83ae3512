"""Reading an import file: every record parsed and held to the rules the API applies to the same
data, every record bound to a tenant its manifest declares, the manifest's counts and digests
verified. Nothing here touches the store; :mod:`store.import_writer` writes what passes.

The digests are integrity, not authority: whoever writes a hostile file can recompute them. What
keeps one tenant's file out of another tenant is the binding rule (a record may only name a
tenant the manifest declares, and ``as_user`` rebinds a one-tenant file explicitly).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, ValidationInfo

from ..errors import ImportValidationError, InvalidInputError
from ..models import TaskState
from ..tenancy import UNSET, Tenant
from ..tiers.episodes import check_transcript
from ..tiers.registry import SECTION_OF, SECTIONS
from ..tiers.sessions import check_snapshot, check_task_state
from ..validation import MAX_JSON_DEPTH, check_int, check_json, check_name, check_text, check_vector, parse_time
from .export import FORMAT, FORMAT_VERSION, Digests, canonical

# --- one validator per kind of field, each the API's own check ----------------------------------


def _limit(info: ValidationInfo) -> int:
    limit: int = (info.context or {})["limit"]  # every validation passes it (see _parse)
    return limit


def _field(info: ValidationInfo) -> str:
    return info.field_name or "value"


def _text(value: str, info: ValidationInfo) -> str:
    return check_text(value, _field(info), limit=_limit(info))


def _nonempty(value: str, info: ValidationInfo) -> str:
    return check_text(value, _field(info), limit=_limit(info), allow_empty=False)


def _name(value: str | None, info: ValidationInfo) -> str | None:
    return None if value is None else check_name(value, _field(info))


def _names(value: list[str], info: ValidationInfo) -> list[str]:
    return [check_name(item, _field(info)) for item in value]


def _time(value: Any, info: ValidationInfo) -> datetime | None:
    return None if value is None else parse_time(value, _field(info))


def _json(value: Any, info: ValidationInfo) -> Any:
    check_json(value, _field(info), limit=_limit(info))
    return value


def _order(value: int, info: ValidationInfo) -> int:
    return check_int(value, _field(info))


def _embedding(value: Any, info: ValidationInfo) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError("embedding must be base64 text")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError("embedding is not valid base64") from None
    return check_vector(data, None, "embedding")  # its dimension is checked against the store's model later


def _task(value: Any, info: ValidationInfo) -> TaskState:
    return check_task_state(value, limit=_limit(info))


def _snapshot(value: Any, info: ValidationInfo) -> dict[str, Any]:
    return check_snapshot(value, limit=_limit(info))


Text = Annotated[str, AfterValidator(_text)]
NonEmpty = Annotated[str, AfterValidator(_nonempty)]
Name = Annotated[str, AfterValidator(_name)]
OptionalName = Annotated[str | None, AfterValidator(_name)]
Time = Annotated[datetime, BeforeValidator(_time)]
OptionalTime = Annotated[datetime | None, BeforeValidator(_time)]
Embedding = Annotated[bytes | None, BeforeValidator(_embedding)]


class _Record(BaseModel):
    # strict: "3" is not an int and true is not a number, as in the API.
    model_config = ConfigDict(extra="forbid", strict=True)
    user_id: str | None

    def problem(self) -> tuple[str, str] | None:
        """(field, message) for a rule spanning fields, or None."""
        return None


class BlockRecord(_Record):
    type: Literal["block"]
    name: Name
    content: Text
    pinned_order: Annotated[int, AfterValidator(_order)]
    updated_at: Time


class BlockVersionRecord(_Record):
    type: Literal["block_version"]
    name: Name
    content: Text
    pinned_order: Annotated[int, AfterValidator(_order)]
    written_at: Time
    replaced_at: Time
    replaced_by: Literal["update", "append", "delete"]
    earlier_dropped: bool

    def problem(self) -> tuple[str, str] | None:
        if self.replaced_at < self.written_at:
            return "replaced_at", "a block version cannot be replaced before it was written"
        return None


class EpisodeRecord(_Record):
    type: Literal["episode"]
    id: Name
    session_id: OptionalName
    occurred_at: Time
    input: Text
    output: Text
    tool_calls: Annotated[list[Any], AfterValidator(_json)]
    metadata: Annotated[dict[str, Any], AfterValidator(_json)]
    embedding: Embedding = None

    def problem(self) -> tuple[str, str] | None:
        if not self.input and not self.output:
            return "input", "an episode needs an input or an output"
        if "tool_transcript" in self.metadata:
            # session_messages replays it as messages: held to remember(tool_transcript=)'s rule.
            try:
                check_transcript(self.metadata["tool_transcript"])
            except InvalidInputError as exc:
                return "metadata.tool_transcript", str(exc)
        return None


class FactRecord(_Record):
    type: Literal["fact"]
    id: Name
    subject: NonEmpty
    predicate: NonEmpty
    object: NonEmpty
    confidence: float = Field(ge=0, le=1)
    valid_from: Time
    valid_until: OptionalTime
    recorded_at: Time
    source_episode_ids: Annotated[list[str], AfterValidator(_names)]
    embedding: Embedding = None

    def problem(self) -> tuple[str, str] | None:
        if self.valid_until is not None and self.valid_until < self.valid_from:
            return "valid_until", "a fact cannot stop being valid before it starts (valid_until < valid_from)"
        return None


class FactChangeRecord(_Record):
    type: Literal["fact_change"]
    fact_id: Name
    valid_until_before: OptionalTime
    changed_at: Time
    caused_by: Name


class SessionRecord(_Record):
    type: Literal["session"]
    session_id: Name
    created_at: Time
    updated_at: Time


class KeyValueRecord(_Record):
    type: Literal["kv"]
    session_id: Name
    key: Name
    value: Annotated[Any, AfterValidator(_json)]
    expires_at: OptionalTime
    updated_at: Time


class TaskStateRecord(_Record):
    type: Literal["task_state"]
    session_id: Name
    state: Annotated[TaskState, BeforeValidator(_task)]
    updated_at: Time


class NoteRecord(_Record):
    type: Literal["note"]
    session_id: Name
    created_at: Time
    content: Text


class CheckpointRecord(_Record):
    type: Literal["checkpoint"]
    id: Name
    session_id: Name
    description: Text
    created_at: Time
    snapshot: Annotated[dict[str, Any], AfterValidator(_snapshot)]


class AuditRecord(_Record):
    type: Literal["audit"]
    at: Time
    actor: Name
    action: Literal["forget", "export", "import", "migrate"]
    scope: Annotated[dict[str, Any], AfterValidator(_json)]
    counts: Annotated[dict[str, int], AfterValidator(_json)]
    digest: Name
    # Where the entry happened in the exporting store; here it is imported history either way.
    origin: Literal["local", "imported"] = "local"


AnyRecord = Annotated[
    BlockRecord
    | BlockVersionRecord
    | EpisodeRecord
    | FactRecord
    | FactChangeRecord
    | SessionRecord
    | KeyValueRecord
    | TaskStateRecord
    | NoteRecord
    | CheckpointRecord
    | AuditRecord,
    Field(discriminator="type"),
]
RECORD = TypeAdapter(AnyRecord)


@dataclass
class Checked:
    """A file that passed every check: its records with their line numbers (None when the
    source was a dict), its manifest, and the tenant each declared ``user_id`` is written to."""

    records: list[tuple[int | None, Any]]
    manifest: dict[str, Any]
    targets: dict[str | None, Tenant]

    def target(self, record: Any) -> Tenant:
        return self.targets[record.user_id]


# --- reading the source ---------------------------------------------------------------------


def _loads(text: str, line: int | None) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ImportValidationError(
            f"nested too deeply to read (over {MAX_JSON_DEPTH} levels)", line=line, field=_deep_field(text)
        ) from None
    except ValueError as exc:
        raise ImportValidationError(f"not valid JSON: {exc}", line=line) from None


def _deep_field(text: str) -> str | None:
    """The first top-level key whose value is nested too deep, by a bracket count outside
    strings; run only after json gave up, so the refusal can name the field."""
    depth, in_string, escaped, key, last_string, start = 0, False, False, None, None, 0
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                last_string = text[start + 1 : index]
        elif char == '"':
            in_string, start = True, index
        elif char == ":" and depth == 1:
            key = last_string
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH + 1:  # the record itself is the first level
                return key
        elif char in "]}":
            depth -= 1
    return key


def _lines(source: Any) -> tuple[Callable[[], Iterator[tuple[int | None, Any]]], Any]:
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
        raise ImportValidationError(f"import takes a path or the dict export() returns, not {type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise ImportValidationError(f"{path} is not a file")
    with path.open("rb") as handle:
        head = handle.read(64).lstrip()
    if head.startswith(b'{"records"'):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ImportValidationError(f"{path} is not UTF-8 text: {exc}") from None
        document = _loads(text, None)
        if not isinstance(document, dict):
            raise ImportValidationError(f"{path} is not a memlens export document")
        return _lines(document)

    def jsonl() -> Iterator[tuple[int | None, Any]]:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ImportValidationError(f"not UTF-8 text: {exc}", line=number) from None
                if line.strip():
                    yield number, _loads(line, number)

    return jsonl, None


def _records(
    read: Callable[[], Iterator[tuple[int | None, Any]]], manifest_upfront: Any
) -> tuple[list[tuple[int | None, dict[str, Any]]], dict[str, Any]]:
    manifest = manifest_upfront
    raw_records: list[tuple[int | None, dict[str, Any]]] = []
    for number, raw in read():
        if not isinstance(raw, dict):
            raise ImportValidationError("a record must be a JSON object", line=number)
        if raw.get("type") == "manifest":
            manifest = {k: v for k, v in raw.items() if k != "type"}
            continue
        raw_records.append((number, raw))
    if manifest is None:
        raise ImportValidationError("no manifest: this is not a complete memlens export (was it truncated?)")
    if not isinstance(manifest, dict):
        raise ImportValidationError("the manifest must be a JSON object", field="manifest")
    return raw_records, manifest


# --- checking --------------------------------------------------------------------------------


def _targets(manifest: dict[str, Any], as_user: Any) -> dict[str | None, Tenant]:
    """The tenants the manifest declares, each mapped to the tenant it is written to."""
    declared = manifest.get("tenants")
    if not isinstance(declared, list):
        raise ImportValidationError("the manifest does not declare its tenants", field="manifest.tenants")
    try:
        tenants = {user_id: Tenant.of(user_id) for user_id in declared}
    except InvalidInputError as exc:
        raise ImportValidationError(str(exc), field="manifest.tenants") from None
    if as_user is UNSET:
        return tenants
    if len(tenants) != 1:
        raise ImportValidationError(
            f"as_user imports one tenant's export under another id, and this export holds {len(tenants)} tenants; "
            "export the tenant you want on its own"
        )
    return {user_id: Tenant.of(as_user) for user_id in tenants}


def _where(number: int | None, index: int, field: str | None) -> dict[str, Any]:
    if number is not None:
        return {"line": number, "field": field}
    return {"field": f"records[{index}]" + (f".{field}" if field else "")}


def _parse(raw: dict[str, Any], number: int | None, index: int, limit: int) -> Any:
    try:
        return RECORD.validate_python(raw, context={"limit": limit})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        cause = first.get("ctx", {}).get("error")
        message = str(cause) if isinstance(cause, Exception) else first["msg"]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise ImportValidationError(message, **_where(number, index, field)) from None


def _check_fact_changes(parsed: list[tuple[int | None, Any]], ids: set[tuple[str | None, str, str]]) -> None:
    """A fact's change names facts of the same tenant in the same file (an export holds them all)."""
    for index, (number, record) in enumerate(parsed):
        if record.type != "fact_change":
            continue
        for field in ("fact_id", "caused_by"):
            if (record.user_id, "fact", getattr(record, field)) not in ids:
                raise ImportValidationError(
                    f"this change names fact {getattr(record, field)!r}, which the file does not hold for this tenant",
                    **_where(number, index, f"fact_change.{field}"),
                )


def validate(source: Any, max_bytes: int, *, as_user: Any = UNSET) -> Checked:
    """Every record parsed, held to the API's rules and bound to a declared tenant, and the
    manifest's counts and digests verified. Raises :class:`ImportValidationError` naming the
    line (or record index) and field of the first problem."""
    read, upfront = _lines(source)
    raw_records, manifest = _records(read, upfront)
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise ImportValidationError(
            f"unsupported export format {manifest.get('format')!r} version {manifest.get('format_version')!r}; "
            f"this memlens reads {FORMAT!r} version {FORMAT_VERSION}"
        )
    targets = _targets(manifest, as_user)
    digests = Digests()
    parsed = []
    ids: set[tuple[str | None, str, str]] = set()
    for index, (number, raw) in enumerate(raw_records):
        record = _parse(raw, number, index, max_bytes)
        if record.user_id not in targets:
            raise ImportValidationError(
                f"this record belongs to tenant {record.user_id!r}, which the manifest does not declare "
                f"(it declares {list(targets)!r}); nothing was imported",
                **_where(number, index, "user_id"),
            )
        problem = record.problem()
        if problem:
            raise ImportValidationError(problem[1], **_where(number, index, f"{record.type}.{problem[0]}"))
        if record.type in ("episode", "fact", "checkpoint"):
            key = (record.user_id, record.type, record.id)
            if key in ids:
                raise ImportValidationError(f"{record.type} id {record.id!r} appears twice for this tenant", **_where(number, index, "id"))
            ids.add(key)
        digests.add(SECTION_OF[record.type], canonical(raw))
        parsed.append((number, record))
    _check_fact_changes(parsed, ids)
    counts = manifest.get("counts", {})
    expected = counts if isinstance(counts, dict) else {}
    for section in SECTIONS:
        if digests.counts[section] != expected.get(section, 0):
            raise ImportValidationError(
                f"the manifest lists {expected.get(section, 0)} {section} but the file holds {digests.counts[section]}"
            )
    actual = digests.manifest("", [], datetime.now(), None, False)["sha256"]
    sha256 = manifest.get("sha256", {})
    for section, value in sha256.items() if isinstance(sha256, dict) else ():
        if actual.get(section) != value:
            raise ImportValidationError(f"section {section!r} does not match its sha256 in the manifest; the file was altered")
    return Checked(parsed, manifest, targets)


def check_embedding_dims(checked: Checked, dim: int) -> None:
    """Refuse file vectors that are not ``dim`` long, when the store would use them as they are."""
    for index, (number, r) in enumerate(checked.records):
        if getattr(r, "embedding", None) is not None:
            try:
                check_vector(r.embedding, dim, "embedding")
            except InvalidInputError as exc:
                raise ImportValidationError(str(exc), **_where(number, index, f"{r.type}.embedding")) from None
