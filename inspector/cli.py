"""The ``memlens`` command. Each sub-command imports only what it needs, so
``memlens --help`` and the store-only commands start fast."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

DEFAULT_DEMO_PATH = Path("memlens-demo.db")


class CommandLineError(Exception):
    """A request the command line itself refuses; printed as one line, exit status 2."""


class Stopped(BaseException):
    """SIGTERM, raised where the process is so that every ``finally`` runs (an export removes
    its partial file, a write transaction rolls back). Not an Exception, so nothing swallows it."""


class Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other failure."""

    commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _open(path: Path, *, hint: str = " (check the path)", **options):
    """Open an existing store; the command line never creates one by accident."""
    from store import MemoryStore
    from store.errors import StoreNotFoundError

    try:
        return MemoryStore.open(path, create=False, **options)
    except StoreNotFoundError:
        raise StoreNotFoundError(f"{path} does not exist; nothing was created{hint}") from None


def _summary(store) -> None:
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
        print(_pending_line(pending))


def _pending_line(pending) -> str:
    return (f"scrub pending: {pending.erasures} erasure(s) since {pending.since.isoformat(timespec='seconds')} may still "
            "have bytes in the files; it runs on the next read-write open, or run `memlens scrub`")


def cmd_demo(args: argparse.Namespace) -> int:
    from store.demo import build_demo_store, check_demo_target

    check_demo_target(args.db, force=args.force)
    print(f"building the demo store at {args.db} …", file=sys.stderr)
    store = build_demo_store(args.db, force=args.force)
    if args.no_open:
        _summary(store)
    store.close()
    return 0 if args.no_open else _run_inspector(args.db)


def _run_inspector(path: Path) -> int:
    from store.errors import StoreNotFoundError

    from .app import make_app

    if not path.exists():
        raise StoreNotFoundError(f"{path} does not exist; nothing was created (`memlens demo` builds a demo store)")
    # Raised from a handler, Stopped would land inside Textual's event loop; the TUI keeps the default.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    make_app(path).run()
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    return _run_inspector(args.db)


def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args.db, read_only=True, embedder=None, check_model=False) as store:  # counts need no model
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


def _user(args: argparse.Namespace) -> str | None:
    return None if args.anonymous else args.user


