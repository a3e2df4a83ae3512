"""Several agent processes (not threads: separate connections, caches and pools) writing to one
store at once, on each backend: every write lands (exact counts), superseding stays consistent
(one open fact), and no driver error (serialization failure, deadlock, lock timeout) reaches an
agent: only StoreBusyError, which the workers retry as its message says. Also an erasure of one
tenant while the others write: all of their writes land."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from store import MemoryStore
from store.embedding import FakeEmbedder

ROOT = Path(__file__).resolve().parent.parent
PROCESSES, COUNT = 3, 25


def start_workers(store: str, tmp_path: Path, tenants: list[str]) -> tuple[list[subprocess.Popen], Path]:
    start = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.many_writers_worker", store, f"p{n}", str(COUNT), str(start), tenant],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, tenant in enumerate(tenants)
    ]
    return workers, start


def results(workers: list[subprocess.Popen]) -> list[dict]:
    out = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=600)
        assert stdout.strip(), stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def store_location(request, backend: str, tmp_path: Path) -> str:
    if backend == "sqlite":
        return str(tmp_path / "shared.db")
    return request.getfixturevalue("pg_url")


def test_processes_writing_one_tenant_at_once_lose_nothing(request, backend, tmp_path):
    location = store_location(request, backend, tmp_path)
    MemoryStore.open(location, embedder=FakeEmbedder()).close()  # created once, as a deployment would
    workers, start = start_workers(location, tmp_path, ["team"] * PROCESSES)
    time.sleep(1.0)  # let them all open and wait at the start line (the go file is what syncs them)
    start.touch()
    report = results(workers)
    assert [r.get("error") for r in report] == [None] * PROCESSES, report
    with MemoryStore.open(location, embedder=FakeEmbedder()) as s:
        counts = next(t.counts for t in s.tenants() if t.user_id == "team")
        assert counts.episodes == PROCESSES * COUNT
        assert counts.facts == PROCESSES * COUNT  # superseded facts are kept as history
        assert len(s.facts(user_id="team", subject="team")) == 1, "two writers both left their fact open"
        assert len(s.session("shared", user_id="team").list_keys()) == PROCESSES * COUNT
        ids = {e.id for e in s.episodes(user_id="team", limit=1000).items}
        assert ids == {f"p{n}-{i}" for n in range(PROCESSES) for i in range(COUNT)}


def test_an_erasure_while_other_tenants_write_keeps_all_their_writes(request, backend, tmp_path):
    location = store_location(request, backend, tmp_path)
    with MemoryStore.open(location, embedder=FakeEmbedder()) as s:
        s.remember_many([{"input": f"victim's episode {i}", "output": "x"} for i in range(300)], user_id="victim")
        s.session("v", user_id="victim").set("k", "v")
    writers = ["w0", "w1"]
    workers, start = start_workers(location, tmp_path, writers)
    time.sleep(1.0)
    start.touch()
    with MemoryStore.open(location, embedder=FakeEmbedder()) as s:
        receipt = s.forget(user_id="victim")
        assert receipt.counts["episodes"] == 300
    report = results(workers)
    assert [r.get("error") for r in report] == [None] * len(writers), report
    with MemoryStore.open(location, embedder=FakeEmbedder()) as s:
        held = {t.user_id: t.counts for t in s.tenants()}
        assert "victim" not in held
        for tenant in writers:
            assert (held[tenant].episodes, held[tenant].facts) == (COUNT, COUNT)
            assert len(s.session("shared", user_id=tenant).list_keys()) == COUNT
