"""Change detection on PostgreSQL: a counter that moves whenever anyone, in any process on any
machine, commits a write to the store; what SQLite's ``PRAGMA data_version`` gives the store's
caches and the inspector's live refresh.

Every table's statement trigger sends a notification on ``memlens_changes`` (schema, in
:mod:`.ddl`); PostgreSQL delivers it to every listening connection of the same database when
the writing transaction commits, and never for a rollback. One dedicated connection per store
listens; :meth:`ChangeCounter.version` drains what has arrived without waiting. If that
connection is lost, notifications sent meanwhile are lost with it, so the counter moves once
(anything may have changed) and listening starts again. A connection that dies without the
server closing it (a network cut) is noticed only when TCP gives up on it: set keepalives in the
connection string for a server across a network.
"""

from __future__ import annotations

import contextlib
import select
import threading

import psycopg

CHANNEL = "memlens_changes"
APPLICATION_NAME = "memlens change listener"  # so an administrator (and a test) can tell it in pg_stat_activity


class ChangeCounter:
    def __init__(self, conninfo: str) -> None:
        """``conninfo``: a libpq URL or keyword string for the store's database."""
        self._conninfo = conninfo
        self._lock = threading.Lock()
        self._version = 0
        self._conn: psycopg.Connection | None = None
        self._received = 0
        self._listen()

    def _listen(self) -> None:
        self._conn = psycopg.connect(self._conninfo, autocommit=True, application_name=APPLICATION_NAME)
        self._conn.add_notify_handler(self._count)
        self._conn.execute(f"LISTEN {CHANNEL}")

    def _count(self, _notification: object) -> None:
        self._received += 1

    def version(self) -> int:
        """A number that differs from any earlier return once a write has committed since."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    raise psycopg.OperationalError("the listening connection is closed")
                # A round trip first: a commit that returned before this call has signalled the
                # listening server process, which sends its notifications before answering, so
                # the counter has moved by the time this returns. Delivery alone is asynchronous:
                # without it, a write followed at once by a search through another store object
                # could find the cached matrix still current.
                self._received = 0
                self._conn.execute("SELECT 1")
                arrived = self._received
                # Read the socket while it has something: notifications, or the end of a closed
                # connection, which only a read after the server's goodbye message reports (by
                # raising). Waiting for notifications alone never noticed a terminated listener.
                # The parsed notifications are then taken from libpq's queue directly, since
                # psycopg's notifies() waits on the socket this has just drained.
                pgconn = self._conn.pgconn
                for _ in range(100):
                    if not select.select([pgconn.socket], [], [], 0)[0]:
                        break
                    pgconn.consume_input()
                while pgconn.notifies() is not None:
                    arrived += 1
            except psycopg.OperationalError:
                self._version += 1
                self._close()
                try:
                    self._listen()
                except psycopg.OperationalError:
                    self._conn = None  # the server is unreachable: every call counts as a change
                return self._version
            self._version += arrived
            return self._version

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()

    def close(self) -> None:
        with self._lock:
            self._close()
            self._conn = None
