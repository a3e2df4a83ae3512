"""After an erasure's rows are deleted (in one transaction, as on SQLite), what makes their
bytes leave the data directory of a PostgreSQL server that memlens owns.

Measured here on PostgreSQL 18.3 with a byte scan of the data directory
(``tests/test_pg_erasure.py``):
- after ``DELETE`` and a plain ``VACUUM`` the erased text and vectors are still in the table's
  pages (pruned tuples are not zeroed) and the GIN index keeps erased words;
- ``ANALYZE`` (autovacuum runs it on its own) copies sample values, most common values and
  most common words into ``pg_statistic``; those outlive the rows, and an ``ANALYZE`` of an
  emptied table leaves the old statistics in place;
- the WAL holds every inserted row until its segments are recycled.

So the sequence is: ``VACUUM (FULL)`` of each touched partition of the tenant (a new file with
only the live rows; its indexes rebuilt) -> clear and re-take the statistics of those
partitions, and of a parent someone analysed -> ``VACUUM (FULL)`` of ``pg_statistic`` ->
``CHECKPOINT`` -> twice (``pg_switch_wal()``; ``CHECKPOINT``), so no WAL segment written before
the erasure is kept, which also needs ``wal_recycle = off`` (a recycled segment keeps its old
records). Each partition is one tenant's, so the rewrite locks no other tenant.

What no server-side step reaches: WAL archives, streaming replicas, base backups, logical
decoding slots, and server logs that record statement text; the receipt says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from ...tenancy import Tenant
from . import locks, partitions

OUT_OF_REACH = (
    "bytes already copied out of this server: WAL archives, streaming replicas, base backups, "
    "logical replication slots, and server logs that record statement text"
)


# Measured: with wal_recycle on (PostgreSQL's default), a segment that held the erased rows was
# renamed for reuse and still held all of them after the whole sequence; with it off, old
# segments are deleted and new ones zero-filled, and the scan found nothing.
WAL_RECYCLED = (
    "the server recycles WAL segments (wal_recycle = on), and a recycled segment keeps old records "
    "until it is overwritten; an administrator can set wal_recycle = off (ALTER SYSTEM, then reload)"
)


@dataclass(frozen=True)
class ScrubResult:
    done: bool
    reason: str | None
    rewritten: tuple[str, ...]
    dropped: tuple[str, ...] = ()


def _analysed_parents(conn: Connection, parents: list[str]) -> list[str]:
    """Parents with statistics over all their partitions (only a manual ANALYZE of the parent
    makes them; autovacuum never does): their samples can hold any tenant's rows."""
    rows = conn.execute(
        text("SELECT DISTINCT tablename FROM pg_stats WHERE inherited AND tablename = ANY(:p) AND schemaname = current_schema()"),
        {"p": parents},
    )
    return list(rows.scalars())


def _clear_statistics(conn: Connection, table: str) -> None:
    conn.execute(
        text(
            "SELECT pg_clear_attribute_stats(schemaname, tablename, attname, inherited) FROM pg_stats "
            "WHERE schemaname = current_schema() AND tablename = :t"
        ),
        {"t": table},
    )


def _unmaintainable(conn: Connection, tables: list[str]) -> list[str]:
    rows = conn.execute(
        text("SELECT t FROM unnest(CAST(:t AS text[])) AS t WHERE NOT has_table_privilege(t, 'MAINTAIN')"),
        {"t": tables},
    )
    return list(rows.scalars())


def scrub(engine: Engine, tenant: Tenant, parents: list[str], *, lock_timeout: float | None = None) -> ScrubResult:
    """Rewrite ``tenant``'s partitions of ``parents`` (the tables an erasure deleted from) and
    push every pre-erasure byte out of the data directory. Run it after the erasure committed.

    Returns whether every step ran; if the role lacks a privilege a step needs (VACUUM of
    ``pg_statistic`` needs ``pg_maintain`` or superuser, CHECKPOINT ``pg_checkpoint``,
    ``pg_switch_wal`` an EXECUTE grant), ``reason`` names it and the rows stay erased.
    ``lock_timeout`` (seconds) bounds each wait for the partition's readers: the error
    (SQLSTATE 55P03) is raised, and a later scrub does the work again."""
    own = partitions.names(tenant)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if lock_timeout is not None:
            conn.exec_driver_sql(f"SET lock_timeout = {int(lock_timeout * 1000)}")
        try:
            return _scrub(conn, own, tenant, parents)
        except BaseException:
            conn.invalidate()  # closed, not pooled: it may still hold the tenant's lock
            raise
        finally:
            if lock_timeout is not None and not conn.closed and not conn.invalidated:
                conn.exec_driver_sql("RESET lock_timeout")  # the connection goes back to the pool


