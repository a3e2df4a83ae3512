"""The FTS5 keyword indexes rewritten so that erased terms leave an SQLite store's file: FTS5
keeps deleted terms in old segments, and the delete markers that hide them (each holding its
term) in newer ones, until a merge whose output is the index's oldest segment takes them in."""

from __future__ import annotations

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
        try:
            done = _rewrite(write, table, column, max_steps)
        except _UnreadableStructure:  # a structure record this SQLite writes and this module cannot read
            with write() as conn:
                conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            done = True
        if not done:
            return False
    return True


class _UnreadableStructure(Exception):
    pass


def _structure(conn: Connection, table: str) -> fts5_structure.Structure:
    found = fts5_structure.read(conn, table)
    if found is None:
        raise _UnreadableStructure(table)
    return found


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


def _rewrite(write: Callable[[], AbstractContextManager[Connection]], table: str, column: str, max_steps: int) -> bool:
    steps = 0
    for _ in range(MAX_ROUNDS):
        with write() as conn:
            before = _structure(conn, table)
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
                before = _structure(conn, table)
            conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('merge', {-MERGE_PAGES})")
            after = _structure(conn, table)
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
                after = _structure(conn, table)
            steps += 1
            # A step first merges any lower level holding more segments than ours takes in
            # (agents' new ones): while such work takes the whole step, the next is twice as
            # long, so the rewrite always outpaces the writers; it is short again once ours moves.
            starved = after.in_progress(ours) and after.written(ours) == written
            pages = min(pages * 2, MERGE_PAGES * MAX_STEP_GROWTH) if starved else MERGE_PAGES
        if clean:
            return True
    return False
