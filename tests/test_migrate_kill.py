"""`memlens migrate` killed in the middle of a copy (SIGKILL: no handler runs) leaves a
destination that holds nothing, and running it again copies everything, verified."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from store import MemoryStore
from store.embedding import FakeEmbedder

from .migrate_support import assert_same, build

ROOT = Path(__file__).resolve().parent.parent

# The real command in a fresh interpreter, with the tests' fake embedder as its default model
# and the test's clock (CLOCK, so the same keys have expired on both sides); with PAUSE_AFTER=n
# it stops after copying n tenants (inside the transaction) and says so.
WRAPPER = """
import os, sys, time
from datetime import datetime
from store.validation import set_clock
if os.environ.get("CLOCK"):
    set_clock(lambda: datetime.fromisoformat(os.environ["CLOCK"]))
import store.recall.indexing as indexing
from store.embedding import FakeEmbedder
real = indexing.make_embedder
indexing.make_embedder = lambda spec: FakeEmbedder() if spec == "default" else real(spec)
if os.environ.get("PAUSE_AFTER"):
    import store.rights.migrate as migrate
    copy, copied = migrate.copy_tenant, []
    def paused(*args, **kwargs):
        result = copy(*args, **kwargs)
        copied.append(1)
        if len(copied) == int(os.environ["PAUSE_AFTER"]):
            open(os.environ["MARK"], "w").close()
            time.sleep(600)
        return result
    migrate.copy_tenant = paused
from inspector.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def run_cli(args: list[str], env: dict[str, str] | None = None, clock=None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {}), **({"CLOCK": clock[0].isoformat()} if clock else {})}
    return subprocess.Popen([sys.executable, "-c", WRAPPER, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(mark: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300  # generous: a loaded machine starts Python slowly
    while not mark.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the migration never reached its second tenant"
        time.sleep(0.05)


def target_url(request, backend: str, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'target.db'}" if backend == "sqlite" else request.getfixturevalue("pg_url")


def test_a_migration_killed_mid_copy_leaves_nothing_and_a_rerun_succeeds(request, backend, tmp_path, clock):
    source_path = tmp_path / "source.db"
    with MemoryStore.open(source_path, embedder=FakeEmbedder()) as source:
        build(source, clock)
    target = target_url(request, backend, tmp_path)
    mark = tmp_path / "paused"
    process = run_cli(["migrate", "--from", str(source_path), "--to", target], {"PAUSE_AFTER": "2", "MARK": str(mark)}, clock)
    try:
        wait_for(mark, process)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    with MemoryStore.open(target, embedder=FakeEmbedder()) as after_kill:
        assert after_kill.tenants() == [] and after_kill.audit_log(all_tenants=True) == []
    rerun = run_cli(["migrate", "--from", str(source_path), "--to", target], clock=clock)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert "migrated 4 tenant(s) and the audit history of 1 erased tenant(s)" in out and "verified" in out
    with MemoryStore.open(source_path, embedder=FakeEmbedder()) as source, MemoryStore.open(target, embedder=FakeEmbedder()) as copy:
        assert_same(source, copy)


def test_the_command_refuses_a_destination_with_data_and_exits_non_zero(tmp_path, clock):
    source_path, target_path = tmp_path / "source.db", tmp_path / "target.db"
    with MemoryStore.open(source_path, embedder=FakeEmbedder()) as source:
        source.remember("hello", "hi", user_id="alice")
    with MemoryStore.open(target_path, embedder=FakeEmbedder()) as target:
        target.remember("mine", "ok", user_id="dave")
    refused = run_cli(["migrate", "--from", str(source_path), "--to", str(target_path)])
    _, err = refused.communicate(timeout=300)
    assert refused.returncode == 2 and "already holds 1 tenant" in err and "Traceback" not in err
    added = run_cli(["migrate", "--from", str(source_path), "--to", str(target_path), "--into-existing"])
    out, err = added.communicate(timeout=300)
    assert added.returncode == 0, err
    with MemoryStore.open(target_path, embedder=FakeEmbedder()) as target:
        assert sorted(t.user_id for t in target.tenants()) == ["alice", "dave"]
