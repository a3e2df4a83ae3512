"""What `memlens stats` (and `memlens demo --no-open`) prints: the tenants with their counts
per tier, the store's tier sizes as bars, and any pending scrub. Fits 80 columns; the bars are
block characters, so they read the same without colour."""

from __future__ import annotations

import sys

from ..formatting import tiers

BAR_WIDTH = 40  # with the labels, 64 columns: inside 80


def summary(store):
    """The renderables: the per-tenant counts table and the tier-size bars."""
    from rich import box
    from rich.bar import Bar
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ..printable import tenant_label

    tenants, columns = store.tenants(), tiers()
    table = Table(title=f"memlens store {store.path}", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, title_justify="left")
    table.add_column("tenant", overflow="fold", min_width=11)
    for header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("last active", no_wrap=True)  # the day (UTC): a time would not fit 80 columns
    for tenant in tenants:
        table.add_row(
            Text(tenant_label(tenant.user_id)),  # a Text: a name is not markup (`[/]` crashed the table)
            *(str(getattr(tenant.counts, field)) for _, field in columns),
            tenant.last_activity.strftime("%Y-%m-%d") if tenant.last_activity else "-",
        )
    totals = {header: sum(getattr(t.counts, field) for t in tenants) for header, field in columns}
    largest = max(totals.values(), default=0) or 1
    bars = Table(title="tier sizes, all tenants", box=None, show_header=False, title_justify="left", pad_edge=False)
    bars.add_column("tier", no_wrap=True)
    bars.add_column("records", justify="right", no_wrap=True)
    bars.add_column("bar", width=BAR_WIDTH, no_wrap=True)
    for header, total in totals.items():
        # A tier with records gets at least a sliver, so "few" never reads as "none".
        end = max(total / largest * BAR_WIDTH, 0.5 if total else 0)
        bars.add_row(header, str(total), Bar(BAR_WIDTH, 0, end, color="cyan"))
    return Group(table, bars)


def print_summary(store) -> None:
    from rich.console import Console

    # Piped output has no terminal width: 80 columns, what the layout is made for.
    Console(width=None if sys.stdout.isatty() else 80).print(summary(store))
    pending = store.pending_scrub()
    if pending is not None:
        print(pending_line(pending))


def pending_line(pending) -> str:
    return (
        f"scrub pending: {pending.erasures} erasure(s) since {pending.since.isoformat(timespec='seconds')} may still "
        "have bytes in the files; it runs on the next read-write open, or run `memlens scrub`"
    )
