"""Files and the CLI never destroy or fake anything: exports never overwrite the store or an
existing file, killed exports leave nothing behind, stores and exports are owner-only, missing
stores are not created, unknown tenants are errors, and every failure is one line.

Every CLI case runs the real command in a process of its own: forked from a warm parent
(tests/cli_process.py), or started fresh where it must run as another user or in another mount
namespace. Stores are built in this process with the fake embedder; the commands tested here open
them without a model."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import pytest

from store import MemoryStore, testing
from store.embedding import FakeEmbedder
from store.errors import (
    OutputExistsError,
    OutputPathError,
    StoreNotFoundError,
    UnknownTenantError,
)
from store.tenancy import Tenant, require_tenant

from .cli_process import run_cli
from .conftest import dump

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, cwd: Path | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not prefix:
        return run_cli(*args, cwd=cwd, env=env)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "inspector.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def failure(result: subprocess.CompletedProcess) -> str:
    """The one line a failed command printed; fails the test on success or a traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def make_store(path: Path, users=("alice", "bob"), episodes: int = 3) -> Path:
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        for user in users:
            s.update_block("persona", f"{user}'s persona", user_id=user)
            s.remember_many([{"input": f"{user} secret {i}", "output": "ok"} for i in range(episodes)], user_id=user)
    return path


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def audit_count(path: Path) -> int:
    with MemoryStore.open(path, read_only=True, embedder=None, check_model=False) as s:
        return len(s.audit_log(all_tenants=True))


# --- require_tenant -----------------------------------------------------------------------------


def test_require_tenant_names_close_matches(store):
    store.update_block("b", "v", user_id="Alice")
    store.update_block("b", "v", user_id="carol")
    store.update_block("b", "v", user_id="rob")
    with testing.backend(store).read() as conn:
        assert require_tenant(conn, Tenant.of("Alice")) is True
        assert require_tenant(conn, Tenant.of("alice"), missing_ok=True) is False
        assert require_tenant(conn, Tenant.of(None), missing_ok=True) is False
        with pytest.raises(UnknownTenantError, match="'Alice'") as caught:
            require_tenant(conn, Tenant.of("alice"))
        assert caught.value.close_matches == ["Alice"]
        with pytest.raises(UnknownTenantError) as caught:
            require_tenant(conn, Tenant.of("carl"))
        assert caught.value.close_matches == ["carol"]
        with pytest.raises(UnknownTenantError) as caught:
            require_tenant(conn, Tenant.of("bob"))
        assert caught.value.close_matches == []
        with pytest.raises(UnknownTenantError, match="anonymous"):
            require_tenant(conn, Tenant.of(None))


# --- export never writes over the store or an existing file -------------------------------------


def _store_aliases(tmp_path: Path, db: Path) -> dict[str, Path]:
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    (tmp_path / "via").symlink_to(tmp_path)
    return {
        "the store": db,
        "its -wal name": Path(f"{db}-wal"),
        "its -shm name": Path(f"{db}-shm"),
        "a symlink to it": tmp_path / "link.db",
        "a hard link to it": tmp_path / "hard.db",
        "its name through a symlinked folder": tmp_path / "via" / db.name,
        "a relative path to it": Path(os.path.relpath(db)),
    }


def test_export_never_writes_over_the_store_it_reads(tmp_path):
    db = make_store(tmp_path / "memory.db")
    aliases = _store_aliases(tmp_path, db)
    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        s.tenants()  # connected: its -wal and -shm exist, so their inodes are compared too
        assert Path(f"{db}-wal").exists()
        (tmp_path / "wal-link").symlink_to(f"{db}-wal")
        aliases["a symlink to its -wal"] = tmp_path / "wal-link"
        before = dump(db)
        for target in aliases.values():
            for overwrite in (False, True):
                with pytest.raises(OutputPathError, match="store being exported"):
                    s.export_to(target, user_ids=["alice"], overwrite=overwrite)
        assert dump(db) == before and len(s.audit_log(all_tenants=True)) == 0, sorted(aliases)


def test_cli_export_onto_the_store_is_refused_even_with_force(tmp_path):
    db = make_store(tmp_path / "memory.db")
    before = dump(db)
    for target in (db, tmp_path / "." / "memory.db", f"{db}-wal"):
        line = failure(run("export", "--db", db, "--user", "alice", "-o", target, "--force"))
        assert "store being exported" in line
    assert dump(db) == before and audit_count(db) == 0
    assert listing(tmp_path) == ["memory.db"]


