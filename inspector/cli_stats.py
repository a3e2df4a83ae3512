"""What `memlens stats` (and `memlens demo --no-open`) prints: the tenants with their counts
per tier, and any pending scrub."""

from __future__ import annotations

import sys


def print_summary(store) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"memlens store {store.path}")
    table.add_column("tenant", no_wrap=True)
    from store.tiers.registry import CLI_COLUMNS

    for label, _ in CLI_COLUMNS:
        table.add_column(label, justify="right", no_wrap=True)
    table.add_column("last activity (UTC)", no_wrap=True)
    for tenant in store.tenants():
        c = tenant.counts
        table.add_row(
            tenant.user_id if tenant.user_id is not None else "(anonymous)",
            *(str(getattr(c, name)) for _, name in CLI_COLUMNS),
            tenant.last_activity.strftime("%Y-%m-%d %H:%M") if tenant.last_activity else "-",
        )
    # Piped output has no terminal width; 120 columns keeps the table whole in logs.
    Console(width=None if sys.stdout.isatty() else 120).print(table)
    pending = store.pending_scrub()
    if pending is not None:
        print(pending_line(pending))


def pending_line(pending) -> str:
    return (f"scrub pending: {pending.erasures} erasure(s) since {pending.since.isoformat(timespec='seconds')} may still "
            "have bytes in the files; it runs on the next read-write open, or run `memlens scrub`")
