"""Checks run on every argument before anything is written, so a rejected call changes nothing."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

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
        raise InvalidTextError(f"{field} contains a lone surrogate at position {exc.start}; it is not valid UTF-8") from None
    if size > limit:
        raise ContentTooLargeError(
            f"{field} is {size:,} bytes, over the store's limit of {limit:,} bytes "
            "(raise it with MemoryStore.open(..., max_content_bytes=N))"
        )
    return value


def check_name(value: Any, field: str) -> str:
    """Identifiers (block names, session ids, keys): short, non-empty text."""
    return check_text(value, field, limit=512, allow_empty=False)


def check_optional_text(value: Any, field: str, *, limit: int) -> str | None:
    return None if value is None else check_text(value, field, limit=limit)


def check_optional_name(value: Any, field: str) -> str | None:
    return None if value is None else check_name(value, field)


def check_datetime(value: Any, field: str) -> datetime:
    """Accept only timezone-aware datetimes that exist in UTC (years 1 to 9999), returned in UTC.

    ``datetime.max`` with a western offset is in year 10000 once in UTC, and ``datetime.min``
    with an eastern one in year 0: Python cannot represent either, so both are refused here
    rather than overflowing later inside a query or an export."""
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{field} must be a datetime, not {type(value).__name__}")
    try:
        offset = value.utcoffset()
    except (ValueError, TypeError) as exc:  # a tzinfo whose offset is not a valid one
        raise InvalidInputError(f"{field} has a timezone memlens cannot use: {exc}") from None
    if offset is None:
        raise NaiveDatetimeError(f"{field} is a naive datetime; pass a timezone-aware one, e.g. datetime.now(timezone.utc)")
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInputError(
            f"{field} {value.isoformat()} falls outside the years 1 to 9999 in UTC, where memlens keeps its times"
        ) from None


def check_optional_datetime(value: Any, field: str) -> datetime | None:
    return None if value is None else check_datetime(value, field)


# json's C encoder and decoder recurse once per level and fail near Python's recursion limit
# (1000) less the caller's own stack: a value nested 5,000 deep raised RecursionError from
# json.dumps. Agent data is nowhere near 100 levels, which leaves the stack room wherever the
# value is read again (export, import, the inspector's detail pane).
MAX_JSON_DEPTH = 100


def check_json(value: Any, field: str, *, limit: int) -> str:
    """Serialise ``value`` to JSON text, applying the same text rules to the result.

    Only what JSON itself can hold, so what is read back equals what was written: objects with
    text keys (json would turn ``{1: "a"}`` into ``{"1": "a"}``), lists and tuples, text, whole
    numbers, finite floats (json writes NaN as ``NaN``, which is not JSON), booleans and None,
    at most MAX_JSON_DEPTH containers deep."""
    _check_json_value(value, field, budget=limit)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:  # e.g. an int of more than 4,300 digits
        raise InvalidInputError(f"{field} must be JSON-serialisable: {exc}") from None
    # json escapes a NUL inside strings as \u0000, which round-trips; only size and surrogates matter.
    return check_text(text, field, limit=limit)


def _check_json_value(value: Any, field: str, *, budget: int) -> None:
    """Walk ``value`` without recursing. Each item takes at least a byte of JSON text, so more
    items than the byte limit is too large, known before any of it is written (a list holding
    the same list twice, nested 50 times, is 2**50 items)."""
    stack = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > budget:
            raise ContentTooLargeError(f"{field} holds more than {budget:,} values, over the store's size limit")
        if isinstance(item, (str, bool, int)) or item is None:
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInputError(f"{field} holds {item!r}, which JSON cannot represent")
            continue
        if not isinstance(item, (dict, list, tuple)):
            raise InvalidInputError(f"{field} holds a {type(item).__name__}, which is not JSON (use lists, objects, text, numbers)")
        if depth > MAX_JSON_DEPTH:
            raise InvalidInputError(f"{field} is nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    raise InvalidInputError(
                        f"{field} has the key {key!r} ({type(key).__name__}); JSON object keys are text, "
                        "so it would come back as a different key"
                    )
            stack.extend((child, depth + 1) for child in item.values())
        else:
            stack.extend((child, depth + 1) for child in item)


def check_int(value: Any, field: str, *, minimum: int = 0, maximum: int = 2**63 - 1) -> int:
    """An integer SQLite can hold (64-bit), in range; booleans are not integers here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an integer, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise InvalidInputError(f"{field} must be from {minimum:,} to {maximum:,}, not {value:,}")
    return value


def check_number(value: Any, field: str) -> float:
    """A finite real number (an int or a float, not a bool), as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a number, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise InvalidInputError(f"{field} is too large to be a number memlens keeps") from None
    if not math.isfinite(number):
        raise InvalidInputError(f"{field} must be a finite number, not {number!r}")
    return number


def check_flag(value: Any, field: str) -> bool:
    """True or False, not any value that happens to be truthy ("no" is)."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{field} must be True or False, not {type(value).__name__}")
    return value


def check_ttl(ttl: Any, now: datetime) -> tuple[float | None, datetime | None]:
    """The time to live ``ttl`` (seconds, a timedelta, or None for never) in seconds, and when an
    entry given it at ``now`` expires."""
    seconds = ttl_seconds(ttl)
    return seconds, expiry(seconds, now)


def ttl_seconds(ttl: Any) -> float | None:
    """A time to live (seconds, a timedelta, or None for never) as seconds, checked."""
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        seconds: float = ttl.total_seconds()
    elif isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise InvalidInputError(f"ttl must be a number of seconds, a timedelta, or None, not {type(ttl).__name__}")
    else:
        seconds = float(ttl)
    if not seconds > 0:  # also refuses NaN
        raise InvalidInputError(f"ttl must be positive, not {ttl!r}")
    return seconds


def expiry(seconds: float | None, now: datetime) -> datetime | None:
    """When an entry with a time to live of ``seconds`` (None: never) expires if written or refreshed at ``now``."""
    if seconds is None:
        return None
    try:
        return now + timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        raise InvalidInputError(
            f"ttl {seconds!r} would expire after the year 9999; pass ttl=None for an entry that never expires"
        ) from None


def _system_clock() -> datetime:
    return datetime.now(UTC)


_clock: Callable[[], datetime] = _system_clock


def utcnow() -> datetime:
    """The store's notion of now; every timestamp it writes comes from here."""
    return _clock()


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Replace the clock (tests and screenshots freeze it); None restores the system clock."""
    global _clock
    _clock = clock or _system_clock


@contextmanager
def clock_fixed_at(moment: datetime) -> Iterator[None]:
    """Every time the store stamps inside the block is ``moment``; the clock before it after.
    The demo writes its tenants' earlier versions this way, so they have a history to travel."""
    global _clock
    previous = _clock
    _clock = lambda: moment  # noqa: E731 (a clock is any callable)
    try:
        yield
    finally:
        _clock = previous


# --- rules that imports apply too (a record in a file meets the same rules as an API call) ----


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
