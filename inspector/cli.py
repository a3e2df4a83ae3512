"""The ``memlens`` command. Each sub-command imports only what it needs, so
``memlens --help`` and the store-only commands start fast."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_DEMO_PATH = Path("memlens-demo.db")


def _summary(store) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"memlens store {store.path}")
    table.add_column("tenant", no_wrap=True)
    for column in ("blocks", "episodes", "facts", "sessions", "keys", "notes", "checkpoints"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("last activity (UTC)", no_wrap=True)
    for tenant in store.tenants():
        c = tenant.counts
        table.add_row(
            tenant.user_id if tenant.user_id is not None else "(anonymous)",
            *(str(v) for v in (c.blocks, c.episodes, c.facts, c.sessions, c.kv_entries, c.scratchpad_entries, c.checkpoints)),
            tenant.last_activity.strftime("%Y-%m-%d %H:%M") if tenant.last_activity else "-",
        )
    # Piped output has no terminal width; 120 columns keeps the table whole in logs.
    Console(width=None if sys.stdout.isatty() else 120).print(table)


def cmd_demo(args: argparse.Namespace) -> int:
    from store.demo import build_demo_store

    store = build_demo_store(args.db)
    _summary(store)
    store.close()
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from store import MemoryStore

    with MemoryStore.open(args.db, read_only=True) as store:
        _summary(store)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlens", description="Look inside an AI agent's memory.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser("demo", help="build a realistic demo store and show it")
    demo.add_argument("--db", type=Path, default=DEFAULT_DEMO_PATH, help="where to build it (default: %(default)s)")
    demo.add_argument("--no-open", action="store_true", help="only build it and print a summary")
    demo.set_defaults(handler=cmd_demo)

    stats = commands.add_parser("stats", help="print the tenants of a store with their counts per tier")
    stats.add_argument("db", type=Path, help="the store file")
    stats.set_defaults(handler=cmd_stats)
    return parser


def main(argv: list[str] | None = None) -> int:
    from store.errors import MemlensError

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 0
    try:
        return args.handler(args)
    except MemlensError as error:
        print(f"memlens: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
