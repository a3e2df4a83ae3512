"""A load run on the memory of a busy agent: loomflow keeps writing a SqliteMemory file and a
ChromaMemory directory from processes of its own while memlens's views of both poll, imports of
both run, and an in-place forget of one user runs through the real command.

It ends with no raw error anywhere (every failure a typed memlens error, most of them "the agent
is writing"), no "nothing was done" from a forget that erased, and every erased text gone from the
file, its side files and every copy memlens made. ``MEMLENS_LOAD_SECONDS`` sets how long the
agents write (12 s by default; the issue's run used 120)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("loomflow")
pytest.importorskip("chromadb")

from store import MemoryStore  # noqa: E402
from store.compat.chroma_source import import_chroma  # noqa: E402
from store.compat.loomflow_sqlite import import_loomflow_sqlite  # noqa: E402
from store.compat.loomflow_view import open_view  # noqa: E402
from store.compat.private_copies import copies_of  # noqa: E402
from store.errors import MemlensError  # noqa: E402

from .test_in_place_edges import copies, holding  # noqa: E402

SECONDS = float(os.environ.get("MEMLENS_LOAD_SECONDS", "12"))
ROOT = Path(__file__).resolve().parents[2]

AGENT = """
import asyncio, sys, time
from datetime import datetime, timezone
from loomflow import Episode
from loomflow.memory import ChromaMemory, HashEmbedder
from loomflow.memory.sqlite import SqliteMemory

kind, path, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])

async def main():
    if kind == "sqlite":
        mem = SqliteMemory(path, embedder=HashEmbedder())
    else:
        mem = ChromaMemory.local(path, embedder=HashEmbedder())
    for i in range(12):  # bob's memory, written before the run: what the forget erases
        await mem.remember(Episode(id=f"bob-{i}", session_id="s", user_id="bob", occurred_at=datetime.now(timezone.utc),
                                   input=f"bob secret number {i:04d} xyzzy", output=f"bob answer {i:04d}"))
    print("ready", flush=True)
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        user = ("alice", "carol")[n % 2]
        await mem.remember(Episode(id=f"{user}-{n}", session_id=f"s{n % 5}", user_id=user, occurred_at=datetime.now(timezone.utc),
                                   input=f"{user} writes line {n}", output=f"noted {n}"))
        if kind == "sqlite" and n % 7 == 0:
            await mem.update_block("notes", f"{user} note {n}", user_id=user)
        n += 1
        await asyncio.sleep(0.02)  # a busy agent: fifty memories a second
    print(f"wrote {n}", flush=True)

asyncio.run(main())
"""

BOBS = {f"bob secret number {i:04d} xyzzy".encode() for i in range(12)} | {f"bob answer {i:04d}".encode() for i in range(12)}


def start_agent(kind: str, path: Path) -> subprocess.Popen:
    agent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(AGENT), kind, str(path), str(SECONDS)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert agent.stdout is not None and agent.stdout.readline().strip() == "ready"
    return agent


class Tally:
    """What each activity met: done, a typed memlens error (by class), or a raw error."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.raw: list[str] = []
        self.lock = threading.Lock()

    def run(self, name: str, call) -> None:
        try:
            call()
            outcome = f"{name}: done"
        except MemlensError as error:
            outcome = f"{name}: {type(error).__name__}"
        except Exception as error:  # what the run must never see
            outcome = f"{name}: RAW"
            with self.lock:
                self.raw.append(f"{name}: {type(error).__name__}: {error}")
        with self.lock:
            self.counts[outcome] += 1


@pytest.mark.slow
def test_views_imports_and_an_in_place_forget_beside_agents_that_keep_writing(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr("tempfile.tempdir", str(folder))
    sqlite_file, chroma_dir = tmp_path / "bot.db", tmp_path / "chroma"
    agents = [start_agent("sqlite", sqlite_file), start_agent("chroma", chroma_dir)]
    tally, stop = Tally(), threading.Event()
    views = [open_view(f"loomflow-sqlite:{sqlite_file}"), open_view(f"chroma:{chroma_dir}")]

    def poll(view) -> None:
        while not stop.is_set():
            tally.run(f"poll {view.kind.scheme}", lambda: (view.data_version(), view.tenants()))
            time.sleep(0.05)

    def imports() -> None:
        # One store each: both agents use the same episode ids.
        with MemoryStore.open(tmp_path / "from-sqlite.db") as one, MemoryStore.open(tmp_path / "from-chroma.db") as other:
            while not stop.is_set():
                tally.run("import loomflow-sqlite", lambda: import_loomflow_sqlite(one, sqlite_file))
                tally.run("import chroma", lambda: import_chroma(other, chroma_dir))

    workers = [threading.Thread(target=poll, args=(v,)) for v in views] + [threading.Thread(target=imports)]
    for worker in workers:
        worker.start()
    forgets = []
    try:
        time.sleep(SECONDS / 3)
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline:  # refused while the agent holds the write lock: tried again
            done = subprocess.run(
                [
                    str(Path(sys.executable).parent / "memlens"),
                    "forget",
                    "--db",
                    f"loomflow-sqlite:{sqlite_file}",
                    "--user",
                    "bob",
                    "--yes",
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=120,
            )
            forgets.append(done)
            if done.returncode == 0:
                break
            time.sleep(0.2)
        for agent in agents:
            agent.wait(timeout=SECONDS + 120)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=120)
    try:
        for done in forgets:
            said = done.stdout + done.stderr
            assert "unexpected error" not in said and "Traceback" not in said, said
            if done.returncode != 0:
                assert done.returncode == 2 and "the agent" in said or "being written" in said, said
        erased = forgets[-1]
        assert erased.returncode == 0, erased.stderr
        assert "nothing was" not in erased.stdout + erased.stderr
        assert tally.raw == [], tally.raw
        assert tally.counts["poll loomflow-sqlite: done"] and tally.counts["poll chroma: done"]
        # Whatever else an import met is typed and says why: the agent writing, a record it changed.
        assert set(tally.counts) <= {
            f"{what}: {outcome}"
            for what in ("poll loomflow-sqlite", "poll chroma", "import loomflow-sqlite", "import chroma")
            for outcome in ("done", "SourceChangedError", "ImportMismatchError")
        }, tally.counts
        # Gone from the file and its side files, and (once the views have polled) from every copy.
        for side in (sqlite_file, Path(f"{sqlite_file}-wal"), Path(f"{sqlite_file}-shm")):
            if side.exists():
                assert not {n for n in BOBS if n in side.read_bytes()}, side.name

        def holding_bob() -> list[Path]:  # the Chroma directory is not erased in place: its copies keep bob
            return [c.folder for c in copies_of(sqlite_file) if holding(c.folder, BOBS)]

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and holding_bob():
            time.sleep(0.2)
            views[0].data_version()
        assert holding_bob() == []
    finally:
        for view in views:
            view.close()
    assert copies(folder) == []
    print(dict(tally.counts), f"forget tries: {len(forgets)}")
