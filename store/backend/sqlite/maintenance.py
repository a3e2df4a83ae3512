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


def rewrite_keyword_indexes(write: Callable[[], AbstractContextManager[Connection]], max_steps: int = 100_000) -> bool:
    """FTS5 keeps deleted terms in old segments until they are merged. A negative 'merge' is an
    'optimize' done in steps: each step folds every segment (new ones included) into one merge
    and writes ``MERGE_PAGES`` pages of it, so once a step finds nothing to do the index is one
    segment without the deleted terms, as after 'optimize'; secure_delete zeroes freed pages.
    Each step is its own short write transaction (``write`` opens one). Returns False if
    concurrent writes kept it from finishing within ``max_steps``."""
    for table in KEYWORD_INDEXES:
        for _ in range(max_steps):
            with write() as conn:
                before: int = conn.exec_driver_sql("SELECT total_changes()").scalar_one()
                conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('merge', -{MERGE_PAGES})")
                worked = conn.exec_driver_sql("SELECT total_changes()").scalar_one() - before >= 2
            if not worked:
                break
        else:
            return False
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
