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
