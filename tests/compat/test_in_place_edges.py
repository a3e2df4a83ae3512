"""The copies memlens makes of another library's memory never outlive it, and an in-place erasure
cannot be turned against its user by the file it erases: a view's mirror gone after SIGTERM, SIGHUP
and SIGKILL (swept at the next command); the erasure's own search for memlens's copies; triggers
planted in the file; another user's odd record; a forget that meets the agent writing; a Chroma
directory holding links."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("loomflow")

from store.compat import loomflow_erase, loomflow_sqlite, private_copies  # noqa: E402
from store.compat.loomflow_erase import forget_in_place  # noqa: E402
from store.compat.loomflow_view import open_loomflow_view  # noqa: E402
from store.errors import SourceChangedError, UnrecognizedSourceError  # noqa: E402

from .test_loomflow_sqlite import fingerprint, write_loomflow  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BOBS_TEXTS = {b"bob likes tea", b"question 0 from bob", b"question 1 from bob"}


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch) -> Path:
    """A temporary folder of this test's own, for this process and every command it starts."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr("tempfile.tempdir", str(folder))
    return folder


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "bot.db"
    asyncio.run(write_loomflow(path))
    return path


def memlens(*args: object, **options) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "memlens"), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120, **options)


def copies(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("memlens-"))


def holding(folder: Path, needles: set[bytes]) -> set[bytes]:
    found = set()
    for file in folder.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            found |= {n for n in needles if n in data}
    return found


VIEW_HOLDER = """
import sys, time
from store.compat.loomflow_view import open_loomflow_view
view = open_loomflow_view(sys.argv[1])
print("open", flush=True)
while True:
    time.sleep(0.2)
    if len(sys.argv) > 2:
        view.data_version()  # polls, as the inspector does
"""


def start_view_holder(source: Path, *, polls: bool) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", VIEW_HOLDER, str(source), *(["poll"] if polls else [])], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
    return holder


def test_a_killed_views_mirror_is_swept_by_the_next_command_and_erased_by_forget(source, tmpdir_env):
    holder = start_view_holder(source, polls=False)
    (mirror,) = copies(tmpdir_env)
    assert holding(mirror, BOBS_TEXTS)  # a full copy of every user's memory
    holder.kill()  # SIGKILL: nothing of the holder runs
    holder.wait()
    assert copies(tmpdir_env) == [mirror]
    # The erasure (through the API, which runs no command's sweep) finds it, deletes it, and says so.
    receipt = forget_in_place(source, user_id="bob", session_id=None, dry_run=False, actor="dpo")
    assert receipt.copies_erased == 1 and receipt.disk_scrubbed, receipt
    assert copies(tmpdir_env) == []
    # And any memlens command sweeps a dead process's copy as it starts.
    holder = start_view_holder(source, polls=False)
    holder.kill()
    holder.wait()
    assert len(copies(tmpdir_env)) == 1
    assert memlens("--version").returncode == 0
    assert copies(tmpdir_env) == []


def test_a_live_views_copy_is_named_on_the_receipt_until_it_polls(source, tmpdir_env):
    holder = start_view_holder(source, polls=False)  # open, not polling: it still holds bob
    try:
        receipt = forget_in_place(source, user_id="bob", session_id=None, dry_run=False, actor="dpo")
        assert not receipt.disk_scrubbed
        assert f"process {holder.pid}" in (receipt.scrub_pending_reason or "")
    finally:
        holder.kill()
        holder.wait()


def test_a_polling_view_drops_the_erased_user_from_its_copy(source, tmpdir_env):
    holder = start_view_holder(source, polls=True)
    try:
        done = memlens("forget", "--db", f"loomflow-sqlite:{source}", "--user", "bob", "--yes", env={**os.environ})
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(holding(copy, BOBS_TEXTS) for copy in copies(tmpdir_env)):
            time.sleep(0.1)
        assert not any(holding(copy, BOBS_TEXTS) for copy in copies(tmpdir_env))
    finally:
        holder.kill()
        holder.wait()


def inspector_in_a_terminal(source: Path) -> tuple[subprocess.Popen, int]:
    """The real ``memlens`` on a view of ``source``, in a pty of its own (not its controlling
    terminal: closing it sends no hangup), and the pty's main side."""
    import pty

    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "memlens"), f"loomflow-sqlite:{source}"],
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(child)
    return process, main


