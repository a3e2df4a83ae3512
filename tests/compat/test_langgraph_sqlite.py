"""A LangGraph SqliteStore file, written with LangGraph's own API, shown where it lives
(``langgraph-sqlite:PATH``) and imported, never changed."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.sqlite")

from langgraph.store.sqlite import SqliteStore  # noqa: E402

import store  # noqa: E402
from store.compat.langgraph import MemlensStore  # noqa: E402
from store.compat.langgraph_erase import LANGGRAPH  # noqa: E402
from store.compat.langgraph_sqlite import SESSION_PREFIX, import_langgraph_sqlite, read_langgraph_sqlite  # noqa: E402
from store.compat.loomflow_erase import forget_in_place  # noqa: E402
from store.errors import ReadOnlyStoreError, SourceBusyError, SourceSchemaTooNewError, UnrecognizedSourceError  # noqa: E402
from store.memory import MemoryStore  # noqa: E402
from tests.cli_process import run_cli  # noqa: E402


def fingerprint(path: Path) -> dict[str, str | None]:
    """The file and each side file SQLite may keep, by content (None: absent)."""
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        side = path.parent / (path.name + suffix)
        out[suffix] = hashlib.sha256(side.read_bytes()).hexdigest() if side.exists() else None
    return out


@pytest.fixture
def agent_file(tmp_path) -> Path:
    path = tmp_path / "agent.sqlite"
    with SqliteStore.from_conn_string(str(path)) as lg:
        lg.setup()
        lg.put(("memories", "alice"), "food", {"text": "loves pizza in Lisbon", "tags": ["food", "travel"]})
        lg.put(("memories", "alice"), "work", {"text": "quarterly report due Friday"}, ttl=60)
        lg.put(("memories", "bob"), "food", {"text": "prefers sushi"})
        lg.put(("docs",), "readme", {"text": "shared notes"})
        lg.put(("memories", "bob"), "old", {"text": "an expired memory"}, ttl=1)
    with sqlite3.connect(path) as conn:  # as if a minute had passed and no sweep had run
        conn.execute("UPDATE store SET expires_at = '2000-01-01 00:00:00+00:00' WHERE key = 'old'")
    return path


def test_a_langgraph_file_is_shown_where_it_lives_never_changed(agent_file):
    before = fingerprint(agent_file)
    with store.open(f"langgraph-sqlite:{agent_file}", embedder=None) as view:
        assert set(view.tenant_names()) == {"alice", "bob", None}
        food = view.session(SESSION_PREFIX + "memories.alice", user_id="alice").entry("food")
        assert food.value == {"text": "loves pizza in Lisbon", "tags": ["food", "travel"]}
        assert food.search_text == "loves pizza in Lisbon\nfood\ntravel"
        work = view.session(SESSION_PREFIX + "memories.alice", user_id="alice").entry("work")
        assert work.ttl_seconds == 3600 and work.expires_at is not None
        assert view.session(SESSION_PREFIX + "memories.bob", user_id="bob").list_keys() == ["food"]  # the expired one is hidden
        assert [h.id for h in view.search_keys("Lisbon pizza", user_id="alice")] == ["food"]
        assert view.search_note.startswith("keyword search only")
        exported = view.export(user_id="alice")
        assert sorted(e["key"] for e in exported["kv_entries"]) == ["food", "work"]
        with pytest.raises(ReadOnlyStoreError):
            view.session(SESSION_PREFIX + "memories.alice", user_id="alice").set("x", 1)
    assert fingerprint(agent_file) == before


def test_the_view_follows_langgraph_writing(agent_file):
    with store.open(f"langgraph-sqlite:{agent_file}", embedder=None) as view:
        version = view.data_version()
        with SqliteStore.from_conn_string(str(agent_file)) as lg:
            lg.put(("memories", "carol"), "pet", {"text": "has a cat"})
            lg.delete(("memories", "alice"), "food")
        assert view.data_version() != version
        assert "carol" in view.tenant_names()
        assert view.session(SESSION_PREFIX + "memories.alice", user_id="alice").list_keys() == ["work"]  # deleted there, gone here


def test_an_import_brings_every_item_and_a_second_writes_nothing(agent_file, tmp_path):
    with MemoryStore.open(tmp_path / "memlens.db", embedder=None) as target:
        report = import_langgraph_sqlite(target, agent_file)
        assert {t: (c.read, c.written) for t, c in report.tiers.items()} == {"sessions": (3, 3), "kv_entries": (4, 4)}
        again = import_langgraph_sqlite(target, agent_file)
        assert again.tiers["kv_entries"].written == 0 and again.tiers["kv_entries"].unchanged == 4
    # What was imported is LangGraph memory memlens serves: MemlensStore reads it as LangGraph wrote it.
    with MemlensStore(tmp_path / "memlens.db") as lg_on_memlens:
        assert lg_on_memlens.get(("memories", "alice"), "food").value["text"] == "loves pizza in Lisbon"
        assert {ns for ns in lg_on_memlens.list_namespaces()} == {("memories", "alice"), ("memories", "bob"), ("docs",)}


def test_the_command_line_imports_and_shows_a_langgraph_file(agent_file, tmp_path):
    done = run_cli("import", "--db", tmp_path / "memlens.db", "--create", "--from", "langgraph-sqlite", agent_file)
    assert done.returncode == 0, done.stderr
    assert "LangGraph SqliteStore" in done.stdout and "kv_entries" in done.stdout
    stats = run_cli("stats", f"langgraph-sqlite:{agent_file}")
    assert stats.returncode == 0, stats.stderr
    assert "alice" in stats.stdout


def test_a_file_that_is_not_langgraphs_or_is_newer_is_refused(tmp_path, agent_file):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(UnrecognizedSourceError, match="not a LangGraph SqliteStore"):
        read_langgraph_sqlite(other)
    with sqlite3.connect(agent_file) as conn:
        conn.execute("ALTER TABLE store ADD COLUMN embedding_model TEXT")
    with pytest.raises(SourceSchemaTooNewError, match="embedding_model"):
        read_langgraph_sqlite(agent_file)


def file_bytes(path: Path) -> bytes:
    return b"".join(
        (path.parent / (path.name + s)).read_bytes() for s in ("", "-wal", "-journal") if (path.parent / (path.name + s)).exists()
    )


def test_a_user_is_erased_in_place_through_langgraph_and_langgraph_reads_the_rest(agent_file):
    from langgraph.store.sqlite.base import VECTOR_MIGRATIONS

    with sqlite3.connect(agent_file) as conn:  # the vectors an index would have kept, one for an item of bob's
        conn.executescript(VECTOR_MIGRATIONS[0])
        conn.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES ('memories.bob', 'food', 'text', x'0102')")
    with store.open(f"langgraph-sqlite:{agent_file}", embedder=None) as view:
        dry = view.forget(user_id="bob", dry_run=True, actor="dpo")
        assert dry.counts == {"sessions": 1, "kv_entries": 2}  # the expired item, not yet swept, counts too
        assert b"prefers sushi" in file_bytes(agent_file)
        receipt = view.forget(user_id="bob", actor="dpo")
        assert receipt.counts == {"sessions": 1, "kv_entries": 2} and receipt.disk_scrubbed, receipt.scrub_pending_reason
        assert "bob" not in view.tenant_names()  # the view read the erased file again
    data = file_bytes(agent_file)
    assert b"prefers sushi" not in data and b"an expired memory" not in data and b"memories.bob" not in data
    with sqlite3.connect(agent_file) as conn:
        assert conn.execute("SELECT COUNT(*) FROM store_vectors").fetchone()[0] == 0
    with SqliteStore.from_conn_string(str(agent_file)) as lg:  # LangGraph reopens it and reads everyone else's
        assert lg.get(("memories", "bob"), "food") is None
        assert lg.get(("memories", "alice"), "food").value["text"] == "loves pizza in Lisbon"
        assert {tuple(ns) for ns in lg.list_namespaces()} == {("memories", "alice"), ("docs",)}


def test_the_command_line_erases_one_namespace_and_refuses_a_typo(agent_file):
    done = run_cli("forget", "--db", f"langgraph-sqlite:{agent_file}", "--user", "alice", "--session", "langgraph:memories.alice", "--yes")
    assert done.returncode == 0, done.stderr
    assert "kv_entries" in done.stdout and "byte scan" in done.stdout
    assert b"loves pizza" not in file_bytes(agent_file)
    typo = run_cli("forget", "--db", f"langgraph-sqlite:{agent_file}", "--user", "bobb", "--yes")
    assert typo.returncode != 0 and "bob" in typo.stderr


def test_an_erasure_is_refused_while_the_agent_writes_or_a_trigger_is_planted(agent_file):
    before = fingerprint(agent_file)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(agent_file)], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with store.open(f"langgraph-sqlite:{agent_file}", embedder=None) as view, pytest.raises(SourceBusyError):
            view.forget(user_id="alice", actor="dpo")
    finally:
        holder.kill()
        holder.wait()
    assert fingerprint(agent_file) == before
    with sqlite3.connect(agent_file) as conn:
        conn.execute("CREATE TABLE kept (value)")
        conn.execute("CREATE TRIGGER keep AFTER DELETE ON store BEGIN INSERT INTO kept VALUES (old.value); END")
    with pytest.raises(UnrecognizedSourceError, match="trigger keep"):
        forget_in_place(agent_file, form=LANGGRAPH, user_id="alice", session_id=None, dry_run=False, actor="dpo")
    with sqlite3.connect(agent_file) as conn:
        assert conn.execute("SELECT COUNT(*) FROM store WHERE prefix = 'memories.alice'").fetchone()[0] == 2


HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""


def test_an_erasure_scrubs_the_old_pages_an_agents_wal_still_holds(tmp_path):
    path = tmp_path / "agent.sqlite"
    agent = sqlite3.connect(path)  # the agent's own connection, open throughout: its -wal stays
    agent.execute("PRAGMA journal_mode=WAL")
    agent.execute("SELECT * FROM sqlite_master").fetchall()  # it has the -wal open: LangGraph's close keeps it
    with SqliteStore.from_conn_string(str(path)) as lg:
        lg.setup()
        lg.put(("memories", "alice"), "food", {"text": "loves pizza in Lisbon"})
        lg.put(("memories", "bob"), "food", {"text": "prefers sushi"})
    assert b"prefers sushi" in (tmp_path / "agent.sqlite-wal").read_bytes()
    try:
        receipt = forget_in_place(path, form=LANGGRAPH, user_id="bob", session_id=None, dry_run=False, actor="dpo")
        assert receipt.disk_scrubbed, receipt.scrub_pending_reason
        assert b"prefers sushi" not in file_bytes(path)
        assert agent.execute("SELECT COUNT(*) FROM store").fetchone()[0] == 1  # the agent reads on
    finally:
        agent.close()


def test_a_file_whose_namespaces_name_the_user_first_is_erased_by_the_rule_given(tmp_path):
    path = tmp_path / "agent.sqlite"
    with SqliteStore.from_conn_string(str(path)) as lg:
        lg.setup()
        lg.put(("alice", "memories"), "food", {"text": "loves pizza in Lisbon"})
        lg.put(("bob", "memories"), "food", {"text": "prefers sushi"})
    # By LangGraph's documented shape the second label is the user: "alice" is no user here.
    typo = run_cli("forget", "--db", f"langgraph-sqlite:{path}", "--user", "alice", "--yes")
    assert typo.returncode != 0 and "alice" in typo.stderr
    assert b"loves pizza" in file_bytes(path)
    done = run_cli("forget", "--db", f"langgraph-sqlite:{path}", "--user", "alice", "--user-at", "0", "--yes")
    assert done.returncode == 0, done.stderr
    data = file_bytes(path)
    assert b"loves pizza" not in data and b"prefers sushi" in data
    with MemoryStore.open(tmp_path / "memlens.db", embedder=None) as target:
        import_langgraph_sqlite(target, read_langgraph_sqlite(path, user_at=0))
        assert target.tenant_names() == ["bob"]
    wrong = run_cli("import", "--db", tmp_path / "other.db", "--create", "--from", "chroma", "--user-at", "0", tmp_path)
    assert wrong.returncode != 0 and "--user-at" in wrong.stderr
