"""The ``memlens`` command line's flags: each sub-command's arguments, and the types they parse.
Parsing only: :mod:`.commands` declares the commands (name, help, these arguments, handler), whose
handlers are in :mod:`.store_commands` (no UI) and :mod:`.tui` (the inspector)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from ..locations import foreign_scheme, is_server_url
from ..serving import DEFAULT_MAX_SESSIONS

DEFAULT_DEMO_PATH = Path("memlens-demo.db")


class Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other failure; ``commands`` names the sub-commands
    (kept here as they are added, so nothing reads argparse's private state)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def aware(text: str) -> datetime:
    """An ISO date or time for argparse; UTC unless it says otherwise."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO date or time such as 2026-01-31 or 2026-01-31T09:00+02:00 ({error})"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def port(text: str) -> int:
    """A TCP port number for argparse."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def positive_int(text: str) -> int:
    """A whole number of at least 1, for argparse."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _tenant_options(parser: argparse.ArgumentParser, *, required: bool, every: str | None = None) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--user", help="the tenant (user_id)")
    group.add_argument("--anonymous", action="store_true", help="the anonymous bucket instead of a named tenant")
    if every:
        group.add_argument("--all", action="store_true", help=every)


def _actor(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--actor", default="cli", help="who asks, for the audit log (default: %(default)s)")


def location(value: str) -> Path | str:
    """A store's location: a file path, or a server URL kept as typed (``postgresql://...``; a
    Path would fold its ``//``)."""
    return value if is_server_url(value) or foreign_scheme(value) else Path(value)


def installed_version() -> str:
    """The version the installed distribution's metadata records (one place: pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memlens")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class VersionAction(argparse.Action):
    """``--version``: the metadata is read only when asked (every start builds this parser)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help", "")))

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"memlens {installed_version()}")
        parser.exit()


# Each sub-command's arguments, by the name of the command (``commands.py`` declares the commands).


def demo_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument(
        "--db",
        type=location,
        default=DEFAULT_DEMO_PATH,
        help="where to build it: a file, or a postgresql:// URL of a database with no store (default: %(default)s)",
    )
    demo.add_argument("--no-open", action="store_true", help="only build it and print a summary")
    demo.add_argument("--force", action="store_true", help="replace the file at --db even if it is not a demo store (files only)")


def serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("db", type=location, nargs="?", default=DEFAULT_DEMO_PATH, help="the store (default: %(default)s)")
    serve.add_argument("--port", type=port, default=8000, help="the port to listen on (default: %(default)s)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: %(default)s, this machine only; another address needs --expose)",
    )
    serve.add_argument(
        "--expose",
        action="store_true",
        help="allow a --host other than this machine's loopback: whoever reaches the page reads the store and can erase from it",
    )
    serve.add_argument(
        "--max-sessions",
        type=positive_int,
        default=DEFAULT_MAX_SESSIONS,
        help="how many pages may run an inspector at once, each a process of its own (default: %(default)s)",
    )


def store_argument(parser: argparse.ArgumentParser) -> None:
    """The one argument of ``open``, ``stats`` and ``scrub``: the store."""
    parser.add_argument("db", type=location, help="the store: a file, or a postgresql:// URL")


def export_arguments(export: argparse.ArgumentParser) -> None:
    export.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(export, required=True, every="every tenant")
    export.add_argument("-o", "--output", type=Path, required=True, help="file to write (.json: one document; otherwise JSONL)")
    export.add_argument("--force", action="store_true", help="replace the output file if it exists (never the store itself)")
    export.add_argument("--format", choices=["json", "jsonl"], help="override the format the file name implies")
    export.add_argument("--embeddings", action="store_true", help="include the vectors")
    _actor(export)


def _user_at(parser: argparse.ArgumentParser, source: str) -> None:
    parser.add_argument(
        "--user-at",
        type=label_position,
        metavar="N",
        help=f"with {source}: the namespace label that names an item's user (default 1, LangGraph's "
        '("memories", user_id); 0 for (user_id, ...))',
    )