def its_mirror(folder: Path, main: int) -> list[Path]:
    """The copies in ``folder`` once the inspector has made its mirror (the terminal kept drained)."""
    import select

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not copies(folder):
        if select.select([main], [], [], 0.1)[0]:
            try:
                os.read(main, 65536)
            except OSError:
                time.sleep(0.05)
    return copies(folder)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_inspector_closed_by_a_signal_deletes_its_mirror(source, tmpdir_env, signum):
    """The real inspector in a terminal (pyte over a pty), ended as a closed terminal or `kill` ends it."""
    process, main = inspector_in_a_terminal(source)
    try:
        (mirror,) = its_mirror(tmpdir_env, main)
        time.sleep(1.0)  # the app is up, its signal handlers installed
        os.kill(process.pid, signum)
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            try:
                os.read(main, 65536)  # keep the terminal drained, as a real one is
            except OSError:
                time.sleep(0.05)
        assert process.poll() is not None, "the inspector did not end"
        assert not mirror.exists()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)


async def a_new_user_writes(source: Path, user: str) -> None:
    from datetime import UTC, datetime

    from loomflow import Episode
    from loomflow.memory import HashEmbedder
    from loomflow.memory.sqlite import SqliteMemory

    mem = SqliteMemory(source, embedder=HashEmbedder(), with_facts=False)
    await mem.remember(Episode(id=f"{user}-ep0", user_id=user, session_id="s0", occurred_at=datetime.now(UTC), input="hello", output="hi"))


def cpu_seconds(pid: int, *, over: float) -> float:
    """The CPU seconds process ``pid`` used in the next ``over`` seconds."""

    def used() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    before = used()
    time.sleep(over)
    return used() - before


@pytest.mark.slow
def test_an_inspector_whose_terminal_is_gone_still_ends_on_sigterm_and_deletes_its_mirror(source, tmpdir_env):
    """The terminal closed without a hangup (its pty is not the inspector's controlling one): Textual's
    writes fail and its event loop blocks for good, with a thread spinning on the dead terminal. A
    SIGTERM then still ends the process within inspector.ending.GRACE and leaves no mirror; before,
    it was ignored and the process stayed at a full core, holding the copy."""
    from inspector.ending import GRACE

    process, main = inspector_in_a_terminal(source)
    try:
        (mirror,) = its_mirror(tmpdir_env, main)
        time.sleep(1.0)  # the app is up, its signal handlers installed
        os.close(main)  # the terminal is gone; no hangup is sent
        main = -1
        # New users, each shown by the view's next poll: writes to the dead terminal, enough of them
        # to fill Textual's queue once its writer thread has died on the first.
        for n in range(16):
            asyncio.run(a_new_user_writes(source, f"user{n}"))
            time.sleep(0.6)
        # Its input thread spins on the dead terminal: a full core when the machine is quiet, and at
        # least a fair share of two cores beside the suite's other workers (an idle inspector uses 0.01 s in the same two).
        assert cpu_seconds(process.pid, over=2.0) > 0.3
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=GRACE + 20)
        assert process.returncode in (0, 128 + signal.SIGTERM), process.returncode
        assert not mirror.exists()
    finally:
        if process.poll() is None:
            process.kill()
        if main >= 0:
            os.close(main)


def test_a_file_with_a_planted_trigger_is_refused_before_anything_changes(source, tmp_path):
    with sqlite3.connect(source) as conn:
        conn.execute("CREATE TABLE stash (kept TEXT)")
        conn.execute("CREATE TRIGGER keep AFTER DELETE ON episodes BEGIN INSERT INTO stash VALUES (hex(old.input)); END")
    before = fingerprint(source)
    done = memlens("forget", "--db", f"loomflow-sqlite:{source}", "--user", "bob", "--yes")
    assert done.returncode == 2
    assert "trigger keep" in done.stderr and "table stash" in done.stderr and "nothing was erased" in done.stderr
    assert fingerprint(source) == before
    with sqlite3.connect(source) as conn:
        assert conn.execute("SELECT count(*) FROM stash").fetchone() == (0,)


