"""The command line's layout: store-only commands never import Textual or the inspector's UI,
`memlens open` imports it only when it runs, and nothing reads argparse's private state."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder

ROOT = Path(__file__).resolve().parent.parent
CLI_MODULES = sorted((ROOT / "inspector" / "cli").glob("*.py"))
UI = (
    "textual",
    "inspector.app",
    "inspector.screens.dialogs",
    "inspector.widgets.views",
    "inspector.actions",
    "inspector.widgets.tenant_views",
    "inspector.workers",
    "inspector.messages",
    "inspector.widgets.detail",
    "inspector.commands",
    "inspector.opening",
    "inspector.widgets.footer",
)

# Runs one command in a fresh interpreter, then reports which UI modules it had loaded.
WRAPPER = """
import json, sys
from inspector.cli.main import main
status = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "textual" or m in {ui})
print(json.dumps({{"status": status, "loaded": loaded}}))
"""


def run_and_list_modules(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", WRAPPER.format(ui=set(UI[1:])), *map(str, args)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "memory.db"
    with MemoryStore.open(path, embedder=FakeEmbedder()) as store:
        store.remember_many([{"input": f"alice note {i}", "output": "ok"} for i in range(3)], user_id="alice")
    return path


def test_store_commands_run_without_importing_the_ui(db, tmp_path):
    out = tmp_path / "alice.jsonl"
    commands = [
        ("export", "--db", db, "--user", "alice", "-o", out),
        ("import", "--db", tmp_path / "copy.db", "--create", out),
        ("forget", "--db", db, "--user", "alice", "--dry-run"),
        ("audit", "--db", db),
        ("stats", db),
        ("scrub", db),
    ]
    for command in commands:
        report = run_and_list_modules(*command)
        assert report == {"status": 0, "loaded": []}, command


def test_the_command_line_module_imports_no_ui_until_a_command_opens_it():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = (
        "import sys, inspector.cli.main; inspector.cli.main.build_parser().parse_args(['open', 'x.db']); "
        "print(sorted(m for m in sys.modules if m.startswith('textual') or m == 'inspector.app'))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (inside functions too), made absolute."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            package = ["inspector", "cli"][: 3 - node.level]  # the CLI modules sit in inspector/cli/
            base = ".".join([*package, *([node.module] if node.module else [])]) if node.level else node.module
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_only_the_tui_module_imports_the_ui_even_lazily():
    assert {p.name for p in CLI_MODULES} >= {"main.py", "parser.py", "store_commands.py", "stats.py", "tui.py"}
    for path in CLI_MODULES:
        ui = sorted(name for name in _imports(path) if name.split(".")[0] == "textual" or name.startswith(UI[1:]))
        if path.name == "tui.py":
            assert ui == ["inspector.app", "inspector.app.make_app"]
        else:
            assert ui == [], path.name


def test_no_cli_module_reads_argparse_internals():
    private = re.compile(r"\.(choices|_actions|_subparsers|_group_actions|_name_parser_map|_option_string_actions|_defaults)\b")
    for path in CLI_MODULES:
        assert not private.search(path.read_text()), path.name
