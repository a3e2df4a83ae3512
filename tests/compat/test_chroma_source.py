"""store.compat.chroma_source and the chroma: view: a directory written by loomflow's own
ChromaMemory, imported and shown where it lives, never changed."""

import asyncio
import hashlib
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("loomflow")
pytest.importorskip("chromadb")

from loomflow import Episode, Fact  # noqa: E402
from loomflow.core.types import Message, Role, ToolCall  # noqa: E402
from loomflow.memory import ChromaMemory, HashEmbedder  # noqa: E402

import store  # noqa: E402
from store import MemoryStore  # noqa: E402
from store.compat import chroma_source  # noqa: E402
from store.compat.chroma_source import import_chroma, read_chroma  # noqa: E402
from store.errors import ReadOnlyStoreError, SourceChangedError, SourceNotFoundError, UnrecognizedSourceError  # noqa: E402

from ..inspector_support import notes, open_tenant, wait_for  # noqa: E402
from ..test_store_view import assert_a_view  # noqa: E402
from .test_loomflow_sqlite import memlens  # noqa: E402

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


async def write_chroma(path: Path) -> None:
    """Episodes (one with a tool transcript) for two users and the anonymous one, and facts, one
    superseded, with loomflow's own ChromaMemory and its fact store."""
    mem = ChromaMemory.local(str(path), embedder=HashEmbedder(), with_facts=True)
    call = ToolCall(id="call-1", tool="search", args={"q": "flights"})
    for u, user in enumerate(("alice", "bob", None)):
        for i in range(3):
            await mem.remember(
                Episode(
                    id=f"{user}-ep{i}",
                    session_id=f"s{i % 2}",
                    user_id=user,
                    occurred_at=T0 + timedelta(minutes=10 * i + u),
                    input=f"question {i} from {user}",
                    output=f"answer {i}",
                    tool_transcript=[
                        Message(role=Role.ASSISTANT, content="", tool_calls=(call,)),
                        Message(role=Role.TOOL, content="two flights", name="search", tool_call_id="call-1"),
                    ]
                    if i == 1
                    else None,
                )
            )
        if user is not None:
            await mem.facts.append(Fact(user_id=user, subject=user, predicate="lives_in", object="Porto", valid_from=T0))
            await mem.facts.append(
                Fact(user_id=user, subject=user, predicate="lives_in", object="Lisbon", valid_from=T0 + timedelta(days=30))
            )


def fingerprint(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under the directory: its bytes (as a digest), size and mtime."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "vectors"
    asyncio.run(write_chroma(path))
    return path


def test_every_record_loomflow_kept_is_read_as_it_wrote_it(source):
    read = read_chroma(source)
    assert read.document["manifest"]["counts"] == {"episodes": 9, "blocks": 0, "facts": 4}
    episodes = {r["id"]: r for r in read.document["records"] if r["type"] == "episode"}
    assert episodes["alice-ep1"]["user_id"] == "alice" and episodes["None-ep0"]["user_id"] is None
    assert [m["role"] for m in episodes["bob-ep1"]["metadata"]["tool_transcript"]] == ["assistant", "tool"]
    assert episodes["alice-ep2"]["occurred_at"] == (T0 + timedelta(minutes=20)).isoformat()
    facts = sorted(
        (r["object"], r["valid_until"] is None) for r in read.document["records"] if r["type"] == "fact" and r["user_id"] == "bob"
    )
    assert facts == [("Lisbon", True), ("Porto", False)]  # loomflow closed Porto when Lisbon came


def test_the_import_command_writes_every_tenant_and_leaves_the_directory_alone(source, tmp_path):
    before = fingerprint(source)
    done = memlens("import", "--db", tmp_path / "m.db", "--create", "--from", "chroma", source)
    assert done.returncode == 0, done.stderr
    assert "loomflow ChromaMemory" in done.stdout and "the source was not changed" in done.stdout
    assert fingerprint(source) == before
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as store:
        counts = {t.user_id: (t.counts.episodes, t.counts.facts) for t in store.tenants()}
        assert counts == {"alice": (3, 2), "bob": (3, 2), None: (3, 0)}
        again = import_chroma(store, source)
        assert again.tiers["episodes"].written == 0 and again.tiers["episodes"].unchanged == 9  # nothing twice


def test_the_view_shows_and_searches_the_directory_and_never_changes_it(source):
    before = fingerprint(source)
    with store.open(f"chroma:{source}", embedder=None) as view:
        assert view.path == f"chroma:{source}" and view.read_only and not view.erases_in_place
        assert_a_view(view)
        assert [h.episode.id for h in view.recall("question 2", user_id="bob", limit=1)] == ["bob-ep2"]
        with pytest.raises(ReadOnlyStoreError, match="segment files"):
            view.forget(user_id="bob", actor="dpo")
        with pytest.raises(ReadOnlyStoreError, match="chroma:"):
            view.remember("x", user_id="bob")
        view.data_version()
    assert fingerprint(source) == before


def test_what_the_agent_writes_in_another_process_shows_at_the_next_poll(source):
    with store.open(f"chroma:{source}", embedder=None) as view:
        seen = view.data_version()
        program = textwrap.dedent(
            """
            import asyncio, sys
            from loomflow import Episode
            from loomflow.memory import ChromaMemory, HashEmbedder

            async def main():
                mem = ChromaMemory.local(sys.argv[1], embedder=HashEmbedder())
                await mem.remember(Episode(id="late", session_id="s1", user_id="carol", input="a zeppelin question", output="ok"))
            asyncio.run(main())
            """
        )
        subprocess.run([sys.executable, "-c", program, str(source)], check=True, timeout=120)
        assert view.data_version() != seen
        assert [h.episode.id for h in view.recall("zeppelin", user_id="carol")] == ["late"]


def test_a_directory_written_while_it_is_copied_is_refused(source, monkeypatch):
    real = chroma_source.copy_regular_files

    def copy_while_the_agent_writes(src, dst):
        real(src, dst)
        (source / "chroma.sqlite3").touch()

    monkeypatch.setattr(chroma_source, "copy_regular_files", copy_while_the_agent_writes)
    with pytest.raises(SourceChangedError, match="the agent is writing"):
        read_chroma(source)


def test_a_missing_or_foreign_directory_gets_a_typed_error(tmp_path):
    import chromadb

    with pytest.raises(SourceNotFoundError):
        read_chroma(tmp_path / "missing")
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(SourceNotFoundError):
        read_chroma(tmp_path / "file")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "chroma.sqlite3").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(UnrecognizedSourceError):
        read_chroma(tmp_path / "junk")
    other = chromadb.PersistentClient(path=str(tmp_path / "other"))
    other.get_or_create_collection("someone_elses").add(ids=["1"], documents=["hello"], embeddings=[[0.1, 0.2]])
    other.close()
    with pytest.raises(UnrecognizedSourceError, match="no jeeves_episodes"):
        read_chroma(tmp_path / "other")


async def test_the_inspector_shows_a_chroma_directory_and_says_why_it_cannot_erase_there(source):
    from inspector.app import make_app

    app = make_app(f"chroma:{source}", poll_seconds=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: not app.opening, what="the view")
        assert "vectors (chroma)" in app.sub_title and "keyword search only" in app.sub_title
        await open_tenant(pilot, app, "alice")
        await pilot.press("f")
        await pilot.pause(0.3)
        assert any("segment files" in note for note in notes(app))
