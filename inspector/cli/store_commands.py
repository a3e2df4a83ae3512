"""The store-only commands of ``memlens``: demo, stats, export, import, forget, audit, reembed,
migrate, scrub, index. None imports Textual or the inspector's UI (a test checks it), and each imports only
what it needs, so they start fast. ``demo`` hands over to :mod:`.tui` only to open the UI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..locations import foreign_scheme, in_full, is_server_url, shown
from ..printable import printable, tenant_label
from .refusal import CommandLineError


def open_existing(path: Path, *, hint: str = " (check the path)", **options):
    """Open an existing store, or another library's memory where it lives; the command line never
    creates one by accident."""
    import store
    from store.errors import ReadOnlyStoreError, StoreNotFoundError

    try:
        return store.open(path, create=False, **options)
    except StoreNotFoundError:
        if is_server_url(path):
            raise  # the server store's own message names the database, without the password
        raise StoreNotFoundError(f"{path} does not exist; nothing was created{hint}") from None
    except ReadOnlyStoreError as error:
        if error.reason is None:
            raise
        # The library's advice (read_only=True) is a Python argument; say what the commands can do.
        raise ReadOnlyStoreError(f"{path} is read-only ({error.reason}); {READERS} can still read it", error.reason) from None


READERS = "memlens stats, audit, export and forget --dry-run"


def open_for_export(path: Path, **options):
    """Open a store to export from: read-write if this process may write it (the export is then
    recorded in its audit log), else read-only, saying on stderr that it will not be."""
    from store.errors import ReadOnlyStoreError

    try:
        return open_existing(path, **options)
    except ReadOnlyStoreError as error:
        store = open_existing(path, read_only=True, **options)
        print(f"note: {path} is read-only ({error.reason}): this export is not recorded in its audit log", file=sys.stderr)
        return store


def _summary(store) -> None:
    from .stats import print_summary

    print_summary(store)


def cmd_demo(args: argparse.Namespace) -> int:
    from store.demo import build_demo_store, check_demo_target
    from store.embedding import cache_dir

    check_demo_target(args.db, force=args.force)
    print(f"building the demo store at {in_full(args.db)} …", file=sys.stderr)
    # The demo's vectors are kept with the model's export: a build after the first embeds nothing.
    store = build_demo_store(args.db, force=args.force, vector_cache=cache_dir() / "demo")
    if args.no_open:
        _summary(store)
    store.close()
    if args.no_open:
        return 0
    from .tui import run_inspector

    return run_inspector(args.db)


def cmd_stats(args: argparse.Namespace) -> int:
    with open_existing(args.db, read_only=True, embedder=None, check_model=False) as store:  # counts need no model
        _summary(store)
    return 0


def _progress(label: str):
    """A rich progress bar on stderr, fed with (done, total); a no-op when not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    task = progress.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return progress, update


def _user(args: argparse.Namespace) -> str | None:
    return None if args.anonymous else args.user


