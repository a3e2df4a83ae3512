"""Every ``memlens`` sub-command, declared once: its name, its help, its arguments and its handler.
The parser, the dispatch and the list of command names are all built from :data:`DECLARED`; a new
command is one line here, its arguments in :mod:`.parser` and its handler."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from . import parser as flags
from . import store_commands, tui


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]


DECLARED: tuple[Command, ...] = (
    Command("open", "open a store in the inspector (same as `memlens PATH`)", flags.store_argument, tui.cmd_open),
    Command("demo", "build a realistic demo store and open it in the inspector", flags.demo_arguments, store_commands.cmd_demo),
    Command("serve", "serve the inspector to a web browser (for a demo or a shared screen)", flags.serve_arguments, tui.cmd_serve),
    Command("stats", "print the tenants of a store with their counts per tier", flags.store_argument, store_commands.cmd_stats),
    Command("export", "export a tenant (or every tenant) to JSON or JSONL", flags.export_arguments, store_commands.cmd_export),
    Command("import", "import an export file (atomic; re-importing changes nothing)", flags.import_arguments, store_commands.cmd_import),
    Command("forget", "erase a tenant, a session, or what is older than a date", flags.forget_arguments, store_commands.cmd_forget),
    Command(
        "explain",
        "say where a memory ranks for a recall and why it did not come back",
        flags.explain_arguments,
        store_commands.cmd_explain,
    ),
    Command(
        "mcp",
        "serve one tenant's memory to an MCP agent on stdio (the reference memory server's tools, and memlens's)",
        flags.mcp_arguments,
        store_commands.cmd_mcp,
    ),
    Command("audit", "show the audit log (every tenant unless --user/--anonymous)", flags.audit_arguments, store_commands.cmd_audit),
    Command("reembed", "re-embed every episode and fact with the current model", flags.reembed_arguments, store_commands.cmd_reembed),
    Command(
        "migrate",
        "copy a whole store to another (SQLite file <-> PostgreSQL), verified, in one transaction",
        flags.migrate_arguments,
        store_commands.cmd_migrate,
    ),
    Command(
        "scrub", "rewrite indexes and truncate the WAL so deleted content leaves the files", flags.store_argument, store_commands.cmd_scrub
    ),
    Command(
        "index",
        "PostgreSQL: build a tenant's server-side vector index (pgvector HNSW) and report its recall",
        flags.index_arguments,
        store_commands.cmd_index,
    ),
)
BY_NAME = {command.name: command for command in DECLARED}
NAMES = tuple(BY_NAME)


def build_parser(only: str | None = None) -> flags.Parser:
    """The whole command line; with ``only`` (one of :data:`NAMES`), just that sub-command, which
    parses its arguments the same way: building every sub-command's flags took 7-8 ms of every
    start, on the way to the inspector's first frame."""
    parser = flags.Parser(prog="memlens", description="Look inside an AI agent's memory.")
    parser.add_argument("--version", action=flags.VersionAction, help="print the installed version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in DECLARED:
        if only is None or command.name == only:
            sub = subparsers.add_parser(command.name, help=command.help)
            command.arguments(sub)
            parser.commands[command.name] = sub
    return parser