def test_export_refuses_an_existing_file_unless_told_to_overwrite(tmp_path):
    db = make_store(tmp_path / "memory.db")
    target = tmp_path / "alice.jsonl"
    target.write_text("keep me")
    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        with pytest.raises(OutputExistsError):
            s.export_to(target, user_ids=["alice"])
        assert target.read_text() == "keep me" and s.audit_log(all_tenants=True) == []
    assert "already exists" in failure(run("export", "--db", db, "--user", "alice", "-o", target))
    assert target.read_text() == "keep me"
    replaced = run("export", "--db", db, "--user", "alice", "-o", target, "--force")
    assert replaced.returncode == 0 and "alice secret 0" in target.read_text()
    assert listing(tmp_path) == ["alice.jsonl", "memory.db"]


def test_a_file_that_appears_during_the_export_is_not_replaced(tmp_path):
    db = make_store(tmp_path / "memory.db", episodes=600)
    target = tmp_path / "alice.jsonl"

    def someone_writes(done, total):
        if not target.exists():
            target.write_text("written meanwhile")

    with MemoryStore.open(db, embedder=None, check_model=False) as s, pytest.raises(OutputExistsError, match="appeared"):
        s.export_to(target, user_ids=["alice"], progress=someone_writes)
    assert target.read_text() == "written meanwhile"
    assert listing(tmp_path) == ["alice.jsonl", "memory.db"]  # and no partial left


# --- owner-only files -----------------------------------------------------------------------------


