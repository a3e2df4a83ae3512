"""Turning store models into short, readable cells. No Textual here, only Rich text."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from rich.text import Text

ANONYMOUS_LABEL = "(anonymous)"


def tenant_label(user_id: str | None) -> str:
    return ANONYMOUS_LABEL if user_id is None else user_id


def count(n: int, noun: str) -> str:
    """'1 key', '2 keys'; ``noun`` is the plural, and '-ies' nouns become '-y'."""
    if n != 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-3]}y" if noun.endswith("ies") else f"{n} {noun[:-1]}"


def when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M")


def one_line(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def remaining(expires_at: datetime | None, now: datetime) -> str:
    if expires_at is None:
        return "no expiry"
    left = expires_at - now
    if left <= timedelta(0):
        return "expired"
    hours, rest = divmod(int(left.total_seconds()), 3600)
    minutes = rest // 60
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {int(left.total_seconds()) % 60:02d}s"


def highlighted(text: str, terms: list[str], width: int | None = None) -> Text:
    shown = one_line(text, width) if width else text
    rich = Text(shown)
    if terms:
        rich.highlight_words(terms, style="black on yellow", case_sensitive=False)
    return rich


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def score(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def rank(value: int | None) -> str:
    return "-" if value is None else f"#{value}"
