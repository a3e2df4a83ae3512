"""store.compat.loomflow_sqlite: a database written by loomflow's own SqliteMemory, read into a
memlens store record for record, without changing a byte of it."""

import hashlib
import sqlite3
import time
from datetime import UTC, datetime, timedelta

import pytest

pytest.importorskip("loomflow")

from loomflow import Episode, Fact  # noqa: E402
from loomflow.core.types import Message, Role, ToolCall  # noqa: E402
from loomflow.memory import HashEmbedder  # noqa: E402
from loomflow.memory.sqlite import SqliteMemory  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.compat import loomflow_sqlite  # noqa: E402
from store.compat.loomflow import LoomflowMemory  # noqa: E402
from store.compat.loomflow_sqlite import import_loomflow_sqlite  # noqa: E402
from store.errors import (  # noqa: E402
    ImportMismatchError,
    ImportValidationError,
    SourceChangedError,
    SourceNotFoundError,
    SourceSchemaTooNewError,
    UnrecognizedSourceError,
)

from ..conftest import dump  # noqa: E402

T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
USERS = ("alice", "bob", None)


def transcript(n: int) -> list[Message]:
    call = ToolCall(id=f"call-{n}", tool="search", args={"q": f"query {n}", "k": 3})
    return [
        Message(role=Role.ASSISTANT, content="", tool_calls=(call,)),
        Message(role=Role.TOOL, content=f"result {n}", name="search", tool_call_id=f"call-{n}"),
    ]


async def write_loomflow(path) -> SqliteMemory:
    """Every kind of record loomflow's SqliteMemory keeps, for two users and the anonymous one."""
    mem = SqliteMemory(path, embedder=HashEmbedder())
    for u, user in enumerate(USERS):
        for i in range(3):
            await mem.remember(
                Episode(
                    id=f"{user}-ep{i}",
                    session_id=f"s{i % 2}",
                    user_id=user,
                    occurred_at=T0 + timedelta(minutes=10 * i + u),
                    input=f"question {i} from {user}",
                    output=f"answer {i}",
                    tool_transcript=transcript(i) if i == 1 else None,
                )
            )
        await mem.update_block("persona", f"{user} likes tea", user_id=user)
        await mem.append_block("notes", "first.", user_id=user)
        await mem.append_block("notes", " second.", user_id=user)
        if user is not None:
            await mem.facts.append(
                Fact(user_id=user, subject=user, predicate="lives_in", object="Porto", valid_from=T0, sources=[f"{user}-ep0"])
            )
            # Supersedes the Porto fact: loomflow closes it at this one's valid_from.
            await mem.facts.append(
                Fact(
                    user_id=user,
                    subject=user,
                    predicate="lives_in",
                    object="Lisbon",
                    valid_from=T0 + timedelta(days=30),
                    confidence=0.8,
                    sources=[f"{user}-ep2"],
                )
            )
    # The same episode id in two tenants: unrelated records.
    await mem.remember(Episode(id="shared-id", session_id="s9", user_id="alice", input="alice's", output="x", occurred_at=T0))
    await mem.remember(Episode(id="shared-id2", session_id="s9", user_id="bob", input="bob's", output="y", occurred_at=T0))
    return mem