def label_position(text: str) -> int:
    """A namespace label's position (0 or more), for argparse."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a label position (a whole number, 0 or more)")
    return int(text)


def forget_arguments(forget: argparse.ArgumentParser) -> None:
    forget.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(forget, required=True)
    forget.add_argument("--session", help="only this session")
    forget.add_argument("--before", type=aware, help="only what is older than this ISO date (UTC unless it says otherwise)")
    _user_at(forget, "--db langgraph-sqlite:FILE")
    mode = forget.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the counts, erase nothing")
    mode.add_argument("--yes", action="store_true", help="erase")
    _actor(forget)


def audit_arguments(audit: argparse.ArgumentParser) -> None:
    audit.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(audit, required=False)


def reembed_arguments(reembed: argparse.ArgumentParser) -> None:
    store_argument(reembed)
    reembed.add_argument("--model", help="a local sentence-transformers model directory (default: the packaged all-MiniLM-L6-v2)")


def migrate_arguments(migrate: argparse.ArgumentParser) -> None:
    migrate.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="URL_OR_PATH",
        help="the store to copy (only read): a file, sqlite:///PATH or postgresql+psycopg://...",
    )
    migrate.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="URL_OR_PATH",
        help="where to copy it (created if missing; must hold no tenant unless --into-existing)",
    )
    migrate.add_argument(
        "--into-existing",
        action="store_true",
        help="add the source's tenants to a store that holds others (a tenant on both sides is still refused)",
    )
    migrate.add_argument(
        "--reembed", action="store_true", help="embed everything again with the destination's model instead of refusing a model change"
    )
    migrate.add_argument("--model", help="the destination's model directory (default: the packaged all-MiniLM-L6-v2)")
    _actor(migrate)


def index_arguments(index: argparse.ArgumentParser) -> None:
    index.add_argument("--db", type=location, required=True, help="the store: a postgresql:// URL")
    _tenant_options(index, required=True)
    index.add_argument("--sample", type=int, default=100, help="queries to measure recall@10 with (default: %(default)s)")
    index.add_argument("--drop", action="store_true", help="drop the index instead: the tenant's searches are exact again")


def explain_arguments(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(explain, required=True)
    explain.add_argument("query", help="the query, as the agent (or you) recalled with it")
    explain.add_argument("--id", dest="memory_id", required=True, help="the episode or fact that should have come back")
    explain.add_argument("--limit", type=positive_int, default=5, help="how many results the recall asked for (default: %(default)s)")
    explain.add_argument("--session", help="the session the recall was limited to")
    explain.add_argument("--since", type=aware, help="the start of the recall's time range (ISO date)")
    explain.add_argument("--until", type=aware, help="the end of the recall's time range (ISO date)")
    explain.add_argument(
        "--kind", choices=["episodic", "facts", "all"], default="episodic", help="what the recall searched (default: %(default)s)"
    )
    explain.add_argument("--mode", choices=["hybrid", "keyword", "vector"], default="hybrid", help="how it ranked (default: %(default)s)")


def mcp_arguments(mcp: argparse.ArgumentParser) -> None:
    mcp.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(mcp, required=True)
    mcp.add_argument("--create", action="store_true", help="create the store if it does not exist")
    mcp.add_argument(
        "--trace", action="store_true", help="keep every recall the client makes (without it: as MEMLENS_TRACE says; see the tracing docs)"
    )


def import_arguments(imp: argparse.ArgumentParser) -> None:
    """`memlens import`'s flags; a new source format adds its flag here and its branch in
    :func:`.store_commands.cmd_import`."""
    imp.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    imp.add_argument("--create", action="store_true", help="create the store if it does not exist")
    imp.add_argument("file", help="a file written by `memlens export` (or the database, directory or URL --from names)")
    imp.add_argument(
        "--from",
        dest="source",
        choices=["loomflow-sqlite", "langgraph-sqlite", "langgraph-postgres", "chroma", "mem0", "mcp-memory"],
        help="read another library's memory instead (never changed): loomflow-sqlite is a loomflow SqliteMemory "
        "database, langgraph-sqlite a LangGraph SqliteStore file, langgraph-postgres the postgresql:// URL of a "
        "LangGraph PostgresStore database, chroma a loomflow ChromaMemory directory, mem0 the "
        "JSON config a mem0 agent builds its Memory from (its local Qdrant folder and history database are read), "
        "mcp-memory the JSONL file of the reference MCP memory server (into --as-user's tenant, or the anonymous one)",
    )
    _user_at(imp, "--from langgraph-sqlite or langgraph-postgres")
    _actor(imp)
    imp.add_argument(
        "--as-user", metavar="NAME", help="import a one-tenant export (or an mcp-memory file) under this user id instead of its own"
    )
    imp.add_argument(
        "--max-content-bytes",
        type=positive_int,
        metavar="N",
        help="the largest text a record may hold, in bytes (default: the store's, 1 MiB)",
    )
