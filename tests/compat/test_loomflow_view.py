"""store.compat.loomflow_view: a loomflow SqliteMemory file shown where it lives, read-only and
live, through the store's read API, the CLI and the inspector; the file never changes."""

import asyncio
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("loomflow")

from loomflow import Episode  # noqa: E402
from loomflow.memory import HashEmbedder  # noqa: E402
from loomflow.memory.sqlite import SqliteMemory  # noqa: E402

import store  # noqa: E402
from store import MemoryStore  # noqa: E402
from store.compat import loomflow_view  # noqa: E402
from store.compat.loomflow_view import LoomflowView  # noqa: E402
from store.errors import ReadOnlyStoreError, SourceChangedError, SourceNotFoundError, UnrecognizedSourceError  # noqa: E402

from ..inspector_support import open_tenant, showing, wait_for  # noqa: E402
from ..test_store_view import assert_a_view  # noqa: E402
from .test_loomflow_sqlite import fingerprint, memlens, write_loomflow  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def loomflow_in_another_process(source: Path, script: str) -> None:
    """Run ``script`` (awaiting on ``mem``, loomflow's own SqliteMemory over ``source``) in a process of its own."""
    program = textwrap.dedent(
        """
        import asyncio, sys
        from loomflow import Episode
        from loomflow.memory import HashEmbedder
        from loomflow.memory.sqlite import SqliteMemory

        async def main():
            mem = SqliteMemory(sys.argv[1], embedder=HashEmbedder())
        {body}
        asyncio.run(main())
        """
    ).format(body=textwrap.indent(textwrap.dedent(script), " " * 4))
    subprocess.run([sys.executable, "-c", program, str(source)], check=True, timeout=60)


