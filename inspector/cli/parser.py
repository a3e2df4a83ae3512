"""The ``memlens`` command line: every sub-command, its flags and its help. Parsing only: the
commands themselves are in :mod:`.store_commands` (no UI) and :mod:`.tui` (the inspector)."""

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


COMMANDS = ("open", "demo", "serve", "stats", "export", "import", "forget", "audit", "reembed", "migrate", "scrub", "index")


class _NotParsed:
    """Stands in for the sub-commands a command line does not name: their flags are not built.
    Building all of them took 7-8 ms of every start, on the way to the inspector's first frame."""

    def add_argument(self, *args, **kwargs) -> None:
        return None

    def add_mutually_exclusive_group(self, *args, **kwargs) -> _NotParsed:
        return self


def installed_version() -> str:
    """The version the installed distribution's metadata records (one place: pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memlens")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: the metadata is read only when asked (every start builds this parser)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help", "")))

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"memlens {installed_version()}")
        parser.exit()


def build_parser(only: str | None = None) -> Parser:
    """The whole command line; with ``only`` (one of :data:`COMMANDS`), just that sub-command,
    which parses its arguments the same way."""
    parser = Parser(prog="memlens", description="Look inside an AI agent's memory.")
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _NotParsed()  # type: ignore[return-value]
        sub = subparsers.add_parser(name, help=help)
        parser.commands[name] = sub
        return sub

    opener = command("open", "open a store in the inspector (same as `memlens PATH`)")
    opener.add_argument("db", type=location, help="the store: a file, or a postgresql:// URL")

    demo = command("demo", "build a realistic demo store and open it in the inspector")
    demo.add_argument("--db", type=Path, default=DEFAULT_DEMO_PATH, help="where to build it (default: %(default)s)")
    demo.add_argument("--no-open", action="store_true", help="only build it and print a summary")
    demo.add_argument("--force", action="store_true", help="replace the file at --db even if it is not a demo store")

    serve = command("serve", "serve the inspector to a web browser (for a demo or a shared screen)")
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

    stats = command("stats", "print the tenants of a store with their counts per tier")
    stats.add_argument("db", type=location, help="the store: a file, or a postgresql:// URL")

    export = command("export", "export a tenant (or every tenant) to JSON or JSONL")
    export.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(export, required=True, every="every tenant")
    export.add_argument("-o", "--output", type=Path, required=True, help="file to write (.json: one document; otherwise JSONL)")
    export.add_argument("--force", action="store_true", help="replace the output file if it exists (never the store itself)")
    export.add_argument("--format", choices=["json", "jsonl"], help="override the format the file name implies")
    export.add_argument("--embeddings", action="store_true", help="include the vectors")
    _actor(export)

    add_import_options(command("import", "import an export file (atomic; re-importing changes nothing)"))

    forget = command("forget", "erase a tenant, a session, or what is older than a date")
    forget.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(forget, required=True)
    forget.add_argument("--session", help="only this session")
    forget.add_argument("--before", type=aware, help="only what is older than this ISO date (UTC unless it says otherwise)")
    mode = forget.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the counts, erase nothing")
    mode.add_argument("--yes", action="store_true", help="erase")
    _actor(forget)

    audit = command("audit", "show the audit log (every tenant unless --user/--anonymous)")
    audit.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    _tenant_options(audit, required=False)

    reembed = command("reembed", "re-embed every episode and fact with the current model")
    reembed.add_argument("db", type=location, help="the store: a file, or a postgresql:// URL")
    reembed.add_argument("--model", help="a local sentence-transformers model directory (default: the packaged all-MiniLM-L6-v2)")

    migrate = command("migrate", "copy a whole store to another (SQLite file <-> PostgreSQL), verified, in one transaction")
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

    scrub = command("scrub", "rewrite indexes and truncate the WAL so deleted content leaves the files")
    scrub.add_argument("db", type=location, help="the store: a file, or a postgresql:// URL")

    index = command("index", "PostgreSQL: build a tenant's server-side vector index (pgvector HNSW) and report its recall")
    index.add_argument("--db", type=location, required=True, help="the store: a postgresql:// URL")
    _tenant_options(index, required=True)
    index.add_argument("--sample", type=int, default=100, help="queries to measure recall@10 with (default: %(default)s)")
    index.add_argument("--drop", action="store_true", help="drop the index instead: the tenant's searches are exact again")
    return parser


def add_import_options(imp: argparse.ArgumentParser) -> None:
    """`memlens import`'s flags; a new source format adds its flag here and its branch in
    :func:`.store_commands.cmd_import`."""
    imp.add_argument("--db", type=location, required=True, help="the store: a file, or a postgresql:// URL")
    imp.add_argument("--create", action="store_true", help="create the store if it does not exist")
    imp.add_argument("file", type=Path, help="a file written by `memlens export` (or the database or directory --from names)")
    imp.add_argument(
        "--from",
        dest="source",
        choices=["loomflow-sqlite", "chroma"],
        help="read another library's memory instead (never changed): loomflow-sqlite is a loomflow SqliteMemory "
        "database, chroma a loomflow ChromaMemory directory",
    )
    _actor(imp)
    imp.add_argument("--as-user", metavar="NAME", help="import a one-tenant export under this user id instead of its own")
    imp.add_argument(
        "--max-content-bytes",
        type=positive_int,
        metavar="N",
        help="the largest text a record may hold, in bytes (default: the store's, 1 MiB)",
    )
