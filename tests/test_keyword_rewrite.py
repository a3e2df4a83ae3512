"""The keyword-index rewrite that makes erased terms leave an SQLite store, held against SQLite's
own FTS5 on many index histories: the structure record is read as FTS5 writes it, the rewrite's
prediction of which merges drop delete markers is what FTS5 does, and after the rewrite no
erased term is in any page of the index while every live document is still found, with agents
writing between its steps."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Connection, create_engine, event

from store.backend.sqlite import fts5_structure, keyword_rewrite

TABLE = "docs_fts"


def engine_at(path: Path):
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _secure(dbapi, _record) -> None:
        dbapi.execute("PRAGMA secure_delete = ON")
        dbapi.execute("PRAGMA synchronous = OFF")  # thousands of commits; durability is not under test

    with engine.begin() as conn:
        # As the store's keyword indexes are: external content, kept by triggers.
        conn.exec_driver_sql("CREATE TABLE docs (pk INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        conn.exec_driver_sql(f"CREATE VIRTUAL TABLE {TABLE} USING fts5(body, content='docs', content_rowid='pk', tokenize='unicode61')")
        conn.exec_driver_sql(
            f"CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO {TABLE}(rowid, body) VALUES (new.pk, new.body); END"
        )
        conn.exec_driver_sql(
            f"CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN "
            f"INSERT INTO {TABLE}({TABLE}, rowid, body) VALUES ('delete', old.pk, old.body); END"
        )
        # Small pages, so that small histories have segments of many pages and merges of many steps.
        conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('pgsz', 64)")
    return engine


def term(rng: random.Random) -> str:
    return "z" + "".join(rng.choice("abcdefghijklmnopqrstuvwxy") for _ in range(15))


class History:
    """An index built by a random sequence of FTS5's own operations: batches of documents (each
    commit a segment), deletions, partial merges left under way, automerge settings, optimizes."""

    def __init__(self, engine, seed: int) -> None:
        self.engine, self.rng = engine, random.Random(seed)
        self.live: dict[int, str] = {}
        self.erased: list[str] = []
        self.next_rowid = 1

    def add(self, conn: Connection, count: int) -> None:
        for _ in range(count):
            words = [term(self.rng) for _ in range(self.rng.randint(1, 4))]
            conn.exec_driver_sql("INSERT INTO docs (pk, body) VALUES (?, ?)", (self.next_rowid, " ".join(words)))
            self.live[self.next_rowid] = " ".join(words)
            self.next_rowid += 1

    def delete(self, conn: Connection, count: int) -> None:
        for rowid in self.rng.sample(sorted(self.live), min(count, len(self.live))):
            conn.exec_driver_sql("DELETE FROM docs WHERE pk = ?", (rowid,))
            self.erased.extend(self.live.pop(rowid).split())

    def raise_small_segments(self, count: int) -> None:
        """Single-document segments merged up to ever higher levels, which later, bigger outputs
        pull back down (FTS5's promotion), leaving empty levels above the rest: the shape in
        which FTS5 merges a level into one that is not the last and keeps delete markers."""
        for _ in range(count):
            with self.engine.begin() as conn:
                self.add(conn, 1)
            with self.engine.begin() as conn:
                conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('merge', -50)")

    def settle(self) -> None:
        """A few positive merges, as FTS5's automerge makes after writes."""
        for _ in range(self.rng.randint(0, 4)):
            with self.engine.begin() as conn:
                conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('merge', {self.rng.choice([1, 3, 10, 100])})")

    def jumble(self, steps: int) -> None:
        """Small batches, deletions and merges of a few pages (some left under way): after
        raise_small_segments, the shapes in which every segment shares a level that is not the
        last, or a merge is under way into one, so that FTS5's merge keeps delete markers."""
        for _ in range(steps):
            with self.engine.begin() as conn:
                if self.rng.random() < 0.7 or not self.live:
                    self.add(conn, self.rng.randint(1, 10))
                else:
                    self.delete(conn, 3)
            if self.rng.random() < 0.4:
                with self.engine.begin() as conn:
                    conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('merge', {self.rng.choice([1, 2, 5, 10])})")

    def grow(self, steps: int) -> None:
        for _ in range(steps):
            with self.engine.begin() as conn:
                op = self.rng.random()
                if op < 0.5 or not self.live:
                    self.add(conn, self.rng.randint(1, 12))
                elif op < 0.75:
                    self.delete(conn, self.rng.randint(1, 5))
                elif op < 0.9:
                    conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('usermerge', {self.rng.choice([2, 4])})")
                    conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('merge', {self.rng.choice([1, 2, 3, -1, -2])})")
                elif op < 0.97:
                    conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('automerge', {self.rng.choice([0, 2, 4, 8])})")
                else:
                    conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}) VALUES ('optimize')")


