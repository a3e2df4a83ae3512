"""A full disk gives a typed, one-line error that says what is wrong, and loses nothing: a write
or an erasure that cannot be written is rolled back whole, and runs once space is freed.

The disk is a real one: a 2 MiB tmpfs mounted in a private mount namespace (``unshare``), filled
to the last byte by a file beside the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .test_cli_files import _works  # the probe its read-only mounts use

ROOT = str(Path(__file__).resolve().parent.parent)

# Filled to the last byte by a file beside the store (the scripts below say where: {fill}).
FILL = (
    'filler = os.path.join(folder, "filler")\n'
    'with open(filler, "wb") as handle:\n'
    "    try:\n"
    "        while True:\n"
    '            handle.write(b"x" * 65536)\n'
    "            handle.flush()\n"
    "    except OSError:\n"
    "        pass\n"
)

ON_A_FULL_DISK = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {root!r})
    from store import MemoryStore
    from store.embedding import FakeEmbedder
    from inspector.cli.main import main as cli

    folder = sys.argv[1]
    path = os.path.join(folder, "memory.db")
    report = {{}}

    def attempt(name, call):
        try:
            call()
            report[name] = "done"
        except Exception as error:
            report[name] = [type(error).__module__, type(error).__name__, str(error)]

    s = MemoryStore.open(path, embedder=FakeEmbedder())
    s.remember("kept", user_id="alice")
    s.remember("to be erased", user_id="bob")
    {fill}
    attempt("remember", lambda: s.remember("y" * 200_000, user_id="alice"))
    attempt("forget", lambda: s.forget(user_id="bob", actor="dpo"))
    report["counts_while_full"] = {{u: len(s.episodes(user_id=u).items) for u in ("alice", "bob")}}
    s.close()
    report["cli_status"] = cli(["forget", "--db", path, "--user", "bob", "--yes"])
    os.remove(filler)
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        attempt("forget_with_space", lambda: s.forget(user_id="bob", actor="dpo"))
        report["tenants_after"] = sorted(t.user_id for t in s.tenants())
    print("REPORT " + json.dumps(report))
    """
)


def tmpfs_prefix(folder: Path) -> tuple[str, ...]:
    prefix = (
        "unshare",
        "--mount",
        "sh",
        "-c",
        'mount --make-rprivate / && mount -t tmpfs -o size=2M tmpfs "$1" && shift && exec "$@"',
        "sh",
        str(folder),
    )
    if not _works([*prefix, "true"]):
        pytest.skip("needs `unshare --mount` and the right to mount (CAP_SYS_ADMIN) for a real full filesystem")
    return prefix


def on_a_small_disk(tmp_path: Path, script: str) -> tuple[dict, subprocess.CompletedProcess]:
    """Run ``script`` (a template taking ``root``) on a fresh 2 MiB tmpfs; the REPORT it printed."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    result = subprocess.run(
        [*tmpfs_prefix(folder), sys.executable, "-c", script.format(root=ROOT, fill=FILL), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    line = next((x for x in result.stdout.splitlines() if x.startswith("REPORT ")), None)
    assert line is not None, result.stdout + result.stderr
    return json.loads(line.removeprefix("REPORT ")), result


def test_a_full_disk_is_a_typed_error_and_loses_or_erases_nothing_by_halves(tmp_path):
    report, result = on_a_small_disk(tmp_path, ON_A_FULL_DISK)
    for call in ("remember", "forget"):
        module, name, message = report[call]
        assert (module, name) == ("store.errors", "StoreFullError"), report[call]
        assert "disk is full" in message and "nothing was changed" in message and "\n" not in message
    assert report["counts_while_full"] == {"alice": 1, "bob": 1}  # nothing written, nothing half-erased
    # The command says so in one line and exits 2 (refused), not "unexpected error" (1).
    assert report["cli_status"] == 2
    errors = [x for x in result.stderr.splitlines() if x.startswith("memlens:")]
    assert errors and "disk is full" in errors[-1] and "unexpected" not in result.stderr
    assert report["forget_with_space"] == "done"
    assert report["tenants_after"] == ["alice"]


def test_a_disk_that_fills_during_a_tenants_erasure_says_it_began_and_a_retry_finishes_it(db_path, monkeypatch):
    """The first transaction of a whole-tenant erasure (the audit entry, the tenant hidden) fits,
    a later step does not: the message says the erasure is recorded and under way, never "nothing
    was changed", and forget again finishes it instead of saying the tenant does not exist. (The
    step's failure is SQLite's own full-disk error, raised where the step would write.)"""
    from store import MemoryStore
    from store.errors import StoreFullError
    from store.rights import erasure

    real_step = erasure.erase_step

    def disk_full_step(conn, tenant, at):
        raise StoreFullError(f"{db_path}: the disk is full; nothing was changed (the whole transaction was rolled back)")

    with MemoryStore.open(db_path) as store:
        for i in range(5):
            store.remember(f"bob's note {i}", user_id="bob")
        store.remember("alice's note", user_id="alice")
        monkeypatch.setattr(erasure, "erase_step", disk_full_step)
        with pytest.raises(StoreFullError) as caught:
            store.forget(user_id="bob", actor="dpo")
        message = str(caught.value)
        assert "nothing was changed" not in message
        assert "already hidden" in message and "run forget again" in message
        assert [t.user_id for t in store.tenants()] == ["alice"]  # hidden, as the message says
        monkeypatch.setattr(erasure, "erase_step", real_step)
        receipt = store.forget(user_id="bob", actor="dpo")
        assert receipt.counts["episodes"] == 5 and receipt.disk_scrubbed
        assert [e.action for e in store.audit_log(user_id="bob")].count("forget") == 1  # one erasure, finished
    assert b"bob's note" not in (db_path.read_bytes())


WITH_NO_BYTE_FREE = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {root!r})
    from store import MemoryStore
    from inspector.cli.main import main as cli

    folder = sys.argv[1]
    path = os.path.join(folder, "memory.db")
    with MemoryStore.open(path, embedder=None) as s:
        s.update_block("persona", "likes tea", user_id="alice")
    {fill}
    statuses = [cli(["stats", path]), cli(["export", "--db", path, "--user", "alice", "-o", "/dev/null", "--force"])]
    print("REPORT " + json.dumps({{"statuses": statuses, "files": sorted(os.listdir(folder))}}))
    """
)


def test_with_no_byte_free_commands_say_the_disk_is_full_and_leave_no_side_files(tmp_path):
    report, result = on_a_small_disk(tmp_path, WITH_NO_BYTE_FREE)
    assert report["statuses"] == [2, 2]
    assert report["files"] == ["filler", "memory.db"]  # no -wal, no -shm
    errors = [x for x in result.stderr.splitlines() if x.startswith("memlens:")]
    assert errors and all("disk is full" in x for x in errors) and "I/O" not in result.stderr
