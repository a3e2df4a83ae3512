"""Maintenance that makes erased bytes leave an SQLite store's files: the FTS5 indexes
rewritten in short steps (deleted terms otherwise stay in old segments) and the WAL
truncated (old frames keep old pages). ``secure_delete`` (set at open) zeroes freed pages."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlalchemy import Connection

# Pages one merge step writes. One 'optimize' held the write lock for the whole index rewrite
# (0.75-2.9 s at 1M episodes here, with every agent write waiting); a step of 100 pages holds
# it for tens of milliseconds.
MERGE_PAGES = 100
KEYWORD_INDEXES = ("episodes_fts", "facts_fts")


# A segment's pages are rows of the index's ``_data`` table keyed segid << 37 | page number.
_FIRST_PAGES = "SELECT segid, (SELECT block FROM {table}_data WHERE id = (segid << 37) + 1) FROM (SELECT DISTINCT segid FROM {table}_idx)"


def _segments(conn: Connection, table: str) -> set[tuple[int, bytes | None]]:
    """The FTS5 index's segments now, each by its number and its first page: FTS5 gives a
    merged-away segment's number to the next new one, so the number alone would take a new
    segment for an old one (and the rewrite would go on as long as agents write)."""
    return {(segid, page) for segid, page in conn.exec_driver_sql(_FIRST_PAGES.format(table=table))}


def rewrite_keyword_indexes(write: Callable[[], AbstractContextManager[Connection]], max_steps: int = 100_000) -> bool:
    """FTS5 keeps deleted terms in old segments until they are merged. A negative 'merge' is an
    'optimize' done in steps: each step folds every segment into one merge and writes
    ``MERGE_PAGES`` pages of it; once the segments that existed when this began are all merged
    away, none of them (and no deleted term) is left, and secure_delete has zeroed their pages.
    Segments written since (an agent's writes meanwhile) hold nothing that was erased before, so
    the rewrite neither waits for them nor takes them in: restarting the merge with them and
    waiting for a step with nothing to do, one writer every 10 ms made it rewrite the whole index
    again and again (1,178 steps and 45 s at 10,000 tenants, against 64 steps and 0.9 s now). Each step is its own short write
    transaction (``write`` opens one). Returns False if it did not finish within ``max_steps``."""
    for table in KEYWORD_INDEXES:
        with write() as conn:
            older = _segments(conn, table)
        pages = -MERGE_PAGES
        for _ in range(max_steps):
            with write() as conn:
                if not older & _segments(conn, table):
                    break
                before: int = conn.exec_driver_sql("SELECT total_changes()").scalar_one()
                conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('merge', {pages})")
                worked = conn.exec_driver_sql("SELECT total_changes()").scalar_one() - before >= 2
            if not worked and pages < 0:
                break  # one segment, nothing deleted in it: nothing to merge
            # A negative step starts a merge of every segment; positive ones carry it on, where
            # a negative one would start it again with every segment written since. One that
            # finds nothing to carry on starts it again.
            pages = MERGE_PAGES if worked else -MERGE_PAGES
        else:
            return False
        with write() as conn:
            if len(_segments(conn, table)) > 1:
                # An agent wrote during the rewrite: its segments sat on other levels, so the
                # stepped merge's output was not the index's oldest segment and FTS5 kept the
                # erased rows' delete markers in it, each holding its term (found beside a writer
                # under load: the erased term in a segment the rewrite had made). One 'optimize'
                # under the write lock folds every segment into one, which drops them.
                conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    return True


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
