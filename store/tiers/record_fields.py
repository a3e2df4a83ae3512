"""The fields of an export record, each held to the API's own check for the same data, and the
base of every tier's record model (each tier's module declares its own, beside its ``records``).
A record that passes is what the API would have accepted; :mod:`store.rights.import_check` reads
a file with them."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationInfo

from ..errors import InvalidInputError
from ..validation import check_int, check_json, check_name, check_text, check_vector, parse_time


def limit(info: ValidationInfo) -> int:
    """The content limit in bytes the reading was given (every validation passes it)."""
    most: int = (info.context or {})["limit"]
    return most


def _field(info: ValidationInfo) -> str:
    return info.field_name or "value"


def _text(value: str, info: ValidationInfo) -> str:
    return check_text(value, _field(info), limit=limit(info))


def _optional_text(value: str | None, info: ValidationInfo) -> str | None:
    return None if value is None else check_text(value, _field(info), limit=limit(info))


def _nonempty(value: str, info: ValidationInfo) -> str:
    return check_text(value, _field(info), limit=limit(info), allow_empty=False)


def _name(value: str | None, info: ValidationInfo) -> str | None:
    return None if value is None else check_name(value, _field(info))


def names(value: list[str], info: ValidationInfo) -> list[str]:
    return [check_name(item, _field(info)) for item in value]


def _time(value: Any, info: ValidationInfo) -> datetime | None:
    return None if value is None else parse_time(value, _field(info))


def json_value(value: Any, info: ValidationInfo) -> Any:
    check_json(value, _field(info), limit=limit(info))
    return value


def order(value: int, info: ValidationInfo) -> int:
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


Text = Annotated[str, AfterValidator(_text)]
OptionalText = Annotated[str | None, AfterValidator(_optional_text)]
NonEmpty = Annotated[str, AfterValidator(_nonempty)]
Name = Annotated[str, AfterValidator(_name)]
OptionalName = Annotated[str | None, AfterValidator(_name)]
Time = Annotated[datetime, BeforeValidator(_time)]
OptionalTime = Annotated[datetime | None, BeforeValidator(_time)]
Embedding = Annotated[bytes | None, BeforeValidator(_embedding)]


Order = Annotated[int, AfterValidator(order)]
JsonList = Annotated[list[Any], AfterValidator(json_value)]
JsonObject = Annotated[dict[str, Any], AfterValidator(json_value)]
JsonValue = Annotated[Any, AfterValidator(json_value)]
Names = Annotated[list[str], AfterValidator(names)]


class Record(BaseModel):
    # strict: "3" is not an int and true is not a number, as in the API.
    model_config = ConfigDict(extra="forbid", strict=True)
    user_id: str | None

    def problem(self) -> tuple[str, str] | None:
        """(field, message) for a rule spanning fields, or None."""
        return None


def where(number: int | None, index: int, field: str | None) -> dict[str, Any]:
    """Where a record of an import file is, for its refusal: its line, or its index in the records given."""
    if number is not None:
        return {"line": number, "field": field}
    return {"field": f"records[{index}]" + (f".{field}" if field else "")}
