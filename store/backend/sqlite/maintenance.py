"""The WAL of an SQLite store truncated after an erasure (old frames keep old pages); the keyword
indexes' rewrite is :mod:`.keyword_rewrite`, and ``secure_delete`` (set at open) zeroes freed pages."""

from __future__ import annotations

import sqlite3
import time

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
