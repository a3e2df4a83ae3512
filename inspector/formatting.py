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


EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float | None, width: int = 4) -> str:
    """``fraction`` (0..1, clipped) as a bar of ``width`` cells in eighths on a ``░`` track, so
    its length reads without colour; ``-`` padded when there is nothing to show."""
    if fraction is None:
        return "-".ljust(width)
    eighths = round(min(max(fraction, 0.0), 1.0) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(width, "░")


def score_bars(scores: Any, best_keyword: float | None) -> str:
    """Two bars: the vector side (cosine similarity) and the keyword side, which in hybrid mode
    is the query-word coverage that adds to the score, and otherwise BM25 relative to the best
    hit shown (BM25 has no upper bound to measure against)."""
    if scores.coverage is not None:
        keyword = scores.coverage
    elif scores.keyword is not None and best_keyword:
        keyword = scores.keyword / best_keyword
    else:
        keyword = None
    return f"{bar(scores.vector)} {bar(keyword)}"