def fingerprint(path) -> dict[str, tuple[str, int, int] | None]:
    """Bytes (as a digest), size and mtime of the database and every side file."""
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        side = path.parent / (path.name + suffix)
        if side.exists():
            st = side.stat()
            out[suffix] = (hashlib.sha256(side.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
        else:
            out[suffix] = None
    return out


@pytest.fixture
def target(tmp_path):
    with MemoryStore.open(tmp_path / "memlens.db") as s:
        yield s


def plain(export):
    """A loomflow export without loomflow's own vectors (the store embeds with its model), its
    time of export, and transcripts (loomflow's export leaves them out; session_messages has them)."""
    data = export.model_dump(exclude={"exported_at"})
    for e in data["episodes"]:
        e["embedding"] = e["tool_transcript"] = None
    return data


async def test_every_record_loomflow_wrote_is_in_the_store_as_loomflow_reads_it(tmp_path, target):
    source = tmp_path / "bot.db"
    mem = await write_loomflow(source)
    report = import_loomflow_sqlite(target, source)

    assert {k: (t.read, t.written, t.unchanged) for k, t in report.tiers.items()} == {
        "episodes": (11, 11, 0),
        "blocks": (6, 6, 0),
        "facts": (4, 4, 0),
    }
    assert report.tool_transcript_messages == 6 and set(report.tenants) == set(USERS)
    ours = LoomflowMemory(target)
    for user in USERS:
        theirs = await mem.export(user_id=user)
        assert plain(await ours.export(user_id=user)) == plain(theirs)  # ids, times, texts, blocks, facts
        for session in ("s0", "s1"):
            assert await ours.session_messages(session, user_id=user) == await mem.session_messages(session, user_id=user)
    # The superseded fact keeps its history; the owner can search what the agent remembered.
    [porto] = [f for f in target.facts(user_id="alice", include_history=True) if f.object == "Porto"]
    assert porto.valid_until == T0 + timedelta(days=30)
    assert [f.object for f in target.facts(user_id="alice")] == ["Lisbon"]
    assert target.recall("question 2 from bob", user_id="bob", limit=1)[0].id == "bob-ep2"
    assert target.get_episode("alice-ep1", user_id="alice").metadata["tool_transcript"][1]["content"] == "result 1"


async def test_reimport_writes_nothing_and_says_so(tmp_path, target):
    source = tmp_path / "bot.db"
    await write_loomflow(source)
    import_loomflow_sqlite(target, source)
    before = [line for line in dump(target.path) if "audit_log" not in line]
    again = import_loomflow_sqlite(target, source)
    assert {k: (t.written, t.unchanged) for k, t in again.tiers.items()} == {"episodes": (0, 11), "blocks": (0, 6), "facts": (0, 4)}
    assert [line for line in dump(target.path) if "audit_log" not in line] == before


async def test_the_source_is_not_changed_when_it_is_at_rest(tmp_path, target):
    source = tmp_path / "bot.db"
    await write_loomflow(source)  # loomflow's last connection checkpoints and removes -wal and -shm
    before = fingerprint(source)
    assert before["-wal"] is None
    import_loomflow_sqlite(target, source)
    # A mode=ro connection alone would have left an empty -wal and a -shm here.
    assert fingerprint(source) == before


async def test_the_source_is_not_changed_while_loomflow_has_it_open_and_its_wal_is_read(tmp_path, target):
    source = tmp_path / "bot.db"
    holder = sqlite3.connect(source)  # another process of the agent: loomflow's closes never checkpoint
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("PRAGMA user_version = 1")  # a write: from here on it holds the WAL index open
    holder.commit()
    try:
        await write_loomflow(source)
        before = fingerprint(source)
        assert before["-wal"] and before["-wal"][1] > 0 and before["-shm"]  # the records are in the WAL
        report = import_loomflow_sqlite(target, source)
        assert report.tiers["episodes"].written == 11  # read through the WAL
        # A mode=ro connection alone would have written its read mark into the -shm.
        assert fingerprint(source) == before
    finally:
        holder.close()


async def test_a_source_named_through_a_symlink_is_read_with_its_wal(tmp_path, target):
    """SQLite keeps a linked database's -wal beside the file the link points to: looked for beside
    the link, everything loomflow committed since its last checkpoint was silently left out."""
    (tmp_path / "agent").mkdir()
    source = tmp_path / "agent" / "bot.db"
    holder = sqlite3.connect(source)  # keeps the WAL from being checkpointed away, as in the test above
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("PRAGMA user_version = 1")
    holder.commit()
    try:
        await write_loomflow(source)
        assert fingerprint(source)["-wal"][1] > 0
        link = tmp_path / "bot-link.db"
        link.symlink_to(source)
        report = import_loomflow_sqlite(target, link)
        assert report.tiers["episodes"].read == report.tiers["episodes"].written == 11
    finally:
        holder.close()


async def test_a_record_the_store_holds_differently_refuses_the_whole_import(tmp_path, target):
    source = tmp_path / "bot.db"
    await write_loomflow(source)
    target.remember("something else", "ok", user_id="bob", id="bob-ep1")
    before = dump(target.path)
    with pytest.raises(ImportMismatchError, match="episodes: 11 expected, 10 held"):
        import_loomflow_sqlite(target, source)
    assert dump(target.path) == before


def test_a_missing_file_is_refused(tmp_path, target):
    before = dump(target.path)
    with pytest.raises(SourceNotFoundError):
        import_loomflow_sqlite(target, tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists() and dump(target.path) == before


def _sqlite(path, *statements):
    conn = sqlite3.connect(path)
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "make, error",
    [
        (lambda p: p.write_text("hello, not a database\n" * 200), UnrecognizedSourceError),
        (lambda p: p.write_bytes(b""), UnrecognizedSourceError),
        (lambda p: _sqlite(p, "CREATE TABLE notes (x)"), UnrecognizedSourceError),
        (lambda p: MemoryStore.open(p).close(), UnrecognizedSourceError),  # a memlens store, not loomflow's
        (
            lambda p: _sqlite(
                p,
                "CREATE TABLE working_blocks (user_id, name, content, pinned_order, updated_at)",
                "CREATE VIEW episodes AS SELECT 1 AS id",
            ),
            UnrecognizedSourceError,
        ),
        (
            lambda p: _sqlite(
                p,
                "CREATE TABLE working_blocks (name, content, pinned_order, updated_at)",
                "CREATE TABLE episodes (id, session_id, occurred_at, input, output, embedding)",
            ),
            UnrecognizedSourceError,
        ),
    ],
)
def test_a_file_that_is_not_a_loomflow_database_is_refused(tmp_path, target, make, error):
    source = tmp_path / "other.db"
    make(source)
    before, stamp = dump(target.path), fingerprint(source)
    with pytest.raises(error):
        import_loomflow_sqlite(target, source)
    assert dump(target.path) == before and fingerprint(source) == stamp


@pytest.mark.parametrize(
    "change, error, says",
    [
        ("ALTER TABLE episodes ADD COLUMN importance REAL", SourceSchemaTooNewError, "importance"),
        ("ALTER TABLE facts ADD COLUMN graph_id TEXT", SourceSchemaTooNewError, "graph_id"),
        ("UPDATE episodes SET occurred_at = 'yesterday' WHERE id = 'bob-ep1'", ImportValidationError, "episodes['bob-ep1'].occurred_at"),
        ("UPDATE episodes SET input = '', output = '' WHERE id = 'alice-ep2'", ImportValidationError, "episodes['alice-ep2']"),
        ("UPDATE facts SET sources = '{' WHERE object = 'Porto'", ImportValidationError, "sources"),
        # Nested deeper than Python's stack: json raised a raw RecursionError
        (f"UPDATE facts SET sources = '{'[' * 100_000}{']' * 100_000}' WHERE object = 'Porto'", ImportValidationError, "sources"),
        (
            f"""UPDATE episode_tool_transcripts SET message_json = '{{"role": "user", "content": {"[" * 100_000}{"]" * 100_000}}}'""",
            ImportValidationError,
            "tool_transcript",
        ),
        (
            'UPDATE episode_tool_transcripts SET message_json = \'{"role": "system", "content": "x"}\'',
            ImportValidationError,
            "tool_transcript",
        ),
    ],
)
async def test_a_newer_schema_or_a_bad_record_writes_nothing(tmp_path, target, change, error, says):
    source = tmp_path / "bot.db"
    await write_loomflow(source)
    _sqlite(source, change)
    before = dump(target.path)
    with pytest.raises(error) as caught:
        import_loomflow_sqlite(target, source)
    assert says in str(caught.value)
    assert dump(target.path) == before


def write_during_each_reading(source, monkeypatch) -> list[int]:
    """Loomflow writes to ``source`` at the end of each reading of it; returns the readings' tally."""
    real = loomflow_sqlite.read_memory
    readings: list[int] = []

    def load_while_loomflow_writes(path, conn):
        result = real(path, conn)
        readings.append(1)
        _sqlite(source, f"UPDATE working_blocks SET content = 'written during reading {len(readings)}'")
        return result

    monkeypatch.setattr(loomflow_sqlite, "read_memory", load_while_loomflow_writes)
    return readings


async def test_a_source_written_to_during_every_read_is_refused(tmp_path, target, monkeypatch):
    source = tmp_path / "bot.db"
    await write_loomflow(source)
    writes = write_during_each_reading(source, monkeypatch)
    before = dump(target.path)
    started = time.monotonic()
    with pytest.raises(SourceChangedError, match="the agent is writing") as caught:
        import_loomflow_sqlite(target, source)
    assert dump(target.path) == before
    # tried again until the time allowed ran out, and says how often
    assert len(writes) > 3 and f"each of {len(writes)} readings" in str(caught.value)
    assert time.monotonic() - started >= loomflow_sqlite.READ_RETRY_SECONDS - loomflow_sqlite.READ_RETRY_LAST_PAUSE


async def test_a_read_torn_once_by_the_agent_is_read_again(tmp_path, target, monkeypatch):
    source = tmp_path / "bot.db"
    await write_loomflow(source)
    real = loomflow_sqlite.read_memory
    writes = []

    def load_while_loomflow_writes_once(path, conn):
        result = real(path, conn)
        if not writes:
            writes.append(1)
            _sqlite(source, "UPDATE working_blocks SET content = 'written during the first read'")
        return result

    monkeypatch.setattr(loomflow_sqlite, "read_memory", load_while_loomflow_writes_once)
    read = loomflow_sqlite.read_loomflow_sqlite(source)
    assert {r["content"] for r in read.document["records"] if r["type"] == "block"} == {"written during the first read"}


async def test_a_write_while_the_private_copy_is_read_does_not_tear_the_reading(tmp_path, target, monkeypatch):
    """A file with pending writes (its -wal) is copied and the copy read: only the copying can
    meet the agent, so a write while the copy is read leaves that one reading whole, as of the
    copy. (Checking the live file after the whole reading made a busy agent tear every one.)"""
    source = tmp_path / "bot.db"
    holder = sqlite3.connect(source)  # keeps the WAL from being checkpointed away: the writes stay pending
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("PRAGMA user_version = 1")
    holder.commit()
    try:
        await write_loomflow(source)
        readings = write_during_each_reading(source, monkeypatch)
        read = loomflow_sqlite.read_loomflow_sqlite(source)
        assert len(readings) == 1  # one reading, not torn
        assert "written during reading 1" not in {r.get("content") for r in read.document["records"]}
    finally:
        holder.close()


# --- the command: memlens import --from loomflow-sqlite -----------------------------------------


def memlens(*args):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [str(Path(sys.executable).parent / "memlens"), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=root)


async def test_the_command_imports_blocks_into_a_new_store_and_leaves_the_source_alone(tmp_path):
    source, db = tmp_path / "bot.db", tmp_path / "memlens.db"
    mem = SqliteMemory(source, embedder=HashEmbedder(), with_facts=False)  # blocks only: no model loads
    await mem.update_block("persona", "alice likes tea", user_id="alice")
    await mem.update_block("persona", "someone", user_id=None)
    stamp = fingerprint(source)
    done = memlens("import", "--db", db, "--create", "--from", "loomflow-sqlite", source)
    assert done.returncode == 0, done.stderr
    assert "blocks    read       2   written       2" in done.stdout and "alice" in done.stdout
    assert fingerprint(source) == stamp
    with MemoryStore.open(db, embedder=None, check_model=False) as s:
        assert s.get_block("persona", user_id="alice").content == "alice likes tea"


@pytest.mark.parametrize(
    "make", [lambda p: None, lambda p: p.write_text("not a database\n" * 100), lambda p: _sqlite(p, "CREATE TABLE notes (x)")]
)
def test_the_command_refuses_in_one_line_and_creates_nothing(tmp_path, make):
    source, db = tmp_path / "bot.db", tmp_path / "memlens.db"
    make(source)
    failed = memlens("import", "--db", db, "--create", "--from", "loomflow-sqlite", source)
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr and str(source) in failed.stderr
    assert not db.exists()


def test_the_command_refuses_as_user_with_a_loomflow_source(tmp_path):
    failed = memlens("import", "--db", tmp_path / "m.db", "--create", "--from", "loomflow-sqlite", "--as-user", "x", tmp_path / "b.db")
    assert failed.returncode == 2 and "--as-user" in failed.stderr and not (tmp_path / "m.db").exists()


@pytest.mark.model  # the command embeds the episodes with the real model
async def test_the_command_imports_every_tier_with_the_real_model(tmp_path):
    source, db = tmp_path / "bot.db", tmp_path / "memlens.db"
    await write_loomflow(source)
    stamp = fingerprint(source)
    done = memlens("import", "--db", db, "--create", "--from", "loomflow-sqlite", source)
    assert done.returncode == 0, done.stderr
    assert "episodes  read      11   written      11" in done.stdout and "facts     read       4" in done.stdout
    assert fingerprint(source) == stamp
    with MemoryStore.open(db) as s:
        assert s.recall("question 2 from bob", user_id="bob", limit=1)[0].id == "bob-ep2"