def _aware(text: str):
    """An ISO date or time for argparse; UTC unless it says otherwise."""
    from datetime import datetime, timezone

    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date or time such as 2026-01-31 or 2026-01-31T09:00+02:00 ({error})") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def cmd_export(args: argparse.Namespace) -> int:
    users = None if args.all else [_user(args)]
    fmt = args.format or ("json" if args.output.suffix == ".json" else "jsonl")
    with _open(args.db, embedder=None, check_model=False) as store:
        progress, update = _progress("exporting")
        with progress:
            manifest = store.export_to(args.output, user_ids=users, fmt=fmt, include_embeddings=args.embeddings, actor=args.actor,
                                       progress=update, overwrite=args.force)
    counts = ", ".join(f"{v} {k}" for k, v in manifest["counts"].items() if v)
    print(f"exported {counts or 'nothing'} to {args.output}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from store import MemoryStore

    if args.source is not None and args.as_user is not None:
        raise CommandLineError("--as-user imports a memlens export; a loomflow database keeps each user as its own tenant")
    source = None
    if args.source is not None:  # read and checked before --create makes a store for nothing
        from store.compat.loomflow_sqlite import read_loomflow_sqlite

        source = read_loomflow_sqlite(args.file)
    if args.create:
        opened = MemoryStore.open(args.db, check_model=False)
    else:
        opened = _open(args.db, hint=" (pass --create to import into a new store)", check_model=False)
    with opened as store:
        if source is not None:
            return _import_loomflow(store, source, args)
        extra = {} if args.as_user is None else {"as_user": args.as_user}
        report = store.import_(args.file, actor=args.actor, **extra)

    def listed(counts: dict[str, int]) -> str:
        return ", ".join(f"{v} {k}" for k, v in counts.items() if v)

    into = ", ".join("(anonymous)" if t is None else t for t in report.tenants) or "no tenant"
    print(f"imported {listed(report.counts) or 'nothing new'} from {args.file} into {into}"
          + (f" (re-embedded {report.reembedded})" if report.reembedded else ""))
    if any(report.kept_existing.values()):
        print(f"kept what the store holds, newer or different, for {listed(report.kept_existing)}")
    return 0


def _import_loomflow(store, source, args: argparse.Namespace) -> int:
    from store.compat.loomflow_sqlite import import_loomflow_sqlite

    report = import_loomflow_sqlite(store, source, actor=args.actor)
    into = ", ".join("(anonymous)" if t is None else t for t in report.tenants) or "no tenant"
    print(f"imported {args.file} (loomflow SqliteMemory) into {into}; the source was not changed")
    for tier, count in report.tiers.items():
        print(f"  {tier:<9} read {count.read:>7}   written {count.written:>7}   already held {count.unchanged:>7}")
    print(f"  tool transcript messages {report.tool_transcript_messages}, re-embedded {report.reembedded}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    if not (args.dry_run or args.yes):
        raise CommandLineError("forget erases for good; pass --dry-run to see what would go, or --yes to erase")
    user = _user(args)
    before = args.before
    with _open(args.db, embedder=None, check_model=False) as store:
        store.require_tenant(user_id=user)  # a typo must not get a receipt for erasing nothing
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
    with _open(args.db, read_only=True, embedder=None, check_model=False) as store:
        if args.user is None and not args.anonymous:
            entries = store.audit_log(all_tenants=True)
        else:
            entries = store.audit_log(user_id=_user(args))
    for e in entries:
        who = "(anonymous)" if e.user_id is None else e.user_id
        total = sum(v for k, v in e.counts.items() if k != "vectors")
        imported = "  (imported history, not done in this store)" if e.origin == "imported" else ""
        print(f"{e.at.isoformat(timespec='seconds')}  {e.action:<7} {who:<20} by {e.actor:<20} {total:>7} records  {e.digest[:16]}{imported}")
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    with _open(args.db, embedder=args.model or "default", check_model=False) as store:
        progress, update = _progress("re-embedding")
        with progress:
            count = store.reembed(progress=update)
        print(f"re-embedded {count} items with {store.embedder.name}")
    return 0


def cmd_scrub(args: argparse.Namespace) -> int:
    with _open(args.db, embedder=None, check_model=False) as store:
        done = store.scrub()
        pending = store.pending_scrub()
    if pending is not None:
        print(_pending_line(pending))
    if not done:
        print("a reader (in this or another process) still holds an old snapshot; run `memlens scrub` again once it has finished")
    elif pending is None:
        print("scrubbed: deleted content is gone from the files")
    return 0 if done and pending is None else 1


def _tenant_options(parser: argparse.ArgumentParser, *, required: bool, every: str | None = None) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--user", help="the tenant (user_id)")
    group.add_argument("--anonymous", action="store_true", help="the anonymous bucket instead of a named tenant")
    if every:
        group.add_argument("--all", action="store_true", help=every)


def build_parser() -> Parser:
    parser = Parser(prog="memlens", description="Look inside an AI agent's memory.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = commands.choices

    opener = commands.add_parser("open", help="open a store in the inspector (same as `memlens PATH`)")
    opener.add_argument("db", type=Path, help="the store file")
    opener.set_defaults(handler=cmd_open)

    demo = commands.add_parser("demo", help="build a realistic demo store and open it in the inspector")
    demo.add_argument("--db", type=Path, default=DEFAULT_DEMO_PATH, help="where to build it (default: %(default)s)")
    demo.add_argument("--no-open", action="store_true", help="only build it and print a summary")
    demo.add_argument("--force", action="store_true", help="replace the file at --db even if it is not a demo store")
    demo.set_defaults(handler=cmd_demo)

    stats = commands.add_parser("stats", help="print the tenants of a store with their counts per tier")
    stats.add_argument("db", type=Path, help="the store file")
    stats.set_defaults(handler=cmd_stats)

    export = commands.add_parser("export", help="export a tenant (or every tenant) to JSON or JSONL")
    export.add_argument("--db", type=Path, required=True, help="the store file")
    _tenant_options(export, required=True, every="every tenant")
    export.add_argument("-o", "--output", type=Path, required=True, help="file to write (.json: one document; otherwise JSONL)")
    export.add_argument("--force", action="store_true", help="replace the output file if it exists (never the store itself)")
    export.add_argument("--format", choices=["json", "jsonl"], help="override the format the file name implies")
    export.add_argument("--embeddings", action="store_true", help="include the vectors")
    export.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")
    export.set_defaults(handler=cmd_export)

    imp = commands.add_parser("import", help="import an export file (atomic; re-importing changes nothing)")
    imp.add_argument("--db", type=Path, required=True, help="the store file")
    imp.add_argument("--create", action="store_true", help="create the store if it does not exist")
    imp.add_argument("file", type=Path, help="a file written by `memlens export` (or the database --from names)")
    imp.add_argument("--from", dest="source", choices=["loomflow-sqlite"],
                     help="read another library's memory instead: loomflow-sqlite is a loomflow SqliteMemory database (never changed)")
    imp.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")
    imp.add_argument("--as-user", metavar="NAME", help="import a one-tenant export under this user id instead of its own")
    imp.set_defaults(handler=cmd_import)

    forget = commands.add_parser("forget", help="erase a tenant, a session, or what is older than a date")
    forget.add_argument("--db", type=Path, required=True, help="the store file")
    _tenant_options(forget, required=True)
    forget.add_argument("--session", help="only this session")
    forget.add_argument("--before", type=_aware, help="only what is older than this ISO date (UTC unless it says otherwise)")
    mode = forget.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the counts, erase nothing")
    mode.add_argument("--yes", action="store_true", help="erase")
    forget.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")
    forget.set_defaults(handler=cmd_forget)

    audit = commands.add_parser("audit", help="show the audit log (every tenant unless --user/--anonymous)")
    audit.add_argument("--db", type=Path, required=True, help="the store file")
    _tenant_options(audit, required=False)
    audit.set_defaults(handler=cmd_audit)

    reembed = commands.add_parser("reembed", help="re-embed every episode and fact with the current model")
    reembed.add_argument("db", type=Path, help="the store file")
    reembed.add_argument("--model", help="a local sentence-transformers model directory (default: the packaged all-MiniLM-L6-v2)")
    reembed.set_defaults(handler=cmd_reembed)

    scrub = commands.add_parser("scrub", help="rewrite indexes and truncate the WAL so deleted content leaves the files")
    scrub.add_argument("db", type=Path, help="the store file")
    scrub.set_defaults(handler=cmd_scrub)
    return parser


def _stop(signum: int, _frame) -> None:
    raise Stopped(signum)


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 done, 1 scrub must be retried or an unexpected error, 2 refused or failed
    (a message says why), 128 + n stopped by signal n."""
    from store.errors import MemlensError

    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv and not argv[0].startswith("-") and argv[0] not in parser.commands:
        argv = ["open", *argv]  # `memlens PATH` opens PATH
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 0
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        return args.handler(args)
    except (MemlensError, CommandLineError) as error:
        print(f"memlens: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        print(f"memlens: {error.strerror or error}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memlens: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Stopped:
        print("memlens: stopped by SIGTERM", file=sys.stderr)
        return 128 + signal.SIGTERM
    except Exception as error:
        if os.environ.get("MEMLENS_DEBUG"):
            raise
        print(f"memlens: unexpected error: {type(error).__name__}: {error} (MEMLENS_DEBUG=1 shows where)", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