@pytest.fixture
def open_umask():
    previous = os.umask(0)  # the most permissive umask: only memlens's own modes protect the files
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_store_and_its_side_files_are_owner_only(tmp_path, open_umask):
    path = tmp_path / "memory.db"
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        s.remember("private", user_id="u")
        side = [Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert all(p.exists() for p in side)
        assert {p.name: mode(p) for p in (path, *side)} == {p.name: 0o600 for p in (path, *side)}


def test_exports_are_owner_only_even_when_replacing_a_readable_file(tmp_path, open_umask):
    db = make_store(tmp_path / "memory.db")
    existing = tmp_path / "old.jsonl"
    existing.write_text("old")
    existing.chmod(0o644)
    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        s.export_to(tmp_path / "new.jsonl", user_ids=["alice"])
        s.export_to(existing, user_ids=["alice"], overwrite=True, fmt="json")
    assert mode(tmp_path / "new.jsonl") == 0o600 and mode(existing) == 0o600
    assert run("export", "--db", db, "--all", "-o", tmp_path / "all.jsonl").returncode == 0
    assert mode(tmp_path / "all.jsonl") == 0o600


# --- killed exports leave nothing behind ----------------------------------------------------------

STALLED_EXPORT = """
import sys, time
from store import MemoryStore
store = MemoryStore.open(sys.argv[1], embedder=None, check_model=False)
def stall(done, total):
    print("exporting", flush=True)
    time.sleep(600)
store.export_to(sys.argv[2], user_ids=["alice"], progress=stall)
"""


def partials(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if "partial" in p.name]


def kill_mid_export(db: Path, target: Path) -> Path:
    """SIGKILL a process in the middle of an export; returns the partial file it left."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", STALLED_EXPORT, str(db), str(target)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "exporting"
    finally:
        child.kill()
        child.wait()
    (left,) = partials(target.parent)
    assert "alice secret 0" in left.read_text()  # personal data, on disk, under a name nobody chose
    return left


@pytest.mark.parametrize("cleanup", ["next export", "scrub", "forget", "memlens scrub"])
def test_a_partial_export_left_by_sigkill_is_removed(tmp_path, cleanup):
    db = make_store(tmp_path / "memory.db", episodes=600)
    out = tmp_path / "out"
    out.mkdir()
    left = kill_mid_export(db, out / "alice.jsonl")
    assert mode(left) == 0o600
    if cleanup == "memlens scrub":
        assert run("scrub", db).returncode == 0
    else:
        with MemoryStore.open(db, embedder=None, check_model=False) as s:
            if cleanup == "next export":
                s.export_to(tmp_path / "bob.jsonl", user_ids=["bob"])
            elif cleanup == "scrub":
                s.scrub()
            else:
                s.forget(user_id="bob")
    assert listing(out) == []
    with closing(sqlite3.connect(db)) as conn:  # and the store forgot about it
        assert conn.execute("SELECT count(*) FROM memlens_meta WHERE key LIKE 'export_partial:%'").fetchone() == (0,)


def test_a_running_exports_partial_is_left_alone(tmp_path):
    db = make_store(tmp_path / "memory.db", episodes=600)
    target = tmp_path / "alice.jsonl"
    seen = []

    def a_second_export_cleans_up(done, total):
        if not seen:
            seen.extend(partials(tmp_path))
            with MemoryStore.open(db, embedder=None, check_model=False) as other:
                other.export_to(tmp_path / "bob.jsonl", user_ids=["bob"])
            assert all(p.exists() for p in seen)

    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        s.export_to(target, user_ids=["alice"], progress=a_second_export_cleans_up)
    assert len(seen) == 1 and not seen[0].exists() and "alice secret 599" in target.read_text()


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit])
def test_a_signal_the_moment_the_partial_exists_still_removes_it(tmp_path, monkeypatch, interruption):
    """The signal test's race made certain: the interruption is raised as the partial's creation
    returns, before the export could note that it made the file (the partial was left behind)."""
    import store.rights.export_file as export_file

    real_open = os.open

    def created_then_interrupted(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if str(path).endswith(export_file.PARTIAL_SUFFIX):
            os.close(fd)
            raise interruption()
        return fd

    with MemoryStore.open(tmp_path / "memory.db", embedder=None, check_model=False) as s:
        s.remember("alice secret", user_id="alice")
        out = tmp_path / "out"
        out.mkdir()
        monkeypatch.setattr(export_file.os, "open", created_then_interrupted)
        with pytest.raises(interruption):
            s.export_to(out / "alice.jsonl", user_ids=["alice"])
        monkeypatch.undo()
    assert listing(out) == []


def _as_in_a_terminal() -> None:
    # A runner started in the background without job control (`nohup ... &`, some CI agents)
    # ignores SIGINT, and children inherit that, so Ctrl-C would never reach the export: give the
    # child a terminal's default, as a user's shell does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum,message", [(signal.SIGTERM, "stopped by SIGTERM"), (signal.SIGINT, "interrupted")])
def test_a_signal_stops_a_cli_export_and_removes_its_partial(tmp_path, signum, message):
    db = tmp_path / "memory.db"
    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        s.remember_many([{"input": f"alice secret {i} " + "x" * 2000} for i in range(20_000)], user_id="alice")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The signal goes the moment the partial appears; on a loaded machine the export can still
    # finish first (exit 0, nothing to stop). That is a lost race, not a failure: run it again.
    for _attempt in range(5):
        child = subprocess.Popen(
            [sys.executable, "-m", "inspector.cli", "export", "--db", str(db), "--user", "alice", "-o", str(out / "alice.jsonl")],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=_as_in_a_terminal,
        )
        deadline = time.monotonic() + 60
        while not partials(out) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert partials(out) or child.returncode == 0, "the export neither started nor finished"
        child.send_signal(signum)
        if child.wait(timeout=60) != 0:
            break
        (out / "alice.jsonl").unlink()
    else:
        pytest.fail("the export finished before the signal five times; make the store bigger")
    assert child.returncode == 128 + signum
    assert child.stderr.read().strip() == f"memlens: {message}"
    assert listing(out) == []


# --- a missing store is never created -------------------------------------------------------------

MISSING_COMMANDS = [
    ("forget", "--db", "{db}", "--user", "alice", "--yes"),
    ("forget", "--db", "{db}", "--user", "alice", "--dry-run"),
    ("export", "--db", "{db}", "--user", "alice", "-o", "{out}"),
    ("scrub", "{db}"),
    ("reembed", "{db}"),
    ("stats", "{db}"),
    ("audit", "--db", "{db}"),
    ("import", "--db", "{db}", "{out}"),
    ("open", "{db}"),
    ("{db}",),
]


@pytest.mark.parametrize("command", MISSING_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_no_command_but_demo_creates_a_store(tmp_path, command):
    db, out = tmp_path / "missing.db", tmp_path / "alice.jsonl"
    result = run(*(part.format(db=db, out=out) for part in command))
    line = failure(result)
    assert "does not exist" in line and "nothing was created" in line
    assert "receipt" not in result.stdout and listing(tmp_path) == []


def test_open_with_create_false_creates_nothing(tmp_path):
    path = tmp_path / "missing.db"
    with pytest.raises(StoreNotFoundError):
        MemoryStore.open(path, create=False)
    assert listing(tmp_path) == []
    MemoryStore.open(path).close()  # the library default still creates
    assert path.exists()


def test_import_into_a_new_store_needs_create(tmp_path):
    source = tmp_path / "source.db"
    with MemoryStore.open(source, embedder=None) as s:  # blocks only: the import embeds nothing, no model loads
        s.update_block("persona", "carol's persona", user_id="carol")
    export = tmp_path / "carol.jsonl"
    assert run("export", "--db", source, "--user", "carol", "-o", export).returncode == 0
    new = tmp_path / "new.db"
    assert "--create" in failure(run("import", "--db", new, export))
    assert not new.exists()
    created = run("import", "--db", new, export, "--create")
    assert created.returncode == 0 and "1 blocks" in created.stdout and mode(new) == 0o600


# --- unknown tenants are errors, with close matches -----------------------------------------------


def test_export_of_an_unknown_tenant_raises_and_records_nothing(tmp_path):
    db = make_store(tmp_path / "memory.db", users=("Alice",))
    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        with pytest.raises(UnknownTenantError) as caught:
            s.export_to(tmp_path / "x.jsonl", user_ids=["alice"])
        assert caught.value.close_matches == ["Alice"]
        with pytest.raises(UnknownTenantError):
            s.export(user_id="alice")
        assert s.audit_log(all_tenants=True) == [] and not (tmp_path / "x.jsonl").exists()
        empty = s.export(user_id="alice", missing_ok=True)
        assert empty["manifest"]["counts"]["episodes"] == 0
        assert s.require_tenant(user_id="Alice") is True and s.require_tenant(user_id="nobody", missing_ok=True) is False


@pytest.mark.parametrize(
    "command",
    [
        ("forget", "--yes"),
        ("forget", "--dry-run"),
        ("export", "-o", "{out}"),
    ],
)
def test_cli_refuses_an_unknown_tenant_and_names_close_matches(tmp_path, command):
    db = make_store(tmp_path / "memory.db", users=("Alice", "bob"))
    before = dump(db)
    args = [part.format(out=tmp_path / "x.jsonl") for part in command]
    result = run(args[0], "--db", db, "--user", "alice", *args[1:])
    line = failure(result)
    assert "no tenant 'alice'" in line and "'Alice'" in line
    assert "receipt" not in result.stdout and "erased" not in result.stdout
    assert dump(db) == before and audit_count(db) == 0 and not (tmp_path / "x.jsonl").exists()


# --- tenant options exclude each other ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("forget", "--user", "bob", "--anonymous", "--yes"),
        ("export", "--user", "bob", "--anonymous", "-o", "{out}"),
        ("export", "--all", "--user", "bob", "-o", "{out}"),
        ("export", "--all", "--anonymous", "-o", "{out}"),
        ("audit", "--user", "bob", "--anonymous"),
        ("forget", "--yes"),
        ("export", "-o", "{out}"),
    ],
)
def test_tenant_options_are_exclusive_and_required(tmp_path, args, quiet_isolation):
    db = make_store(tmp_path / "memory.db")
    with MemoryStore.open(db, embedder=FakeEmbedder()) as s:
        s.remember("anonymous secret", user_id=None)
    before = dump(db)
    parts = [part.format(out=tmp_path / "x.jsonl") for part in args]
    line = failure(run(parts[0], "--db", db, *parts[1:]))
    assert "--user" in line or "--anonymous" in line or "--all" in line
    assert dump(db) == before and listing(tmp_path) == ["memory.db"]


def test_an_unexpected_error_is_one_line_with_a_way_to_see_more(tmp_path, monkeypatch, capsys):
    from dataclasses import replace

    import inspector.cli.main as cli
    from inspector.cli.commands import BY_NAME

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setitem(BY_NAME, "stats", replace(BY_NAME["stats"], handler=broken))
    assert cli.main(["stats", str(tmp_path / "x.db")]) == 1
    assert capsys.readouterr().err == "memlens: unexpected error: RuntimeError: a bug (MEMLENS_DEBUG=1 shows where)\n"
    monkeypatch.setenv("MEMLENS_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli.main(["stats", str(tmp_path / "x.db")])


def test_main_reads_no_argparse_internals():
    import re

    assert not re.search(r"\._subparsers|\._group_actions", (ROOT / "inspector" / "cli" / "main.py").read_text())


# --- demo never replaces what is not a demo store -------------------------------------------------


def test_demo_refuses_to_replace_a_file_that_is_not_a_demo_store(tmp_path):
    notes = tmp_path / "notes.db"
    notes.write_text("my notes")
    real = make_store(tmp_path / "memory.db")
    before = dump(real)
    for path in (notes, real):
        line = failure(run("demo", "--db", path, "--no-open"))
        assert "not a memlens demo store" in line and "--force" in line
    assert notes.read_text() == "my notes" and dump(real) == before
    assert listing(tmp_path) == ["memory.db", "notes.db"]


def test_a_demo_store_is_replaced_and_force_replaces_anything(tmp_path):
    from store.demo import build_demo_store, is_demo_store

    path = tmp_path / "demo.db"
    build_demo_store(path, embedder=FakeEmbedder()).close()
    assert is_demo_store(path)
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        s.update_block("extra", "added by hand", user_id="alice")
    build_demo_store(path, embedder=FakeEmbedder()).close()  # a demo store needs no force
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        assert s.get_block("extra", user_id="alice") is None
    notes = tmp_path / "notes.db"
    notes.write_text("my notes")
    with pytest.raises(OutputExistsError):
        build_demo_store(notes, embedder=FakeEmbedder())
    assert not is_demo_store(notes) and not is_demo_store(make_store(tmp_path / "memory.db"))
    build_demo_store(notes, embedder=FakeEmbedder(), force=True).close()
    assert is_demo_store(notes)


# --- every failure is one line --------------------------------------------------------------------


def damage(path: Path) -> None:
    """Scribble over the b-tree page header of page 1, which holds the schema: every open fails."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[100:112] = b"\xff" * 12
    path.write_bytes(bytes(data))


EVERY_COMMAND = [
    ("stats", "{db}"),
    ("audit", "--db", "{db}"),
    ("export", "--db", "{db}", "--user", "alice", "-o", "{out}"),
    ("forget", "--db", "{db}", "--user", "alice", "--dry-run"),
    ("forget", "--db", "{db}", "--user", "alice", "--yes"),
    ("scrub", "{db}"),
    ("reembed", "{db}"),
    ("import", "--db", "{db}", "{out}"),
]


@pytest.mark.parametrize("kind", ["damaged", "empty file", "empty SQLite database", "foreign WAL database"])
def test_a_file_that_is_not_a_healthy_store_fails_in_one_line_and_is_left_as_it_was(tmp_path, kind):
    db = tmp_path / "thing.db"
    if kind == "damaged":
        make_store(db)
        damage(db)
    elif kind == "empty file":
        db.touch()
    else:
        with closing(sqlite3.connect(db)) as conn:
            if kind == "foreign WAL database":
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("CREATE TABLE invoices (total REAL)")
            else:
                conn.execute("VACUUM")
    before = db.read_bytes()
    export = tmp_path / "alice.jsonl"
    export.write_text("")  # for import: the store is refused before the file is read
    expected = {
        "damaged": "damaged",
        "empty file": "empty file",
        "empty SQLite database": "empty SQLite database",
        "foreign WAL database": "another application",
    }[kind]
    for command in EVERY_COMMAND:
        line = failure(run(*(part.format(db=db, out=export if command[0] == "import" else tmp_path / "x.jsonl") for part in command)))
        assert expected in line, (command, line)
        assert db.read_bytes() == before and listing(tmp_path) == ["alice.jsonl", "thing.db"], command


async def test_the_inspector_refuses_an_empty_file_and_creates_nothing(tmp_path):
    from inspector.app import make_app

    from .inspector_support import wait_for

    for path in (tmp_path / "empty.db", tmp_path / "missing.db"):
        if path.name == "empty.db":
            path.touch()
        app = make_app(path, embedder=FakeEmbedder(), poll_seconds=0)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.screen.query("#fatal"), what="message")
            text = str(app.screen.query_one("#fatal").content)
            assert ("empty file" if path.name == "empty.db" else "does not exist") in text
    assert listing(tmp_path) == ["empty.db"] and (tmp_path / "empty.db").stat().st_size == 0