def _drop_if_erased(conn: Connection, tenant: Tenant) -> tuple[str, ...]:
    """A tenant erased whole (no tenant row left) loses its partitions: dropping one took 0.02 s
    where rewriting it took 2.5 s (a 10k-episode tenant in 100k), and a dropped file leaves the
    data directory at once. Done under the tenant's writer lock, so no write of it lands
    meanwhile; a partition that holds rows again (the tenant wrote after its erasure) stays and
    is rewritten like any other."""
    if conn.execute(text("SELECT EXISTS (SELECT 1 FROM tenants WHERE user_id = :u)"), {"u": tenant.key}).scalar():
        return ()
    locks.hold_for_drop(conn, tenant)
    try:
        if conn.execute(text("SELECT EXISTS (SELECT 1 FROM tenants WHERE user_id = :u)"), {"u": tenant.key}).scalar():
            return ()
        return tuple(partitions.drop_locked(conn, tenant))
    finally:
        locks.release(conn)


def _scrub(conn: Connection, own: dict[str, str], tenant: Tenant, parents: list[str]) -> ScrubResult:
    dropped = _drop_if_erased(conn, tenant)
    present = set(partitions.attached_tables(conn, tenant))
    tables = [own[p] for p in parents if own[p] in present]
    # VACUUM without the right to maintain a table does not fail: it warns and skips it. So
    # the rights are checked first, or a scrub could report bytes gone that were never touched.
    missing = _unmaintainable(conn, [*tables, "pg_catalog.pg_statistic"])
    if missing:
        reason = (
            f"the database role may not VACUUM {', '.join(missing)} (it needs the MAINTAIN privilege: "
            "pg_maintain or superuser for pg_statistic); old bytes may remain until an administrator runs the scrub"
        )
        return ScrubResult(False, reason, (), dropped)
    step = "VACUUM (FULL)"
    try:
        for table in tables:
            # VACUUM cannot run in a transaction block, hence autocommit; the lock it takes
            # is on this tenant's partition alone.
            conn.exec_driver_sql(f'VACUUM (FULL) "{table}"')
            step = "clearing statistics"
            _clear_statistics(conn, table)
            conn.exec_driver_sql(f'ANALYZE "{table}"')
            step = "VACUUM (FULL)"
        for parent in _analysed_parents(conn, parents):
            step = "ANALYZE of a partitioned table"
            _clear_statistics(conn, parent)
            conn.exec_driver_sql(f'ANALYZE "{parent}"')
        step = "VACUUM (FULL) pg_statistic (needs pg_maintain or superuser)"
        conn.exec_driver_sql("VACUUM (FULL) pg_catalog.pg_statistic")
        step = "CHECKPOINT (needs pg_checkpoint or superuser)"
        conn.exec_driver_sql("CHECKPOINT")
        recycles = conn.exec_driver_sql("SHOW wal_recycle").scalar() == "on"
        for _ in range(2):
            step = "pg_switch_wal() (needs EXECUTE on it or superuser)"
            conn.exec_driver_sql("SELECT pg_switch_wal()")
            step = "CHECKPOINT (needs pg_checkpoint or superuser)"
            conn.exec_driver_sql("CHECKPOINT")
    except DBAPIError as error:
        if getattr(error.orig, "sqlstate", None) != "42501":  # insufficient_privilege
            raise
        return ScrubResult(
            False, f"the database role may not run {step}; old bytes may remain until an administrator does", tuple(tables), dropped
        )
    if recycles:
        return ScrubResult(False, WAL_RECYCLED, tuple(tables), dropped)
    return ScrubResult(True, None, tuple(tables), dropped)
