"""A LangGraph SqliteStore file, written with LangGraph's own API, shown where it lives
(``langgraph-sqlite:PATH``) and imported, never changed."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.sqlite")

from langgraph.store.sqlite import SqliteStore  # noqa: E402

import store  # noqa: E402
from store.compat.langgraph import MemlensStore  # noqa: E402
from store.compat.langgraph_sqlite import SESSION_PREFIX, import_langgraph_sqlite, read_langgraph_sqlite  # noqa: E402
from store.errors import ReadOnlyStoreError, SourceSchemaTooNewError, UnrecognizedSourceError  # noqa: E402
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
        with pytest.raises(ReadOnlyStoreError, match="LangGraph SqliteStore"):
            view.forget(user_id="alice")
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