def test_looking_at_a_store_leaves_no_side_files(tmp_path):
    db = make_store(tmp_path / "memory.db")
    assert run("stats", db).returncode == 0
    assert run("audit", "--db", db).returncode == 0
    with MemoryStore.open(db, read_only=True, embedder=None, check_model=False) as s:
        s.tenants()
    assert listing(tmp_path) == ["memory.db"]


@pytest.mark.parametrize("before", ["yesterday", "2026-13-01"])
def test_a_bad_date_is_one_line(tmp_path, before):
    db = make_store(tmp_path / "memory.db")
    snapshot = dump(db)
    line = failure(run("forget", "--db", db, "--user", "alice", "--before", before, "--yes"))
    assert "--before" in line and before in line
    assert dump(db) == snapshot


def test_bad_export_paths_are_one_line(tmp_path):
    db = make_store(tmp_path / "memory.db")
    cases = {
        tmp_path / "no-such-folder" / "x.jsonl": "does not exist",
        tmp_path: "is a directory",
        tmp_path / "memory.db" / "x.jsonl": "does not exist",  # a file where the folder should be
    }
    for target, expected in cases.items():
        assert expected in failure(run("export", "--db", db, "--user", "alice", "-o", target))
    assert listing(tmp_path) == ["memory.db"] and audit_count(db) == 0