def cmd_export(args: argparse.Namespace) -> int:
    users = None if args.all else [_user(args)]
    fmt = args.format or ("json" if args.output.suffix == ".json" else "jsonl")
    with open_for_export(args.db, embedder=None, check_model=False) as store:
        progress, update = _progress("exporting")
        with progress:
            manifest = store.export_to(
                args.output,
                user_ids=users,
                fmt=fmt,
                include_embeddings=args.embeddings,
                actor=args.actor,
                progress=update,
                overwrite=args.force,
            )
    counts = ", ".join(f"{v} {k}" for k, v in manifest["counts"].items() if v)
    print(f"exported {counts or 'nothing'} to {args.output}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from store import MemoryStore

    if args.source not in (None, "mcp-memory") and args.as_user is not None:
        raise CommandLineError("--as-user imports a memlens export; another library's memory keeps each user as its own tenant")
    if args.user_at is not None and args.source not in ("langgraph-sqlite", "langgraph-postgres"):
        raise CommandLineError(
            "--user-at names a LangGraph namespace's user label; it goes with --from langgraph-sqlite or langgraph-postgres"
        )
    source = None
    if args.source is not None:  # read and checked before --create makes a store for nothing
        from store.compat.chroma_source import read_chroma
        from store.compat.knowledge_graph import read_mcp_memory
        from store.compat.langgraph_postgres import read_langgraph_postgres
        from store.compat.langgraph_sqlite import read_langgraph_sqlite
        from store.compat.loomflow_sqlite import read_loomflow_sqlite
        from store.compat.mem0_source import read_mem0

        user_at = 1 if args.user_at is None else args.user_at
        if args.source == "langgraph-sqlite":
            source = read_langgraph_sqlite(args.file, user_at=user_at)
        elif args.source == "langgraph-postgres":
            source = read_langgraph_postgres(args.file, user_at=user_at)
        elif args.source == "mcp-memory":
            source = read_mcp_memory(args.file, user_id=args.as_user)
        else:
            readers = {"chroma": read_chroma, "loomflow-sqlite": read_loomflow_sqlite, "mem0": read_mem0}
            source = readers[args.source](args.file)
    limit = {} if args.max_content_bytes is None else {"max_content_bytes": args.max_content_bytes}
    if args.create:
        opened = MemoryStore.open(args.db, check_model=False, **limit)
    else:
        opened = open_existing(args.db, hint=" (pass --create to import into a new store)", check_model=False, **limit)
    with opened as store:
        if source is not None:
            return _import_loomflow(store, source, args)
        extra = {} if args.as_user is None else {"as_user": args.as_user}
        report = store.import_(Path(args.file), actor=args.actor, **extra)

    def listed(counts: dict[str, int]) -> str:
        return ", ".join(f"{v} {k}" for k, v in counts.items() if v)

    into = ", ".join(tenant_label(t) for t in report.tenants) or "no tenant"
    print(
        f"imported {listed(report.counts) or 'nothing new'} from {args.file} into {into}"
        + (f" (re-embedded {report.reembedded})" if report.reembedded else "")
    )
    if any(report.kept_existing.values()):
        print(f"kept what the store holds, newer or different, for {listed(report.kept_existing)}")
    return 0


def _import_loomflow(store, source, args: argparse.Namespace) -> int:
    from store.compat.loomflow_sqlite import import_loomflow_sqlite

    report = import_loomflow_sqlite(store, source, actor=args.actor)
    into = ", ".join(tenant_label(t) for t in report.tenants) or "no tenant"
    kinds = {
        "chroma": "loomflow ChromaMemory",
        "langgraph-sqlite": "LangGraph SqliteStore",
        "langgraph-postgres": "LangGraph PostgresStore",
        "mem0": "mem0 Memory",
        "mcp-memory": "MCP memory server's knowledge graph",
    }
    kind = kinds.get(args.source, "loomflow SqliteMemory")
    print(f"imported {in_full(args.file)} ({kind}) into {into}; the source was not changed")
    for tier, count in report.tiers.items():
        print(f"  {tier:<9} read {count.read:>7}   written {count.written:>7}   already held {count.unchanged:>7}")
    if args.source in ("loomflow-sqlite", "chroma"):
        print(f"  tool transcript messages {report.tool_transcript_messages}, re-embedded {report.reembedded}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    if not (args.dry_run or args.yes):
        raise CommandLineError("forget erases for good; pass --dry-run to see what would go, or --yes to erase")
    user = _user(args)
    before = args.before
    in_place = foreign_scheme(args.db) in ("loomflow-sqlite", "langgraph-sqlite")  # another library's file, erased where it lives
    if args.user_at is not None and foreign_scheme(args.db) != "langgraph-sqlite":
        raise CommandLineError("--user-at names a LangGraph namespace's user label; it goes with --db langgraph-sqlite:FILE")
    if in_place:
        receipt = _forget_in_place(args, user)
    else:
        # A dry run changes nothing and records nothing: it can look at a store this process cannot write.
        with open_existing(args.db, read_only=args.dry_run, embedder=None, check_model=False) as store:
            store.require_tenant(user_id=user)  # a typo must not get a receipt for erasing nothing
            receipt = store.forget(user_id=user, session_id=args.session, before=before, dry_run=args.dry_run, actor=args.actor)
    verb = "would erase" if receipt.dry_run else "erased"
    print(
        f"{verb} for {tenant_label(user)}"
        + (f", session {printable(args.session)}" if args.session else "")
        + (f", before {before.isoformat()}" if before else "")
        + ":"
    )
    for tier, count in receipt.counts.items():
        print(f"  {tier:<20} {count}")
    if not receipt.dry_run:
        print(f"receipt digest {receipt.digest}")
        if in_place and receipt.disk_scrubbed:
            # What forget_in_place checked before it returned (it raises if a record was left).
            print(
                "after: the file read again holds none of these records, and a byte scan of it, its side files and every "
                "copy memlens made of it none of their text"
            )
        if in_place and receipt.copies_erased:
            print(f"also erased: {receipt.copies_erased} copies of the file that memlens views left behind when their process died")
        if not receipt.disk_scrubbed:
            print(f"warning: rows erased, bytes not yet scrubbed from the files: {receipt.scrub_pending_reason}", file=sys.stderr)
    return 0


def _forget_in_place(args: argparse.Namespace, user: str | None):
    """A loomflow or LangGraph file is erased from its raw records, without the view's mirror: a
    record of another user that memlens would refuse to import must not stand in the way."""
    from store.compat.langgraph_erase import langgraph_format
    from store.compat.loomflow_erase import LOOMFLOW, forget_in_place
    from store.errors import InvalidInputError

    scheme = foreign_scheme(args.db)
    if args.before is not None:
        raise InvalidInputError(
            f"{args.db}: in place, a whole user or one session of it is erased; "
            f"to erase by date, import the file into a memlens store first (memlens import --from {scheme})"
        )
    form = langgraph_format(1 if args.user_at is None else args.user_at) if scheme == "langgraph-sqlite" else LOOMFLOW
    path = Path(str(args.db).removeprefix(f"{scheme}:"))
    return forget_in_place(path, form=form, user_id=user, session_id=args.session, dry_run=args.dry_run, actor=args.actor)


def cmd_explain(args: argparse.Namespace) -> int:
    """Exit 0 when the memory came back, 1 when it did not (with the reasons)."""
    user = _user(args)
    with open_existing(args.db) as store:
        store.require_tenant(user_id=user)
        answer = store.explain(
            args.query,
            args.memory_id,
            user_id=user,
            limit=args.limit,
            session_id=args.session,
            time_range=None if args.since is None and args.until is None else (args.since, args.until),
            kind=args.kind,
            mode=args.mode,
        )
    what = printable(args.memory_id) if answer.kind is None else f"{answer.kind} {printable(args.memory_id)}"
    if answer.returned:
        print(f"{what} came back: rank {answer.rank} of {answer.limit}, score {answer.scores.score:.3f}")
    else:
        ranked = f" (ranked {answer.rank})" if answer.rank is not None else ""
        print(f"{what} did not come back in the first {answer.limit}{ranked}:")
        for cause in answer.causes:
            print(f"  {cause.cause}: {printable(cause.detail)}")
    if answer.missing_words and answer.returned:
        print(f"  it lacks the query's {', '.join(printable(w) for w in answer.missing_words)}")
    return 0 if answer.returned else 1


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one tenant to an MCP client on stdio until it leaves. stdout is the protocol's, so
    every word for a person goes to stderr."""
    import importlib.util

    from store import MemoryStore

    from ..mcp_server import serve_stdio

    if importlib.util.find_spec("mcp") is None:
        raise CommandLineError("memlens mcp needs the MCP SDK: pip install 'memlens[mcp]'")
    user = _user(args)
    traced: dict[str, Any] = {"trace": True} if args.trace else {}  # without --trace: as MEMLENS_TRACE says
    if args.create:
        opened = MemoryStore.open(args.db, **traced)
    else:
        opened = open_existing(args.db, hint=" (pass --create to start a new store)", **traced)
    with opened as store:
        tracing = ", every recall traced" if getattr(store, "tracing", False) else ""
        print(f"memlens mcp: serving {tenant_label(user)} of {shown(args.db)} on stdio{tracing}", file=sys.stderr)
        serve_stdio(store, user)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    with open_existing(args.db, read_only=True, embedder=None, check_model=False) as store:
        if args.user is None and not args.anonymous:
            entries = store.audit_log(all_tenants=True)
            if not entries:
                print("the audit log is empty: nothing has been exported, imported, erased or migrated in this store")
                return 0
        else:
            user = _user(args)
            entries = store.audit_log(user_id=user, missing_ok=False)  # a name it never knew is a typo
            if not entries:
                print(f"no audit entries for {tenant_label(user)}: nothing of it has been exported, imported, erased or migrated")
                return 0
    for e in entries:
        who, actor = tenant_label(e.user_id), printable(e.actor)
        total = sum(v for k, v in e.counts.items() if k != "vectors")
        imported = "  (imported history, not done in this store)" if e.origin == "imported" else ""
        print(f"{e.at.isoformat(timespec='seconds')}  {e.action:<7} {who:<20} by {actor:<20} {total:>7} records  {e.digest[:16]}{imported}")
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    with open_existing(args.db, embedder=args.model or "default", check_model=False) as store:
        progress, update = _progress("re-embedding")
        with progress:
            count = store.reembed(progress=update)
        print(f"re-embedded {count} items with {store.embedder.name}")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from store import MemoryStore

    # The source is only read, and its model only named (its vectors are copied as bytes).
    with open_existing(args.source, read_only=True, embedder=None, check_model=False) as source:
        with MemoryStore.open(args.target, embedder=args.model or "default") as target:
            progress, update = _progress("migrating tenants")
            with progress:
                report = target.migrate_from(
                    source, into_existing=args.into_existing, reembed=args.reembed, actor=args.actor, progress=update
                )
    listed = ", ".join(f"{v} {k}" for k, v in report.counts.items() if v) or "nothing"
    vectors = {
        "copied": "vectors copied as they were",
        "embedded": f"{report.embedded} vectors embedded by the destination's model",
        "none": "no vectors (the destination has no model)",
    }[report.vectors]
    held = len(report.tenants) - len(report.history_only)
    erased = f" and the audit history of {len(report.history_only)} erased tenant(s)" if report.history_only else ""
    print(f"migrated {held} tenant(s){erased} from {report.source} to {report.destination}: {listed}; {vectors}")
    print("verified: every tenant's counts and content digests match the source")
    return 0


def cmd_scrub(args: argparse.Namespace) -> int:
    from .stats import pending_line

    with open_existing(args.db, embedder=None, check_model=False) as store:
        done = store.scrub()
        pending = store.pending_scrub()
    if pending is not None:
        print(pending_line(pending))
    if not done:
        print("a reader (in this or another process) still holds an old snapshot; run `memlens scrub` again once it has finished")
    elif pending is None:
        print("scrubbed: deleted content is gone from the files")
    return 0 if done and pending is None else 1


def cmd_index(args: argparse.Namespace) -> int:
    with open_existing(args.db) as store:
        if args.drop:
            had = store.drop_vector_index(user_id=_user(args))
            print(
                "dropped: the tenant's searches are exact again" if had else "the tenant had no server-side vector index; nothing changed"
            )
            return 0
        report = store.build_vector_index(user_id=_user(args), sample=args.sample)
    print(
        f"indexed {report.vectors:,} episode vectors in {report.seconds:.1f} s; recall@10 against exact search: "
        f"{report.recall_at_10:.3f} over {report.queries} of the tenant's own vectors as queries"
    )
    return 0