def test_another_users_record_memlens_would_not_import_does_not_block_an_erasure(source):
    with sqlite3.connect(source) as conn:
        conn.execute(
            "INSERT INTO episodes (id, session_id, user_id, occurred_at, input, output) VALUES ('carol-big', 's', 'carol', 1.7e9, '', ?)",
            ("x" * 1_500_000 + "\x00",),
        )
    done = memlens("forget", "--db", f"loomflow-sqlite:{source}", "--user", "bob", "--yes")
    assert done.returncode == 0, done.stderr
    assert "carol" not in done.stdout + done.stderr
    read = loomflow_sqlite.read_loomflow_sqlite(source)
    assert {r["user_id"] for r in read.document["records"]} == {"alice", None, "carol"}


def test_a_typo_of_the_user_is_refused_naming_who_was_meant(source):
    before = fingerprint(source)
    done = memlens("forget", "--db", f"loomflow-sqlite:{source}", "--user", "Bob", "--yes")
    assert done.returncode == 2 and "no user 'Bob'" in done.stderr and "did you mean 'bob'" in done.stderr
    assert fingerprint(source) == before


def test_a_forget_whose_check_meets_the_agent_writing_says_erased_and_pending(source, monkeypatch):
    real = loomflow_erase.read_loomflow_sqlite
    calls = []

    def busy_after_the_erasure(path):
        calls.append(path)
        if len(calls) > 1:
            raise SourceChangedError(f"{path} changed during each of 4 readings: the agent is writing to it")
        return real(path)

    monkeypatch.setattr(loomflow_erase, "read_loomflow_sqlite", busy_after_the_erasure)
    receipt = forget_in_place(source, user_id="bob", session_id=None, dry_run=False, actor="dpo")
    assert receipt.counts["episodes"] >= 3 and not receipt.disk_scrubbed
    assert "could not be read again" in (receipt.scrub_pending_reason or "")
    # Erased all the same, and the byte scan ran on what loomflow left.
    assert not any(n in source.read_bytes() for n in BOBS_TEXTS)


def test_a_view_of_a_file_erased_through_it_keeps_no_copy_of_the_user(source, tmpdir_env):
    with open_loomflow_view(source) as view:
        receipt = view.forget(user_id="bob", actor="dpo")
        assert receipt.disk_scrubbed, receipt.scrub_pending_reason
        assert not any(holding(copy, BOBS_TEXTS) for copy in copies(tmpdir_env))
    assert copies(tmpdir_env) == []


def test_a_chroma_directory_holding_a_link_is_refused_and_the_linked_file_untouched(tmp_path, tmpdir_env):
    pytest.importorskip("chromadb")
    from store.compat.chroma_source import read_chroma

    from .test_chroma_source import write_chroma

    directory = tmp_path / "chroma"
    asyncio.run(write_chroma(directory))
    outside = tmp_path / "unrelated.sqlite3"
    with sqlite3.connect(outside) as conn:
        conn.execute("CREATE TABLE mine (x)")
    before = outside.read_bytes()
    real = directory / "chroma.sqlite3"
    real.rename(tmp_path / "moved.sqlite3")
    real.symlink_to(outside)
    with pytest.raises(UnrecognizedSourceError, match="holds a link, chroma.sqlite3"):
        read_chroma(directory)
    assert outside.read_bytes() == before
    assert copies(tmpdir_env) == []


COPY_CHURNER = """
import shutil, sys
from pathlib import Path
from store.compat.private_copies import make_private_folder, remove_private_folder
print("churning", flush=True)
while True:
    folder = make_private_folder("memlens-loomflow-", Path(sys.argv[1]))
    shutil.copyfile(sys.argv[1], folder / "source.db")
    remove_private_folder(folder)
"""


def test_the_copies_another_process_makes_and_removes_meanwhile_are_scanned_without_an_error(source, tmpdir_env):
    """A reader in another process makes and removes its copy many times a second (an import or
    a view beside an in-place forget); listing the copies' files never meets a vanished folder."""
    churner = subprocess.Popen([sys.executable, "-c", COPY_CHURNER, str(source)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert churner.stdout is not None and churner.stdout.readline().strip() == "churning"
        seen = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for copy in private_copies.copies_of(source):
                seen += 1
                assert all(file.name in {"owner.json", "source.db"} for file in copy.files())
        assert seen > 0
    finally:
        churner.kill()
        churner.wait()