def structure(engine) -> fts5_structure.Structure:
    with engine.begin() as conn:
        found = fts5_structure.read(conn, TABLE)
    assert found is not None
    return found


def index_pages(path: Path) -> bytes:
    with sqlite3.connect(path) as conn:
        return b"".join(bytes(block) for (block,) in conn.execute(f"SELECT block FROM {TABLE}_data"))


def test_the_structure_record_is_read_as_fts5_writes_it(tmp_path):
    engine = engine_at(tmp_path / "s.db")
    history = History(engine, 1)
    history.grow(60)
    with engine.begin() as conn:
        read = fts5_structure.read(conn, TABLE)
        # Every segment the record names has its pages in the index, and no other segment does.
        on_disk = set(conn.exec_driver_sql(f"SELECT DISTINCT segid FROM {TABLE}_idx").scalars())
    assert read is not None and read.segments == on_disk
    assert len(read.segments) >= 3  # the history left more than one segment to read
    # A layout this module does not read is refused, not misread.
    assert fts5_structure.parse(b"\x00\x00\x00\x01\xff\x00\x00\x01\x05") is None
    assert fts5_structure.parse(b"\x00\x00\x00\x01\x03\x02") is None


def keyword_bytes(history: History, path: Path) -> list[str]:
    """The erased terms whose bytes are still in the index's pages (and in no live document)."""
    pages = index_pages(path)
    live = {word for body in history.live.values() for word in body.split()}
    return [t for t in history.erased if t[-10:].encode() in pages and t not in live]


def shaped(tmp_path: Path, seed: int) -> tuple[History, Path]:
    """A history of either kind: long random growth, or raised segments and a jumble."""
    path = tmp_path / f"{seed}.db"
    history = History(engine_at(path), seed)
    if seed % 2:
        history.raise_small_segments(6 if seed % 4 == 1 else 9)
        history.jumble(seed % 9)
    else:
        history.grow(20 + seed % 40)
    return history, path


def test_the_prediction_of_a_marker_dropping_merge_is_what_fts5_does(tmp_path):
    """merges_all_into_oldest mirrors FTS5's choice: a one-page negative merge takes every
    segment into an output alone on the last level exactly when predicted, over histories
    that give both answers."""
    outcomes: Counter[tuple[bool, bool]] = Counter()
    for seed in range(300):
        history, _path = shaped(tmp_path, seed)
        with history.engine.begin() as conn:
            before = fts5_structure.read(conn, TABLE)
            conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('merge', -1)")
            after = fts5_structure.read(conn, TABLE)
        history.engine.dispose()
        assert before is not None and after is not None
        ours = after.merges()[:1]  # the merge the step went on with, unless it finished
        if len(before.segments) >= 2 and not ours and len(after.segments) <= 1:
            continue  # the merge finished in its one page: nothing to observe
        # Every segment of before is in it, or is its output (a merge it resumed).
        covered = bool(ours) and before.segments <= set(ours[0].inputs) | {after.levels[ours[0].level + 1].segments[-1]}
        observed = covered and after.writes_oldest(ours[0])
        assert fts5_structure.merges_all_into_oldest(before) == observed, (seed, before, after)
        outcomes[observed, len(before.segments) >= 2] += 1
    # Both answers were put to the test, the negative one on indexes of two segments or more.
    assert outcomes[True, True] >= 100 and outcomes[False, True] >= 3, outcomes


