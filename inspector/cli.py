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
    pending = store.pending_scrub()
    if pending is not None:
        print(_pending_line(pending))


def _pending_line(pending) -> str:
    return (f"scrub pending: {pending.erasures} erasure(s) since {pending.since.isoformat(timespec='seconds')} may still "
            "have bytes in the files; it runs on the next read-write open, or run `memlens scrub`")


def cmd_demo(args: argparse.Namespace) -> int:
    from store.demo import build_demo_store

    print(f"building the demo store at {args.db} …", file=sys.stderr)
    store = build_demo_store(args.db)
    if args.no_open:
        _summary(store)
    store.close()
    return 0 if args.no_open else _run_inspector(args.db)


def _run_inspector(path: Path) -> int:
    from .app import make_app

    if not path.exists():
        raise SystemExit(f"memlens: {path} does not exist (run `memlens demo` to build a demo store)")
    make_app(path).run()
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    return _run_inspector(args.db)


def cmd_stats(args: argparse.Namespace) -> int:
    from store import MemoryStore

    with MemoryStore.open(args.db, read_only=True) as store:
        _summary(store)
    return 0


def _progress(label: str):
    """A rich progress bar on stderr, fed with (done, total); a no-op when not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    progress = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                        transient=True, disable=not sys.stderr.isatty())
    task = progress.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return progress, update


def _user(value: str | None, anonymous: bool) -> str | None:
    if anonymous:
        return None
    if value is None:
        raise SystemExit("memlens: name a tenant with --user USER (or --anonymous for the anonymous bucket)")
    return value


def _aware(text: str):
    from datetime import datetime, timezone

    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def cmd_export(args: argparse.Namespace) -> int:
    from store import MemoryStore

    users = None if args.all else [_user(args.user, args.anonymous)]
    fmt = args.format or ("json" if args.output.suffix == ".json" else "jsonl")
    with MemoryStore.open(args.db, embedder=None, check_model=False) as store:
        progress, update = _progress("exporting")
        with progress:
            manifest = store.export_to(args.output, user_ids=users, fmt=fmt, include_embeddings=args.embeddings, actor=args.actor, progress=update)
    counts = ", ".join(f"{v} {k}" for k, v in manifest["counts"].items() if v)
    print(f"exported {counts or 'nothing'} to {args.output}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from store import MemoryStore

    with MemoryStore.open(args.db, check_model=False) as store:
        report = store.import_(args.file, actor=args.actor)
    counts = ", ".join(f"{v} {k}" for k, v in report.counts.items() if v)
    print(f"imported {counts or 'nothing new'} from {args.file}" + (f" (re-embedded {report.reembedded})" if report.reembedded else ""))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from store import MemoryStore

    if not (args.dry_run or args.yes):
        raise SystemExit("memlens: forget erases for good; pass --dry-run to see what would go, or --yes to erase")
    user = _user(args.user, args.anonymous)
    before = _aware(args.before) if args.before else None
    with MemoryStore.open(args.db, embedder=None, check_model=False) as store:
        receipt = store.forget(user_id=user, session_id=args.session, before=before, dry_run=args.dry_run, actor=args.actor)
    who = "(anonymous)" if user is None else user
    verb = "would erase" if receipt.dry_run else "erased"
    print(f"{verb} for {who}" + (f", session {args.session}" if args.session else "") + (f", before {before.isoformat()}" if before else "") + ":")
    for tier, count in receipt.counts.items():
        print(f"  {tier:<20} {count}")
    if not receipt.dry_run:
        print(f"receipt digest {receipt.digest}")
        if not receipt.disk_scrubbed:
            print(f"warning: rows erased, bytes not yet scrubbed from the files: {receipt.scrub_pending_reason}", file=sys.stderr)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from store import MemoryStore

    with MemoryStore.open(args.db, read_only=True, embedder=None, check_model=False) as store:
        if args.user is None and not args.anonymous:
            entries = store.audit_log(all_tenants=True)
        else:
            entries = store.audit_log(user_id=_user(args.user, args.anonymous))
    for e in entries:
        who = "(anonymous)" if e.user_id is None else e.user_id
        total = sum(v for k, v in e.counts.items() if k != "vectors")
        print(f"{e.at.isoformat(timespec='seconds')}  {e.action:<7} {who:<20} by {e.actor:<20} {total:>7} records  {e.digest[:16]}")
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    from store import MemoryStore

    with MemoryStore.open(args.db, embedder=args.model or "default", check_model=False) as store:
        progress, update = _progress("re-embedding")
        with progress:
            count = store.reembed(progress=update)
        print(f"re-embedded {count} items with {store.embedder.name}")
    return 0


def cmd_scrub(args: argparse.Namespace) -> int:
    from store import MemoryStore

    with MemoryStore.open(args.db, embedder=None, check_model=False) as store:
        done = store.scrub()
        pending = store.pending_scrub()
    if pending is not None:
        print(_pending_line(pending))
    if not done:
        print("a reader (in this or another process) still holds an old snapshot; run `memlens scrub` again once it has finished")
    elif pending is None:
        print("scrubbed: deleted content is gone from the files")
    return 0 if done and pending is None else 1


def _tenant_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", help="the tenant (user_id)")
    parser.add_argument("--anonymous", action="store_true", help="the anonymous bucket instead of a named tenant")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlens", description="Look inside an AI agent's memory.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    opener = commands.add_parser("open", help="open a store in the inspector (same as `memlens PATH`)")
    opener.add_argument("db", type=Path, help="the store file")
    opener.set_defaults(handler=cmd_open)

    demo = commands.add_parser("demo", help="build a realistic demo store and open it in the inspector")
    demo.add_argument("--db", type=Path, default=DEFAULT_DEMO_PATH, help="where to build it (default: %(default)s)")
    demo.add_argument("--no-open", action="store_true", help="only build it and print a summary")
    demo.set_defaults(handler=cmd_demo)

    stats = commands.add_parser("stats", help="print the tenants of a store with their counts per tier")
    stats.add_argument("db", type=Path, help="the store file")
    stats.set_defaults(handler=cmd_stats)

    export = commands.add_parser("export", help="export a tenant (or every tenant) to JSON or JSONL")
    export.add_argument("--db", type=Path, required=True, help="the store file")
    _tenant_options(export)
    export.add_argument("--all", action="store_true", help="every tenant")
    export.add_argument("-o", "--output", type=Path, required=True, help="file to write (.json: one document; otherwise JSONL)")
    export.add_argument("--format", choices=["json", "jsonl"], help="override the format the file name implies")
    export.add_argument("--embeddings", action="store_true", help="include the vectors")
    export.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")
    export.set_defaults(handler=cmd_export)

    imp = commands.add_parser("import", help="import an export file (atomic; re-importing changes nothing)")
    imp.add_argument("--db", type=Path, required=True, help="the store file (created if missing)")
    imp.add_argument("file", type=Path, help="a file written by `memlens export`")
    imp.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")
    imp.set_defaults(handler=cmd_import)

    forget = commands.add_parser("forget", help="erase a tenant, a session, or what is older than a date")
    forget.add_argument("--db", type=Path, required=True, help="the store file")
    _tenant_options(forget)
    forget.add_argument("--session", help="only this session")
    forget.add_argument("--before", help="only what is older than this ISO date (UTC unless it says otherwise)")
    mode = forget.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the counts, erase nothing")
    mode.add_argument("--yes", action="store_true", help="erase")
    forget.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")
    forget.set_defaults(handler=cmd_forget)

    audit = commands.add_parser("audit", help="show the audit log (every tenant unless --user/--anonymous)")
    audit.add_argument("--db", type=Path, required=True, help="the store file")
    _tenant_options(audit)
    audit.set_defaults(handler=cmd_audit)

    reembed = commands.add_parser("reembed", help="re-embed every episode and fact with the current model")
    reembed.add_argument("db", type=Path, help="the store file")
    reembed.add_argument("--model", help="a local sentence-transformers model directory (default: the packaged all-MiniLM-L6-v2)")
    reembed.set_defaults(handler=cmd_reembed)

    scrub = commands.add_parser("scrub", help="rewrite indexes and truncate the WAL so deleted content leaves the files")
    scrub.add_argument("db", type=Path, help="the store file")
    scrub.set_defaults(handler=cmd_scrub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from store.errors import MemlensError

    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv and not argv[0].startswith("-") and argv[0] not in parser._subparsers._group_actions[0].choices:
        argv = ["open", *argv]  # `memlens PATH` opens PATH
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
