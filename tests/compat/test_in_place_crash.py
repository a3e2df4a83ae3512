"""An in-place erasure cut short between the library's delete and memlens's scrub (the process
killed: os._exit right after the library committed) leaves a note, and the next memlens (any
command, or the next forget of the file) scrubs the file: the erased text, still in the file's
old pages when the process died (the agent keeps a connection open, so its -wal is never
checkpointed), is gone, and so is the note. A note another live process holds stops a second
erasure of the same file."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("loomflow")
pytest.importorskip("langgraph.store.sqlite")

from store.compat import erasure_journal  # noqa: E402
from store.compat.loomflow_erase import forget_in_place  # noqa: E402
from store.compat.loomflow_sqlite import read_loomflow_sqlite, with_side_files  # noqa: E402
from store.errors import SourceBusyError  # noqa: E402

from .test_in_place_edges import BOBS_TEXTS, memlens  # noqa: E402
from .test_loomflow_sqlite import write_loomflow  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BOBS_ITEM = {b"prefers sushi"}

# Erase bob in place through the library, then die before memlens's scrub: the library's delete
# is committed, nothing after it runs (no scrub, no exit handlers).
CUT_SHORT = """
import dataclasses, os, sys
from pathlib import Path
from store.compat.loomflow_erase import LOOMFLOW, forget_in_place
from store.compat.langgraph_erase import LANGGRAPH
form = {"loomflow-sqlite": LOOMFLOW, "langgraph-sqlite": LANGGRAPH}[sys.argv[2]]

def erase_then_die(*args):
    form.erase(*args)
    os._exit(9)

forget_in_place(Path(sys.argv[1]), form=dataclasses.replace(form, erase=erase_then_die), user_id="bob",
                session_id=None, dry_run=False, actor="test")
"""


def on_disk(path: Path, needles: set[bytes]) -> set[bytes]:
    found = set()
    for side in with_side_files(path):
        if side.exists():
            data = side.read_bytes()
            found |= {n for n in needles if n in data}
    return found


def cut_short(path: Path, scheme: str) -> None:
    done = subprocess.run([sys.executable, "-c", CUT_SHORT, str(path), scheme], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr


def agent_keeps_it_open(path: Path) -> sqlite3.Connection:
    """The agent's own connection, open throughout, the file in WAL mode: nothing checkpoints it."""
    agent = sqlite3.connect(path)
    agent.execute("PRAGMA journal_mode=WAL")
    agent.execute("SELECT * FROM sqlite_master").fetchall()
    return agent


@pytest.fixture
def loomflow_file(tmp_path):
    path = tmp_path / "bot.db"
    asyncio.run(write_loomflow(path))
    agent = agent_keeps_it_open(path)
    yield path
    agent.close()


@pytest.fixture
def langgraph_file(tmp_path):
    from langgraph.store.sqlite import SqliteStore

    path = tmp_path / "agent.sqlite"
    agent = agent_keeps_it_open(path)
    with SqliteStore.from_conn_string(str(path)) as lg:
        lg.setup()
        lg.put(("memories", "alice"), "food", {"text": "loves pizza in Lisbon"})
        lg.put(("memories", "bob"), "food", {"text": "prefers sushi"})
    yield path
    agent.close()


def test_a_loomflow_erasure_killed_before_its_scrub_is_finished_by_the_next_command(loomflow_file):
    cut_short(loomflow_file, "loomflow-sqlite")
    assert not [r for r in read_loomflow_sqlite(loomflow_file).document["records"] if r.get("user_id") == "bob"]
    assert on_disk(loomflow_file, BOBS_TEXTS), "the old pages hold bob's text: the test would prove nothing"
    (note,) = erasure_journal.interrupted()
    assert note.source == loomflow_file.resolve() and note.scheme == "loomflow-sqlite"
    assert b"bob" not in note.note.read_bytes()  # the note names the file, never the user or the text
    done = memlens("audit", "--help")  # any command
    assert "finished an in-place erasure that was cut short" in done.stderr
    assert on_disk(loomflow_file, BOBS_TEXTS) == set()
    assert erasure_journal.interrupted() == [] and not list(erasure_journal.notes_folder().iterdir())


def test_a_langgraph_erasure_killed_before_its_scrub_is_finished_by_the_next_forget(langgraph_file):
    from store.compat.langgraph_erase import LANGGRAPH

    cut_short(langgraph_file, "langgraph-sqlite")
    assert on_disk(langgraph_file, BOBS_ITEM), "the old pages hold bob's item: the test would prove nothing"
    receipt = forget_in_place(langgraph_file, form=LANGGRAPH, user_id="bob", session_id=None, dry_run=False, actor="t", missing_ok=True)
    assert sum(receipt.counts.values()) == 0 and receipt.disk_scrubbed
    assert on_disk(langgraph_file, BOBS_ITEM) == set()
    assert erasure_journal.interrupted() == []


def test_an_erasure_under_way_in_another_process_stops_a_second_one(loomflow_file):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from store.compat import erasure_journal as j; "
            "j.begin(Path(sys.argv[1]), 'loomflow-sqlite'); print('noted', flush=True); time.sleep(60)",
            str(loomflow_file.resolve()),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "noted"
        assert erasure_journal.interrupted() == []  # its owner is alive: under way, not cut short
        with pytest.raises(SourceBusyError, match="another memlens is erasing"):
            forget_in_place(loomflow_file, user_id="bob", session_id=None, dry_run=False, actor="t")
        assert [r for r in read_loomflow_sqlite(loomflow_file).document["records"] if r.get("user_id") == "bob"]
    finally:
        holder.kill()
        holder.wait()
    assert [n.source for n in erasure_journal.interrupted()] == [loomflow_file.resolve()]  # now it is cut short