def test_a_lone_segment_that_kept_delete_markers_is_rewritten_clean(tmp_path, monkeypatch):
    """FTS5 never merges a lone segment, so one whose merge kept delete markers (and the erased
    terms in them) would keep them for good: the rewrite gives it a partner and merges both."""
    monkeypatch.setattr(keyword_rewrite, "KEYWORD_INDEXES", {TABLE: "body"})
    rewritten = 0
    for seed in range(1, 300, 2):
        history, path = shaped(tmp_path, seed)
        with history.engine.begin() as conn:
            before = fts5_structure.read(conn, TABLE)
            assert before is not None
            if len(before.segments) < 2 or fts5_structure.merges_all_into_oldest(before):
                continue
        # That merge, carried on a page a step, leaves a lone segment that keeps the markers
        # (done in one long step, FTS5 dropped them on these histories).
        lone = before
        for _ in range(10_000):
            with history.engine.begin() as conn:
                conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('merge', -1)")
                lone = fts5_structure.read(conn, TABLE)
            if lone is None or not lone.merges():
                break
        if lone is None or len(lone.segments) != 1 or not keyword_bytes(history, path):
            continue  # not the shape under test
        assert keyword_rewrite.rewrite_keyword_indexes(history.engine.begin)
        assert keyword_bytes(history, path) == []
        rewritten += 1
    assert rewritten >= 2


@pytest.mark.parametrize("seed", range(80))
def test_after_the_rewrite_no_erased_term_is_in_the_index_and_every_live_document_is_found(tmp_path, seed, monkeypatch):
    path = tmp_path / "s.db"
    engine = engine_at(path)
    history = History(engine, 1000 + seed)
    history.raise_small_segments(seed % 6)
    history.grow(10 + seed)
    with engine.begin() as conn:
        history.delete(conn, max(1, len(history.live) // 3))
    history.settle()
    if not keyword_bytes(history, path):
        pytest.skip("FTS5's own merges already dropped every erased term")  # nothing left to rewrite away

    writer = random.Random(seed)

    @contextmanager
    def write() -> Iterator[Connection]:
        # An agent writes between steps (each write its own commit, so its own new segment).
        if writer.random() < 0.5:
            with engine.begin() as conn:
                history.add(conn, writer.randint(1, 3))
        with engine.begin() as conn:
            yield conn

    monkeypatch.setattr(keyword_rewrite, "KEYWORD_INDEXES", {TABLE: "body"})
    monkeypatch.setattr(keyword_rewrite, "MERGE_PAGES", writer.choice([1, 2, 5]))
    assert keyword_rewrite.rewrite_keyword_indexes(write)

    assert keyword_bytes(history, path) == []
    with engine.begin() as conn:
        conn.exec_driver_sql(f"INSERT INTO {TABLE}({TABLE}) VALUES ('integrity-check')")
        for rowid, body in writer.sample(sorted(history.live.items()), min(20, len(history.live))):
            found = conn.exec_driver_sql(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?", (body.split()[0],)).scalars().all()
            assert rowid in found
        # Every entry is a live document's (the partner entry, if one was written, is gone again).
        (entries,) = conn.exec_driver_sql(f"SELECT count(*) FROM {TABLE}_docsize").one()
    assert entries == len(history.live)


def test_a_structure_record_it_cannot_read_is_rewritten_by_one_optimize(tmp_path, monkeypatch):
    """A later SQLite's layout is not guessed at: the rewrite falls back to FTS5's own optimize,
    which leaves no erased term either."""
    history, path = shaped(tmp_path, 2)
    with history.engine.begin() as conn:
        history.delete(conn, max(1, len(history.live) // 3))
    assert keyword_bytes(history, path)
    monkeypatch.setattr(keyword_rewrite, "KEYWORD_INDEXES", {TABLE: "body"})
    monkeypatch.setattr(fts5_structure, "read", lambda conn, table: None)
    assert keyword_rewrite.rewrite_keyword_indexes(history.engine.begin)
    assert keyword_bytes(history, path) == []
