import re
import subprocess
import sys
from pathlib import Path

import pytest

from store import MemoryStore

from .cli_process import run_cli


@pytest.mark.model  # the demo command runs in a subprocess with the real model
def test_demo_command_builds_a_store_with_every_tier(tmp_path):
    path = tmp_path / "demo.db"
    out = subprocess.run(
        [sys.executable, "-m", "inspector.cli", "demo", "--db", str(path), "--no-open"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "alice" in out and "(anonymous)" in out
    with MemoryStore.open(path, read_only=True) as s:
        tenants = {t.user_id: t.counts for t in s.tenants()}
        assert set(tenants) == {"alice", "bob", "carol", None}
        alice = tenants["alice"]
        assert alice.blocks and alice.episodes and alice.facts and alice.kv_entries
        assert alice.scratchpad_entries and alice.checkpoints
        assert any(f.valid_until for f in s.facts(user_id="alice", include_history=True))


def test_every_command_and_flag_is_in_the_command_line_reference():
    """docs/cli.md against the parser: every sub-command, and each of its flags, is documented."""
    from pathlib import Path

    from inspector.cli.main import build_parser

    reference = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    commands = build_parser().commands
    assert len(commands) >= 9
    missing = [name for name in commands if f"`memlens {name}" not in reference]
    assert missing == []
    for name, sub in commands.items():
        rows = [line for line in reference.splitlines() if line.startswith(f"| `memlens {name}")]
        flags = set(re.findall(r"--[a-z][a-z-]*", sub.format_usage())) - {"--help", "--actor"}
        undocumented = sorted(flag for flag in flags if not any(flag in row for row in rows))
        assert rows and undocumented == [], f"memlens {name}: {undocumented or 'no row'} in docs/cli.md's table"
    assert "`--actor NAME`" in reference  # taken by every command that records something, said once


def test_a_command_line_builds_only_its_sub_command_and_parses_it_as_the_whole_parser_does():
    from inspector.cli.main import COMMANDS, build_parser

    whole = build_parser().commands
    assert tuple(whole) == COMMANDS  # main() picks the sub-command by this list before building
    for name in COMMANDS:
        alone = build_parser(only=name).commands
        assert list(alone) == [name]
        assert alone[name].format_help() == whole[name].format_help()


def test_memlens_with_no_command_prints_the_help_listing_every_command(capsys):
    from inspector.cli.main import COMMANDS, main

    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: memlens") and all(name in out for name in COMMANDS)


def run(*args):
    return run_cli(*args)


@pytest.mark.model  # `memlens demo` runs in a subprocess with the real model
def test_the_worked_erasure_example(tmp_path):
    db, out, restored = tmp_path / "demo.db", tmp_path / "alice.jsonl", tmp_path / "restored.db"
    assert run("demo", "--db", str(db), "--no-open").returncode == 0
    exported = run("export", "--db", str(db), "--user", "alice", "-o", str(out), "--actor", "dpo@example.com")
    assert exported.returncode == 0 and "210 episodes" in exported.stdout and out.exists()
    dry = run("forget", "--db", str(db), "--user", "alice", "--dry-run")
    assert "would erase" in dry.stdout and "episodes             210" in dry.stdout
    # docs/cli.md shows this run: its export line, its dry run and its count of records are this run's.
    example = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    assert exported.stdout.replace(str(out), "alice.jsonl") in example
    assert dry.stdout in example
    total = sum(int(line.split()[-1]) for line in dry.stdout.splitlines()[1:] if line.split()[0] != "vectors")
    assert f"{total} records" in example
    assert run("forget", "--db", str(db), "--user", "alice").returncode != 0  # neither --dry-run nor --yes
    erased = run("forget", "--db", str(db), "--user", "alice", "--yes", "--actor", "dpo@example.com")
    assert erased.returncode == 0 and "receipt digest" in erased.stdout
    audit = run("audit", "--db", str(db), "--user", "alice").stdout
    assert "forget" in audit and "export" in audit and "dpo@example.com" in audit
    with MemoryStore.open(db, read_only=True, embedder=None, check_model=False) as s:
        assert "alice" not in [t.user_id for t in s.tenants()]
    imported = run("import", "--db", str(restored), "--create", str(out))
    assert imported.returncode == 0 and "210 episodes" in imported.stdout


def test_errors_are_one_line_not_a_traceback(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    result = run("stats", str(bad))
    assert result.returncode == 2 and "not an SQLite database" in result.stderr and "Traceback" not in result.stderr
    missing_session = run("forget", "--db", str(bad), "--user", "x", "--session", "s", "--yes")
    assert missing_session.returncode == 2


def test_version_prints_the_installed_distributions_version():
    from importlib.metadata import version

    done = subprocess.run([str(Path(sys.executable).parent / "memlens"), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"memlens {version('memlens')}\n"