@pytest.fixture
def mirrors(tmp_path, monkeypatch):
    """Where this test's views keep their private mirrors: a list of those that exist now."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return lambda: sorted(folder.glob("memlens-view-*"))


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "bot.db"
    asyncio.run(write_loomflow(path))
    return path


def test_every_tier_loomflow_keeps_is_shown_and_searchable(source):
    with store.open(f"loomflow-sqlite:{source}", embedder=None) as view:
        assert isinstance(view, LoomflowView) and view.read_only
        assert_a_view(view)  # every member the inspector and the command line use, taken as the store takes it
        assert view.path == f"loomflow-sqlite:{source}"
        counts = {t.user_id: (t.counts.episodes, t.counts.facts, t.counts.blocks) for t in view.tenants()}
        assert counts == {"alice": (4, 2, 2), "bob": (4, 2, 2), None: (3, 0, 2)}
        assert view.working(user_id="alice")[0].content == "alice likes tea"
        # Superseded facts are kept with their interval, as loomflow closed it.
        facts = view.facts(user_id="bob", include_history=True)
        assert sorted((f.object, f.valid_until is None) for f in facts) == [("Lisbon", True), ("Porto", False)]
        transcript = next(e for e in view.episodes(user_id="alice").items if e.id == "alice-ep1").metadata["tool_transcript"]
        assert [m["role"] for m in transcript] == ["assistant", "tool"]
        hits = view.recall("question 2", user_id="bob", limit=2)
        assert hits[0].episode.id == "bob-ep2" and {h.episode.user_id for h in hits} == {"bob"}  # the tenant partition holds


def test_the_source_is_byte_identical_after_opening_reading_polling_and_closing(source):
    before = fingerprint(source)
    view = store.open(f"loomflow-sqlite:{source}", embedder=None)
    view.recall("answer", user_id="alice")
    view.data_version()
    view.export(user_id="alice")
    view.close()
    assert fingerprint(source) == before


def test_the_source_is_not_changed_while_loomflow_holds_it_open_with_its_wal(tmp_path):
    source = tmp_path / "bot.db"
    holder = sqlite3.connect(source)  # another process of the agent keeps the WAL from being checkpointed
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("PRAGMA user_version = 1")
    holder.commit()
    try:
        asyncio.run(write_loomflow(source))
        before = fingerprint(source)
        assert before["-wal"][1] > 0
        with loomflow_view.open_loomflow_view(source) as view:
            assert sum(t.counts.episodes for t in view.tenants()) == 11  # read through the WAL
            view.data_version()
        assert fingerprint(source) == before
    finally:
        holder.close()


def test_what_the_agent_writes_in_another_process_shows_at_the_next_poll(source):
    with loomflow_view.open_loomflow_view(source) as view:
        seen = view.data_version()
        assert view.data_version() == seen  # nothing changed: nothing read again
        loomflow_in_another_process(
            source,
            """
            await mem.remember(Episode(id="late", session_id="s1", user_id="alice", input="a zeppelin question", output="ok"))
            """,
        )
        assert view.data_version() != seen
        assert [h.episode.id for h in view.recall("zeppelin", user_id="alice")] == ["late"]


def test_records_loomflow_deleted_or_changed_leave_the_view_at_the_next_poll(source, mirrors):
    with loomflow_view.open_loomflow_view(source) as view:
        seen = view.data_version()
        loomflow_in_another_process(
            source,
            """
            await mem.forget(user_id="bob")
            await mem.update_block("persona", "alice now likes coffee", user_id="alice")
            """,
        )
        assert view.data_version() != seen
        assert sorted(str(t.user_id) for t in view.tenants()) == ["None", "alice"]
        assert {b.name: b.content for b in view.working(user_id="alice")}["persona"] == "alice now likes coffee"
        # Erased in the source, so gone from what the view keeps too: the mirror that held bob is
        # deleted, and the one that replaced it never held him.
        (kept,) = mirrors()
        assert all(b"bob-ep" not in f.read_bytes() and b"bob likes tea" not in f.read_bytes() for f in kept.iterdir())
    assert mirrors() == []


def test_a_reading_that_meets_the_agent_writing_keeps_the_view_and_tries_again(source, monkeypatch):
    with loomflow_view.open_loomflow_view(source) as view:
        seen = view.data_version()
        loomflow_in_another_process(
            source, 'await mem.remember(Episode(id="late", session_id="s1", user_id="alice", input="q", output="a"))'
        )
        real = loomflow_view.read_loomflow_sqlite

        def torn(path):
            raise SourceChangedError(f"{path} changed while it was being read")

        monkeypatch.setattr(loomflow_view, "read_loomflow_sqlite", torn)
        assert view.data_version() == seen
        assert "late" not in {e.id for e in view.episodes(user_id="alice").items}
        monkeypatch.setattr(loomflow_view, "read_loomflow_sqlite", real)
        assert view.data_version() != seen
        assert "late" in {e.id for e in view.episodes(user_id="alice").items}


@pytest.mark.parametrize(
    "write",
    [
        lambda v: v.remember("x", user_id="alice"),
        lambda v: v.update_block("persona", "x", user_id="alice"),
        lambda v: v.add_fact("alice", "likes", "x", user_id="alice"),
        lambda v: v.session("s0", user_id="alice").set("k", 1),
    ],
    ids=["remember", "update_block", "add_fact", "session-set"],
)
def test_every_write_but_an_erasure_is_refused_naming_the_source_and_nothing_changes(source, write):
    before = fingerprint(source)
    with loomflow_view.open_loomflow_view(source) as view:
        held = {k: v for k, v in view.export(user_id="alice").items() if k != "manifest"}
        with pytest.raises(ReadOnlyStoreError, match=r"loomflow-sqlite:.*bot\.db is a loomflow agent's memory"):
            write(view)
        assert {k: v for k, v in view.export(user_id="alice").items() if k != "manifest"} == held
    assert fingerprint(source) == before


def test_a_missing_or_foreign_file_gets_a_typed_error_and_no_mirror_is_left(tmp_path, mirrors):
    with pytest.raises(SourceNotFoundError):
        store.open(f"loomflow-sqlite:{tmp_path / 'missing.db'}")
    (tmp_path / "notes.txt").write_text("not a database at all")
    with pytest.raises(UnrecognizedSourceError):
        store.open(f"loomflow-sqlite:{tmp_path / 'notes.txt'}")
    with MemoryStore.open(tmp_path / "memlens.db", embedder=None) as own:
        own.remember("a memlens store is not loomflow's", user_id="u")
    with pytest.raises(UnrecognizedSourceError):
        store.open(f"loomflow-sqlite:{tmp_path / 'memlens.db'}")
    assert mirrors() == []


def test_closing_the_view_removes_its_private_mirror(source, mirrors):
    view = loomflow_view.open_loomflow_view(source)
    (folder,) = mirrors()
    assert (folder.stat().st_mode & 0o077) == 0  # the owner's alone
    view.close()
    assert mirrors() == []


def test_the_stats_command_reads_the_source_in_place(source):
    before = fingerprint(source)
    done = memlens("stats", f"loomflow-sqlite:{source}")
    assert done.returncode == 0, done.stderr
    assert "alice" in done.stdout and "bob" in done.stdout
    assert fingerprint(source) == before


async def test_the_inspector_shows_the_source_read_only_refreshes_while_the_agent_writes_and_erases_in_place(source):
    from inspector.app import make_app
    from inspector.screens.dialogs import ForgetScreen, ReceiptScreen

    before_open = fingerprint(source)
    app = make_app(f"loomflow-sqlite:{source}", poll_seconds=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: not app.opening, what="the view")
        assert "bot.db (loomflow-sqlite)" in app.sub_title and "read-only" in app.sub_title
        assert "keyword search only" in app.sub_title
        await open_tenant(pilot, app, "alice")
        assert fingerprint(source) == before_open
        mem = SqliteMemory(source, embedder=HashEmbedder())
        await mem.remember(Episode(id="late", session_id="s1", user_id="carol", input="hello", output="hi"))
        await asyncio.sleep(0)
        await wait_for(pilot, lambda: "carol" in [t.user_id for t in app.main_screen.tenants], what="carol, written meanwhile")
        # The inspector's forget erases from the file, through loomflow, and shows the receipt.
        await open_tenant(pilot, app, "bob")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen) and not app.screen.query_one("#erase").disabled, what="dialog")
        await pilot.click("#erase")
        await wait_for(pilot, lambda: showing(app, ReceiptScreen), what="receipt")
        assert app.screen.receipt.counts["episodes"] == 4 and app.screen.receipt.disk_scrubbed
        await pilot.press("enter")
        await wait_for(pilot, lambda: all(t.user_id != "bob" for t in app.main_screen.tenants), what="bob gone from the list")
    assert held_in_files(source, BOBS_TEXTS) == {}


# --- erasing in place: memlens forget --db loomflow-sqlite:PATH ---------------------------------


# What only bob's records hold in the file write_loomflow wrote.
BOBS_TEXTS = {b"bob likes tea", b"question 0 from bob", b"question 1 from bob", b"bob-ep0", b"bob's"}


def held_in_files(path: Path, needles: set[bytes]) -> dict[str, set[bytes]]:
    found = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        side = path.parent / (path.name + suffix)
        if side.exists():
            data = side.read_bytes()
            found[side.name] = {n for n in needles if n in data}
    return {name: hits for name, hits in found.items() if hits}


def test_forget_in_place_erases_through_loomflow_scrubs_and_keeps_the_file_valid(source):
    assert held_in_files(source, BOBS_TEXTS)  # the scan sees them before
    done = memlens("forget", "--db", f"loomflow-sqlite:{source}", "--user", "bob", "--yes", "--actor", "dpo")
    assert done.returncode == 0, done.stderr
    assert "erased for" in done.stdout and "episodes" in done.stdout and "receipt digest" in done.stdout
    assert "after: the file read again holds none of these records" in done.stdout
    assert "warning" not in done.stderr
    assert held_in_files(source, BOBS_TEXTS) == {}  # not in the file, nor any side file

    async def loomflow_reads_it():
        mem = SqliteMemory(source, embedder=HashEmbedder())
        return (await mem.export(user_id="bob"), await mem.recall("question", user_id="alice", limit=10))

    bob, alice = asyncio.run(loomflow_reads_it())
    assert bob.episodes == [] and bob.facts == [] and bob.blocks == []
    assert {e.id for e in alice} >= {"alice-ep0", "alice-ep1", "alice-ep2"}  # the others' memories answer as before


def test_the_receipt_counts_what_went_and_a_dry_run_changes_nothing(source):
    before = fingerprint(source)
    with store.open(f"loomflow-sqlite:{source}", embedder=None) as view:
        planned = view.forget(user_id="bob", dry_run=True, actor="dpo")
        assert fingerprint(source) == before
        assert planned.counts == {"episodes": 4, "facts": 2, "blocks": 2, "tool_transcript_messages": 2}
        receipt = view.forget(user_id="bob", actor="dpo")
        assert receipt.counts == planned.counts and receipt.disk_scrubbed and receipt.out_of_reach
        assert "bob" not in [t.user_id for t in view.tenants()]  # the view read the file again


def test_one_session_is_erased_in_place_and_the_rest_of_the_user_stays(source):
    with store.open(f"loomflow-sqlite:{source}", embedder=None) as view:
        receipt = view.forget(user_id="alice", session_id="s1", actor="dpo")
        assert receipt.counts["episodes"] == 1 and receipt.counts["blocks"] == 0
        assert sorted(e.session_id for e in view.episodes(user_id="alice").items) == ["s0", "s0", "s9"]
    assert held_in_files(source, {b"question 1 from alice"}) == {}


def test_forget_in_place_is_refused_while_another_process_holds_the_write_lock(source):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()", str(source)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = fingerprint(source)
        done = memlens("forget", "--db", f"loomflow-sqlite:{source}", "--user", "bob", "--yes")
        assert done.returncode != 0
        assert "write lock" in done.stderr and "nothing was erased" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert fingerprint(source) == before
    finally:
        holder.communicate("")
    with store.open(f"loomflow-sqlite:{source}", embedder=None) as view:
        assert "bob" in [t.user_id for t in view.tenants()]


@pytest.mark.parametrize(
    ("arguments", "error", "says"),
    [
        ({"user_id": "bobby"}, "UnknownTenantError", "bob"),
        ({"user_id": "bob", "session_id": "nope"}, "UnknownSessionError", "no session"),
        ({"user_id": "bob", "before": "yesterday"}, "InvalidInputError", "whole user or one session"),
        ({"user_id": "bob", "facts_only": True}, "InvalidInputError", "whole user or one session"),
        ({}, "InvalidInputError", "needs user_id"),
    ],
)
def test_a_forget_in_place_aimed_wrong_gets_a_typed_error_and_nothing_changes(source, arguments, error, says):
    from datetime import UTC, datetime

    if arguments.get("before") == "yesterday":
        arguments["before"] = datetime(2026, 1, 1, tzinfo=UTC)
    before = fingerprint(source)
    with store.open(f"loomflow-sqlite:{source}", embedder=None) as view, pytest.raises(Exception) as raised:
        view.forget(actor="dpo", **arguments)
    assert type(raised.value).__name__ == error and says in str(raised.value)
    assert fingerprint(source) == before


def test_forget_in_place_scrubs_the_wal_the_agent_keeps_open(tmp_path):
    """An agent's open connection keeps loomflow's -wal alive: its frames still held bob's pages
    after loomflow's own forget (secure_delete zeroes the file's cells, not the WAL's old frames)."""
    source = tmp_path / "bot.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA user_version = 1'); print('open', flush=True); sys.stdin.read()",
         str(source)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "open"
        asyncio.run(write_loomflow(source))
        assert "bot.db-wal" in held_in_files(source, BOBS_TEXTS)
        with store.open(f"loomflow-sqlite:{source}", embedder=None) as view:
            receipt = view.forget(user_id="bob", actor="dpo")
        assert receipt.disk_scrubbed, receipt.scrub_pending_reason
        assert held_in_files(source, BOBS_TEXTS) == {}
    finally:
        holder.communicate("")


def test_a_reader_mid_read_leaves_the_receipt_saying_so_and_the_scrub_command_finishes(tmp_path):
    source = tmp_path / "bot.db"
    reader = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA user_version = 1'); print('open', flush=True); "
         "sys.stdin.readline(); c.execute('BEGIN'); c.execute('SELECT count(*) FROM episodes').fetchone(); "
         "print('reading', flush=True); sys.stdin.read()", str(source)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout.readline().strip() == "open"
        asyncio.run(write_loomflow(source))
        reader.stdin.write("go\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "reading"  # a read transaction holds a WAL snapshot
        with store.open(f"loomflow-sqlite:{source}", embedder=None) as view:
            receipt = view.forget(user_id="bob", actor="dpo")
        assert not receipt.disk_scrubbed
        assert "memlens scrub loomflow-sqlite:" in receipt.scrub_pending_reason
    finally:
        reader.communicate("")
    done = memlens("scrub", f"loomflow-sqlite:{source}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert held_in_files(source, BOBS_TEXTS) == {}
