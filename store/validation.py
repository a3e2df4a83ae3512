"""Checks run on every argument before anything is written, so a rejected call changes nothing."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

from .errors import ContentTooLargeError, InvalidInputError, InvalidTextError, NaiveDatetimeError

DEFAULT_MAX_CONTENT_BYTES = 1_000_000


def check_text(value: Any, field: str, *, limit: int, allow_empty: bool = True) -> str:
    """Return ``value`` if it is text SQLite stores faithfully and within ``limit`` bytes."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string, not {type(value).__name__}")
    if not allow_empty and not value:
        raise InvalidInputError(f"{field} must not be empty")
    if "\x00" in value:
        raise InvalidTextError(f"{field} contains a NUL character; remove it before storing")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidTextError(
            f"{field} contains a lone surrogate at position {exc.start}; it is not valid UTF-8"
        ) from None
    if size > limit:
        raise ContentTooLargeError(
            f"{field} is {size:,} bytes, over the store's limit of {limit:,} bytes "
            "(raise it with MemoryStore.open(..., max_content_bytes=N))"
        )
    return value


def check_name(value: Any, field: str) -> str:
    """Identifiers (block names, session ids, keys): short, non-empty text."""
    return check_text(value, field, limit=512, allow_empty=False)


def check_optional_name(value: Any, field: str) -> str | None:
    return None if value is None else check_name(value, field)


def check_datetime(value: Any, field: str) -> datetime:
    """Accept only timezone-aware datetimes, returned in UTC."""
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{field} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{field} is a naive datetime; pass a timezone-aware one, e.g. datetime.now(timezone.utc)"
        )
    return value.astimezone(timezone.utc)


def check_optional_datetime(value: Any, field: str) -> datetime | None:
    return None if value is None else check_datetime(value, field)


def check_json(value: Any, field: str, *, limit: int) -> str:
    """Serialise ``value`` to JSON text, applying the same text rules to the result."""
    if value == [] or value == {}:
        return "[]" if isinstance(value, list) else "{}"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{field} must be JSON-serialisable: {exc}") from None
    # json escapes a NUL inside strings as \u0000, which round-trips; only size and surrogates matter.
    return check_text(text, field, limit=limit)


def _system_clock() -> datetime:
    return datetime.now(timezone.utc)


_clock: Callable[[], datetime] = _system_clock


def utcnow() -> datetime:
    """The store's notion of now; every timestamp it writes comes from here."""
    return _clock()


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Replace the clock (tests and screenshots freeze it); None restores the system clock."""
    global _clock
    _clock = clock or _system_clock


# --- rules that imports apply too (a record in a file meets the same rules as an API call) ----

# json's C encoder and decoder recurse once per level and fail near Python's recursion limit
# (1000) less the caller's own stack. Measured here: a key-value entry nested 990 deep was
# accepted by an import and then broke every export of its tenant (RecursionError). Agent data
# is nowhere near 100 levels, which leaves the stack plenty of room wherever it is read.
MAX_JSON_DEPTH = 100


def check_json_depth(value: Any, field: str, *, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse JSON values nested deeper than ``limit`` (counted without recursing)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                raise InvalidInputError(f"{field} is nested more than {limit} levels deep")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def check_int(value: Any, field: str, *, minimum: int = 0, maximum: int = 2**63 - 1) -> int:
    """An integer SQLite can hold (64-bit), in range; booleans are not integers here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an integer, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise InvalidInputError(f"{field} must be from {minimum:,} to {maximum:,}, not {value:,}")
    return value


def check_vector(data: bytes, dim: int | None, field: str) -> bytes:
    """float32 bytes of one embedding: ``dim`` values (any count when None), all finite."""
    import numpy as np

    if len(data) % 4 or not data:
        raise InvalidInputError(f"{field} is {len(data)} bytes, not a whole number of float32 values")
    if dim is not None and len(data) != dim * 4:
        raise InvalidInputError(f"{field} has {len(data) // 4} dimensions; this store's model makes {dim}")
    if not np.isfinite(np.frombuffer(data, dtype=np.float32)).all():
        raise InvalidInputError(f"{field} holds NaN or infinite values")
    return data


def parse_time(value: Any, field: str) -> datetime:
    """An ISO 8601 date-time with a timezone, as exports write them, checked like an API datetime."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be an ISO 8601 date-time string, not {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(f"{field} {value[:40]!r} is not an ISO 8601 date-time") from None
    try:
        return check_datetime(parsed, field)
    except OverflowError:  # e.g. 9999-12-31T23:59-05:00 is in year 10000 once in UTC
        raise InvalidInputError(f"{field} {value!r} is out of the range of representable times") from None