# --- read-only files, folders and filesystems -----------------------------------------------------
# root writes to a 0444 file anyway, so modes are tried as an unprivileged user (setpriv), and a
# read-only filesystem is a read-only bind mount in a private mount namespace (unshare).


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def read_only_mount(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs what follows with ``folder`` mounted read-only, only for it."""
    prefix = (
        "unshare",
        "--mount",
        "sh",
        "-c",
        'mount --make-rprivate / && mount --bind -o ro "$1" "$1" && shift && exec "$@"',
        "sh",
        str(folder),
    )
    if not _works([*prefix, "true"]):
        pytest.skip("needs `unshare --mount` and the right to mount (CAP_SYS_ADMIN) for a real read-only filesystem")
    return prefix


@pytest.fixture
def shared_folder():
    """A folder another user can reach (pytest's tmp_path is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="memlens-test-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_unprivileged_user() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    if not _works([*prefix, sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); import store"]):
        pytest.skip("running as root without setpriv (or without access for uid 65534): cannot drop the privilege that ignores file modes")
    return prefix


def test_a_store_on_a_read_only_filesystem_can_be_looked_at_and_says_why_it_cannot_change(tmp_path):
    folder = tmp_path / "media"
    folder.mkdir()
    db = make_store(folder / "memory.db")
    before = dump(db)
    prefix = read_only_mount(folder)
    stats = run("stats", db, prefix=prefix)
    assert stats.returncode == 0 and "alice" in stats.stdout, stats.stderr
    assert run("audit", "--db", db, prefix=prefix).returncode == 0
    for command in (("forget", "--db", db, "--user", "alice", "--yes"), ("scrub", db)):
        line = failure(run(*command, prefix=prefix))
        assert "read-only (read-only filesystem)" in line and "stats, audit, export and forget --dry-run can still read it" in line
        assert "read_only=True" not in line  # a Python argument, not the command line's
    # What only reads works: a dry run, and an export (which cannot be recorded, and says so).
    dry = run("forget", "--db", db, "--user", "alice", "--dry-run", prefix=prefix)
    assert dry.returncode == 0 and "would erase for alice" in dry.stdout, dry.stderr
    exported = run("export", "--db", db, "--user", "alice", "-o", tmp_path / "alice.jsonl", prefix=prefix)
    assert exported.returncode == 0, exported.stderr
    assert "read-only (read-only filesystem)" in exported.stderr and "not recorded in its audit log" in exported.stderr
    assert "3 episodes" in exported.stdout and (tmp_path / "alice.jsonl").exists()
    assert dump(db) == before and listing(folder) == ["memory.db"]


def test_an_immutable_store_says_so_and_can_still_be_exported(tmp_path):
    db = make_store(tmp_path / "memory.db")
    before = dump(db)
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i needs root and a filesystem with file attributes")
    try:
        line = failure(run("forget", "--db", db, "--user", "alice", "--yes"))
        assert "immutable or append-only" in line and "file mode" not in line.split("allows")[0], line
        exported = run("export", "--db", db, "--user", "alice", "-o", tmp_path / "alice.jsonl")
        assert exported.returncode == 0 and "immutable" in exported.stderr, exported.stderr
        assert run("stats", db).returncode == 0
        # Nothing of the read-only commands is left beside it: SQLite reads it as immutable.
        assert sorted(p.name for p in tmp_path.iterdir()) == ["alice.jsonl", "memory.db"]
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)
    assert dump(db) == before


def test_an_export_to_a_read_only_folder_is_one_line(tmp_path):
    db = make_store(tmp_path / "memory.db")
    folder = tmp_path / "out"
    folder.mkdir()
    line = failure(run("export", "--db", db, "--user", "alice", "-o", folder / "x.jsonl", prefix=read_only_mount(folder)))
    assert "cannot write" in line and "Read-only file system" in line
    assert listing(folder) == [] and audit_count(db) == 0


def test_a_read_only_file_and_folder_say_what_is_wrong(shared_folder):
    prefix = as_unprivileged_user()
    db = make_store(shared_folder / "memory.db")
    db.chmod(0o444)
    before = dump(db)
    line = failure(run("forget", "--db", db, "--user", "alice", "--yes", prefix=prefix))
    assert "read-only (no write permission: file mode 0444)" in line
    assert dump(db) == before
    db.chmod(0o666)
    shared_folder.chmod(0o555)
    try:
        line = failure(run("forget", "--db", db, "--user", "alice", "--yes", prefix=prefix))
        assert "read-only" in line and "cannot be written" in line and str(shared_folder) in line
        line = failure(run("stats", db, prefix=prefix))
        assert "cannot read" in line and "writable folder" in line
        export = failure(
            run("export", "--db", shared_folder / "memory.db", "--user", "alice", "-o", "/nonexistent-dir/x.jsonl", prefix=prefix)
        )
        assert "cannot read" in export and "writable folder" in export  # as stats: not even a read-only open works
    finally:
        shared_folder.chmod(0o777)
    assert dump(db) == before and listing(shared_folder) == ["memory.db"]


def test_audit_says_when_there_is_nothing_and_refuses_an_unknown_name(tmp_path):
    db = make_store(tmp_path / "memory.db", users=("alice", "bob"))
    empty = run("audit", "--db", db)
    assert empty.returncode == 0 and "the audit log is empty" in empty.stdout
    none_yet = run("audit", "--db", db, "--user", "bob")
    assert none_yet.returncode == 0 and "no audit entries for bob" in none_yet.stdout
    assert "did you mean 'alice'" in failure(run("audit", "--db", db, "--user", "alcie"))
    assert run("forget", "--db", db, "--user", "alice", "--yes").returncode == 0
    # alice is erased: no tenant row, but her log stays, and a slip of her name still finds it
    assert "forget" in run("audit", "--db", db, "--user", "alice").stdout
    line = failure(run("audit", "--db", db, "--user", "alcie"))
    assert "no tenant or audit entry 'alcie'" in line and "did you mean 'alice'" in line


def test_refusals_name_the_flags_of_the_command_not_python_arguments(tmp_path):
    """A message says what the user can do where they are: a flag, never ``overwrite=True``."""
    from store import MemoryStore

    from .cli_process import run_cli as run_memlens

    db = tmp_path / "s.db"
    with MemoryStore.open(db) as s:
        s.remember("hello", user_id="alice")
    out = tmp_path / "alice.json"
    out.write_text("{}")
    done = run_memlens("export", "--db", db, "--user", "alice", "-o", out)
    assert done.returncode == 2 and "--force replaces it" in done.stderr and "=True" not in done.stderr
    big = tmp_path / "big.jsonl"
    # A block: the import embeds nothing, so no model loads.
    with MemoryStore.open(tmp_path / "big-source.db", max_content_bytes=3_000_000, embedder=None) as s:
        s.update_block("notes", "x" * 2_000_000, user_id="carol")
        s.export_to(big, user_ids=["carol"], fmt="jsonl")
    done = run_memlens("import", "--db", tmp_path / "target.db", "--create", big)
    assert done.returncode == 2 and "--max-content-bytes N" in done.stderr and "max_content_bytes=" not in done.stderr
    done = run_memlens("import", "--db", tmp_path / "target.db", "--create", "--max-content-bytes", "3000000", big)
    assert done.returncode == 0, done.stderr
    assert "imported" in done.stdout
