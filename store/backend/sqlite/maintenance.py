"""Maintenance that makes erased bytes leave an SQLite store's files: the FTS5 indexes
rewritten in short steps (deleted terms otherwise stay in old segments and delete markers) and the WAL
truncated (old frames keep old pages). ``secure_delete`` (set at open) zeroes freed pages."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import Connection, text

from . import fts5_structure

# Pages one merge step writes. One 'optimize' held the write lock for the whole index rewrite
# (0.75-2.9 s at 1M episodes here, with every agent write waiting); a step of 100 pages holds
# it for tens of milliseconds.
MERGE_PAGES = 100
# Each keyword index and the column a partner entry (below) is written in.
KEYWORD_INDEXES = {"episodes_fts": "input", "facts_fts": "subject"}
# A rewrite that could not show its merge dropped every delete marker starts again; it needs at
# most three rounds (a lone segment, a merge left by FTS5 that keeps markers, then a clean one).
MAX_ROUNDS = 6
# How much longer than MERGE_PAGES a step may grow while agents' writes keep FTS5 busy elsewhere.
MAX_STEP_GROWTH = 32
# The longest pause between two steps (below, _taking_turns).
MAX_PAUSE = 0.1
_PARTNER_ROWID = -1  # no memory has it: row keys start at 1
_PARTNER_TOKEN = "memlensrewritepartner"


def rewrite_keyword_indexes(write: Callable[[], AbstractContextManager[Connection]], max_steps: int = 100_000) -> bool:
    """FTS5 keeps deleted terms in old segments, and their delete markers (each holding its term)
    in newer ones, until a merge whose output is the index's oldest segment takes them in. The
    rewrite is such a merge, done in steps of ``MERGE_PAGES`` pages, each its own short write
    transaction (``write`` opens one), so agents write between them: a negative 'merge' starts a
    merge of every segment into one, and positive steps carry it on until the structure record
    (:mod:`.fts5_structure`) shows it finished. Segments agents write meanwhile hold nothing
    erased before, so the rewrite neither waits for them nor takes them in. Returns False if it
    did not finish within ``max_steps``."""
    write = _taking_turns(write)
    for table, column in KEYWORD_INDEXES.items():
        with write() as conn:
            # Positive steps merge whatever level holds two segments or more (FTS5's default
            # waits for four), so a merge of ours is never stalled behind a writer's three.
            if conn.exec_driver_sql(f"SELECT v FROM {table}_config WHERE k = 'usermerge'").scalar() != 2:
                conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('usermerge', 2)")
        done = _rewrite(write, table, column, max_steps)
        if done is None:  # a structure record this SQLite writes and this module cannot read
            with write() as conn:
                conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        elif not done:
            return False
    return True


def _taking_turns(write: Callable[[], AbstractContextManager[Connection]]) -> Callable[[], AbstractContextManager[Connection]]:
    """Each step followed by a pause as long as it held the write lock. SQLite's lock is not
    fair: a waiting writer's busy handler sleeps 1, 2, 5 ... 100 ms between tries, and steps
    that followed each other at once held the lock at nearly every try (an agent beside the
    rewrite waited 434 ms at 10,000 tenants, where no step took 60 ms)."""

    @contextmanager
    def step() -> Iterator[Connection]:
        with write() as conn:
            began = time.perf_counter()
            yield conn
        time.sleep(min(time.perf_counter() - began, MAX_PAUSE))

    return step


def _rewrite(write: Callable[[], AbstractContextManager[Connection]], table: str, column: str, max_steps: int) -> bool | None:
    steps = 0
    for _ in range(MAX_ROUNDS):
        with write() as conn:
            before = fts5_structure.read(conn, table)
            if before is None:
                return None
            if not before.segments:
                return True  # an empty index
            if len(before.segments) == 1:
                # A lone segment may be the output of a merge that kept delete markers (FTS5's
                # own automerge into a level that was not the last), and FTS5 never merges a
                # segment alone: an entry written and deleted gives it a partner (two segments,
                # the document totals unchanged), and the merge of the three drops all markers.
                conn.execute(
                    text(f"INSERT INTO {table}(rowid, {column}) VALUES (:rowid, :token)"),
                    {"rowid": _PARTNER_ROWID, "token": _PARTNER_TOKEN},
                )
                conn.execute(
                    text(f"INSERT INTO {table}({table}, rowid, {column}) VALUES ('delete', :rowid, :token)"),
                    {"rowid": _PARTNER_ROWID, "token": _PARTNER_TOKEN},
                )
                before = fts5_structure.read(conn, table)
                if before is None:
                    return None
            conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('merge', {-MERGE_PAGES})")
            after = fts5_structure.read(conn, table)
            if after is None:
                return None
        steps += 1
        clean = fts5_structure.merges_all_into_oldest(before)
        # The step went on with the first merge under way, if it did not finish it (above: when
        # ``clean``, one of every segment of ``before``, or all but its own output).
        ours = next(iter(after.merges()), None)
        pages = MERGE_PAGES
        while ours is not None and after.in_progress(ours):
            clean = clean and after.writes_oldest(ours)
            if steps >= max_steps:
                return False
            written = after.written(ours)
            with write() as conn:
                conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('merge', {pages})")
                after = fts5_structure.read(conn, table)
                if after is None:
                    return None
            steps += 1
            # A step first merges any lower level holding more segments than ours takes in
            # (agents' new ones): while such work takes the whole step, the next is twice as
            # long, so the rewrite always outpaces the writers; it is short again once ours moves.
            starved = after.in_progress(ours) and after.written(ours) == written
            pages = min(pages * 2, MERGE_PAGES * MAX_STEP_GROWTH) if starved else MERGE_PAGES
        if clean:
            return True
    return False


READER_HOLDS_WAL = (
    "another connection (a reader in this or another process) still holds a snapshot from before the erasure, "
    "so the WAL cannot be emptied yet; the scrub stays pending and is retried on this store's next write, "
    "the next read-write open, or `memlens scrub`"
)


def truncate_wal(raw: sqlite3.Connection, budget: float = 1.0, pause: float = 0.05) -> tuple[bool, str | None]:
    """Copy the WAL into the database and truncate it to zero bytes, so old frames are gone.

    A TRUNCATE checkpoint waits for readers of old snapshots *while holding the write lock*:
    with the store's 10 s busy timeout every agent write stalled behind it (10 s per attempt,
    3 writes in 40 s failed). So the busy handler is off for the checkpoint: each attempt
    takes the write lock only if it is free and gives it back at once if a reader is in the
    way; the retries wait with no lock held. A PASSIVE checkpoint first copies the bulk of
    the WAL without the write lock, so the TRUNCATE attempt itself is short.
    Returns (done, why not).
    """
    previous = raw.execute("PRAGMA busy_timeout").fetchone()[0]
    raw.execute("PRAGMA busy_timeout = 0")
    deadline = time.monotonic() + budget
    try:
        while True:
            raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            busy, _log, _done = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy == 0:
                return True, None
            if time.monotonic() + pause > deadline:
                return False, READER_HOLDS_WAL
            time.sleep(pause)
    finally:
        raw.execute(f"PRAGMA busy_timeout = {int(previous)}")
