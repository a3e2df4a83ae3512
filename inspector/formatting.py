"""Turning store models into short, readable cells. No Textual here, only Rich text."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:
    from rich.table import Table


def count(n: int, noun: str) -> str:
    """'1 key', '2 keys'; ``noun`` is the plural, and '-ies' nouns become '-y'."""
    if n != 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-3]}y" if noun.endswith("ies") else f"{n} {noun[:-1]}"


def when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M")


def parse_day(text: str, *, end: bool = False) -> datetime | None:
    """'2026-03-01' or a full ISO time, read as UTC; None when empty. With ``end``, a day alone is
    the start of the next (an exclusive end). Raises ValueError."""
    text = text.strip()
    if not text:
        return None
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if end and len(text) == 10:
        value += timedelta(days=1)
    return value


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


def sliver_bar(n: int, largest: int, width: int) -> str:
    """``n`` against ``largest`` as a :func:`bar`; a tier with records gets at least an eighth,
    so "few" never reads as "none"."""
    if n <= 0 or largest <= 0:
        return bar(0.0, width)
    return bar(max(n / largest, 1 / (width * 8)), width)


def tier_bars(counts: list[tuple[str, int]], *, columns: int = 2, bar_width: int = 8) -> Table:
    """Each tier's label, its record count and a bar against the largest tier, laid out in
    ``columns`` side by side (two fit the detail pane at 80 columns: 48 cells)."""
    from rich.table import Table  # here, not at the top: the first frame does not need it

    largest = max((n for _, n in counts), default=0)
    grid = Table.grid(padding=(0, 1))
    for column in range(columns):
        if column:
            grid.add_column(width=1)  # a gap, so one group's track never runs into the next label
        grid.add_column(no_wrap=True)
        grid.add_column(justify="right", no_wrap=True)
        grid.add_column(no_wrap=True, min_width=bar_width)
    rows = -(-len(counts) // columns)
    for row in range(rows):
        cells: list[Any] = []
        for column in range(columns):
            index = column * rows + row  # down, then across: the registry's order reads downwards
            if column:
                cells.append("")
            if index < len(counts):
                label, n = counts[index]
                cells += [label, str(n), Text(sliver_bar(n, largest, bar_width), style="cyan")]
            else:
                cells += ["", "", ""]
        grid.add_row(*cells)
    return grid


def activity_caption(days: list[Any], episodes: list[int]) -> str:
    """What the sparkline under it shows, in one line of at most 48 characters."""
    if not days:
        return "no activity"
    peak = max(episodes, default=0)
    return f"episodes per day (UTC), {days[0]:%m-%d} to {days[-1]:%m-%d}, peak {peak}"


def audit_action(entry: Any) -> str:
    """An audit entry's action as the tables show it: marked when it is history that came in an
    import file, not something done in this store."""
    return entry.action if entry.origin == "local" else f"{entry.action} (imported)"


SHORT = {"checkpoints": "ckpts"}  # the one label too wide for the stats table to fit 80 columns


def tiers() -> tuple[tuple[str, str], ...]:
    """(header, TierCounts field) in the tier registry's order: the CLI's table and the
    inspector's tier bars name the tiers alike."""
    from store.tiers.registry import CLI_COLUMNS

    return tuple((SHORT.get(label, label), field) for label, field in CLI_COLUMNS)
