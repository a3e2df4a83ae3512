"""Reading an import file: every record parsed (by its tier's record model, named in the tier
registry) and held to the rules the API applies to the same data, every record bound to a tenant
its manifest declares, the manifest's counts and digests verified. Nothing here touches the
store; :mod:`store.rights.import_write` writes what passes.

The digests are integrity, not authority: whoever writes a hostile file can recompute them. What
keeps one tenant's file out of another tenant is the binding rule (a record may only name a
tenant the manifest declares, and ``as_user`` rebinds a one-tenant file explicitly).
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from ..errors import ImportValidationError, InvalidInputError
from ..tenancy import UNSET, Tenant
from ..tiers.record_fields import where
from ..tiers.registry import EXPORTED, SECTION_OF, SECTIONS
from ..validation import MAX_JSON_DEPTH, check_vector
from .export import FORMAT, FORMAT_VERSION, Digests, canonical


def _any_record() -> TypeAdapter[Any]:
    """Any tier's record, told apart by its ``type``: the models the tiers' modules declare."""
    union: Any = functools.reduce(operator.or_, (tier.record_model for tier in EXPORTED))
    return TypeAdapter(Annotated[union, Field(discriminator="type")])


RECORD = _any_record()
IDENTIFIED = {tier.record_type for tier in EXPORTED if "id" in tier.record_model.model_fields}
"""The records that carry an id, unique per tenant in a file as in a store."""


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


def _parse(raw: dict[str, Any], number: int | None, index: int, limit: int) -> Any:
    try:
        return RECORD.validate_python(raw, context={"limit": limit})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        cause = first.get("ctx", {}).get("error")
        message = str(cause) if isinstance(cause, Exception) else first["msg"]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise ImportValidationError(message, **where(number, index, field)) from None


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
                **where(number, index, "user_id"),
            )
        problem = record.problem()
        if problem:
            raise ImportValidationError(problem[1], **where(number, index, f"{record.type}.{problem[0]}"))
        if record.type in IDENTIFIED:
            key = (record.user_id, record.type, record.id)
            if key in ids:
                raise ImportValidationError(f"{record.type} id {record.id!r} appears twice for this tenant", **where(number, index, "id"))
            ids.add(key)
        digests.add(SECTION_OF[record.type], canonical(raw))
        parsed.append((number, record))
    for tier in EXPORTED:
        if tier.check_file is not None:
            tier.check_file(parsed, ids)
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
                raise ImportValidationError(str(exc), **where(number, index, f"{r.type}.embedding")) from None
