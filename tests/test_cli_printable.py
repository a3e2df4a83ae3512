"""Agent-written names reach the terminal as text: an escape sequence or a newline in a tenant
name, an actor or a session id cannot clear the screen, move the cursor or forge a line in what
`memlens stats`, `audit`, `forget` and `import` print, and markup in a name is not markup."""

from __future__ import annotations

import pytest

from inspector.printable import printable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .cli_process import run_cli

HOSTILE = {
    "clears": "mallory\x1b[2J\x1b[H",
    "forges a line": "eve\nerased for alice:",
    "markup": "[/]",
    "bidi": "bidi\u202eevil",
    "c1": "csi\x9b2J",
}
UNSAFE = ("\x1b", "\u202e", "\x9b")


def test_printable_writes_out_what_would_act_on_the_terminal():
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert printable("x\u202ey\x9bz\x7f") == "x\\u202ey\\x9bz\\x7f"
    assert printable("zoë 東京 [b]ok[/b]") == "zoë 東京 [b]ok[/b]"  # letters and brackets stay


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_stored_names_are_printed_as_text(tmp_path, kind):
    name = HOSTILE[kind]
    db = tmp_path / "memory.db"
    with MemoryStore.open(db, embedder=FakeEmbedder()) as s:
        s.remember("hello", "hi", user_id=name, session_id=name)
        s.remember("hello", "hi", user_id="bob")
        s.export(user_id=name, actor=name)
    shown = printable(name)
    stats = run_cli("stats", db)
    assert stats.returncode == 0, stats.stderr
    dry = run_cli("forget", "--db", db, "--user", name, "--session", name, "--dry-run")
    erased = run_cli("forget", "--db", db, "--user", name, "--yes", "--actor", name)
    audit = run_cli("audit", "--db", db)
    for result in (stats, dry, erased, audit):
        assert result.returncode == 0, (result.args, result.stderr)
        out = result.stdout + result.stderr
        assert not any(c in out for c in UNSAFE), (result.args, out)
    assert shown in stats.stdout.replace("\n", "") or shown[:8] in stats.stdout  # the table may fold a long name
    assert dry.stdout.splitlines()[0] == f"would erase for {shown}, session {shown}:"
    assert erased.stdout.splitlines()[0] == f"erased for {shown}:"
    entries = [line for line in audit.stdout.splitlines() if line.strip()]
    assert len(entries) == 2 and all(f" {shown} " in line and f"by {shown}" in line for line in entries), audit.stdout
