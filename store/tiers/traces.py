"""The recall trace as a tier: each recall an agent made through a store opened with tracing on
(``MemoryStore.open(trace=True)``), kept so a person can see what the agent retrieved when it
answered. A trace holds the query, the recall's arguments, each hit's kind, id and scores (never
a hit's text: an erased memory must not live on in a trace) and how long it took.

Traces are the tenant's memory like any other: exported, imported, erased by every forget scope
(whole tenant; a session: the recalls filtered to it; a date: the recalls made before it), and
kept within bounds. Each tenant keeps its newest :data:`DEFAULT_KEPT` traces for at most
:data:`DEFAULT_TTL`; a trace write trims its own tenant, :meth:`store.memory.MemoryStore.purge_expired`
trims every tenant, and reads hide a trace past its time to live at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field
from sqlalchemy import Connection, Select, and_, or_

from ..backend import Backend
from ..models import RecallHit, RecallTrace, TracedHit
from ..schema import audit_t, traces_t
from ..tenancy import Tenant, latest_by_tenant
from .common import new_id, touch_tenant
from .erasing import Erasing
from .importing import UNCHANGED, WRITTEN, Importing
from .moments import Moment
from .record_fields import JsonObject, Name, OptionalName, OptionalText, Record, Text, Time
from .records import Reading, iso

DEFAULT_KEPT = 1000
"""Traces kept per tenant: enough for the last days of an active agent (the question a trace
answers is about a recent answer), small enough that a tenant's traces stay a few hundred KB."""
DEFAULT_TTL = timedelta(days=30)
"""How long a trace is kept: queries are personal data, kept no longer than debugging needs."""

Call = Literal["recall", "recall_facts", "search_keys"]


def traced_hits(hits: Sequence[RecallHit]) -> list[dict[str, Any]]:
    """What a trace keeps of each hit: what it was and how it scored, not what it said."""
    return [{"kind": h.kind, "id": h.id, "scores": h.scores.model_dump(mode="json")} for h in hits]


WRITE_EVERY = 5.0
"""Seconds a trace may wait to be written. Every commit tells the store's caches (vectors, keyword
statistics) that something changed, and the recall after one checks them again: written one by
one, traces doubled a hybrid recall's latency at 10,000 episodes (8.7 to 19.5 ms at p50); written
once a second they still cost 16% at p95 at 100,000 (bench/trace_bench.py); every five seconds, a
burst of recalls pays that check once in hundreds."""


class Tracer:
    """Keeps the recalls made through one store, off the recall's path: a recall hands its trace
    over and returns; one writer thread writes what has gathered at most :data:`WRITE_EVERY`
    seconds later, in one transaction, and trims each tenant in it to its bounds. :meth:`flush`
    writes at once and waits (the store flushes before it reads traces, exports or erases). A
    crash loses only traces not yet written, and leaves nothing behind. A trace of a tenant
    erased (by any process) after the recall was made is dropped, never written after the
    erasure. A batch the store refuses (a full disk) is dropped and counted in :attr:`dropped`:
    a trace never fails a recall."""

    def __init__(self, backend: Backend, *, kept: int = DEFAULT_KEPT, ttl: timedelta = DEFAULT_TTL):
        self._db = backend
        self.kept = kept
        self.ttl = ttl
        self.write_every = WRITE_EVERY
        self.dropped = 0
        self.last_error: Exception | None = None
        self._pending: list[tuple[Tenant, dict[str, Any]]] = []
        self._writing = False
        self._hurry = False
        self._closed = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def keep(
        self,
        tenant: Tenant,
        call: Call,
        query: str,
        hits: Sequence[RecallHit],
        *,
        at: datetime,
        took_ms: float,
        session_id: str | None,
        label: str | None,
        arguments: dict[str, Any],
    ) -> None:
        row = {
            "id": new_id(),
            "at": at,
            "call": call,
            "query": query,
            "session_id": session_id,
            "label": label,
            "arguments": json.dumps(arguments, ensure_ascii=False, default=_iso),
            "hits": json.dumps(traced_hits(hits), ensure_ascii=False),
            "took_ms": took_ms,
        }
        with self._changed:
            if self._closed:
                return
            self._pending.append((tenant, row))
            if self._thread is None:
                self._thread = threading.Thread(target=self._write_forever, name="memlens-trace-writer", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def flush(self) -> None:
        """Write every trace handed over so far now, and return once it is written (or dropped)."""
        with self._changed:
            self._hurry = True
            self._changed.notify_all()
            while self._pending or self._writing:
                self._changed.wait()

    def close(self) -> None:
        """Write what is pending, then stop the writer."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _write_forever(self) -> None:
        while True:
            with self._changed:
                while not self._pending and not self._closed:
                    self._changed.wait()
                # Gather for a while, unless someone waits for the traces or the store closes.
                self._changed.wait_for(lambda: self._hurry or self._closed, timeout=self.write_every)
                if not self._pending:
                    if self._closed:
                        return
                    continue
                batch, self._pending, self._writing, self._hurry = self._pending, [], True, False
            try:
                self._write(batch)
            finally:
                with self._changed:
                    self._writing = False
                    self._changed.notify_all()

    def _write(self, batch: list[tuple[Tenant, dict[str, Any]]]) -> None:
        """One transaction for the whole batch, every tenant in it: a commit per tenant made a
        flush of recalls over 200 tenants slow the recalls running beside it (p95 2.4x)."""
        by_tenant: dict[Tenant, list[dict[str, Any]]] = {}
        for tenant, row in batch:
            by_tenant.setdefault(tenant, []).append(tenant.stamp(row))
        too_late = 0
        try:
            with self._db.write(*by_tenant) as conn:
                erased = latest_by_tenant(conn, audit_t, audit_t.c.at, by_tenant, audit_t.c.action == "forget", audit_t.c.origin == "local")
                written: dict[Tenant, list[dict[str, Any]]] = {}
                for tenant, mine in by_tenant.items():
                    # A recall made before the tenant's latest erasure (by any process) is not written after it.
                    kept = [row for row in mine if tenant not in erased or row["at"] > erased[tenant]]
                    too_late += len(mine) - len(kept)
                    if kept:
                        written[tenant] = kept
                        # A tenant whose query is held is listed, so it can be erased; a recall is
                        # no write to its memory, so it does not move the tenant's last activity.
                        touch_tenant(conn, tenant, min(row["at"] for row in kept), activity=False)
                if written:
                    conn.execute(traces_t.insert(), [row for rows in written.values() for row in rows])
                for tenant, rows in written.items():
                    trim(conn, tenant, kept=self.kept, expired_before=max(row["at"] for row in rows) - self.ttl)
        except Exception as exc:  # whatever the store refused, the recalls it traces have returned
            self.dropped += len(batch)
            self.last_error = exc
        else:
            self.dropped += too_late


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def trim(conn: Connection, tenant: Tenant, *, kept: int, expired_before: datetime) -> int:
    """Delete the tenant's traces past their time to live and beyond its newest ``kept``."""
    removed = trim_expired(conn, tenant, expired_before)
    newest_dropped = (
        tenant.select(traces_t, traces_t.c.at, traces_t.c.pk).order_by(traces_t.c.at.desc(), traces_t.c.pk.desc()).offset(kept).limit(1)
    )
    edge = conn.execute(newest_dropped).first()
    if edge is not None:
        older = or_(traces_t.c.at < edge.at, and_(traces_t.c.at == edge.at, traces_t.c.pk <= edge.pk))
        removed += conn.execute(tenant.delete(traces_t).where(older)).rowcount
    return removed


def trim_expired(conn: Connection, tenant: Tenant, expired_before: datetime) -> int:
    """Delete the tenant's traces made before ``expired_before`` (past their time to live)."""
    return int(conn.execute(tenant.delete(traces_t).where(traces_t.c.at < expired_before)).rowcount)


def read(
    conn: Connection,
    tenant: Tenant,
    *,
    since: datetime,
    until: datetime | None = None,
    session_id: str | None = None,
    limit: int | None = None,
) -> list[RecallTrace]:
    """The tenant's traces made from ``since`` up to ``until``, newest first."""
    stmt = tenant.select(traces_t).where(traces_t.c.at >= since)
    if until is not None:
        stmt = stmt.where(traces_t.c.at <= until)
    if session_id is not None:
        stmt = stmt.where(traces_t.c.session_id == session_id)
    stmt = stmt.order_by(traces_t.c.at.desc(), traces_t.c.pk.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    return [model(tenant, row) for row in conn.execute(stmt)]


def read_one(conn: Connection, tenant: Tenant, trace_id: str, *, since: datetime) -> RecallTrace | None:
    row = conn.execute(tenant.select(traces_t).where(traces_t.c.id == trace_id, traces_t.c.at >= since)).first()
    return None if row is None else model(tenant, row)


def model(tenant: Tenant, row: Any) -> RecallTrace:
    return RecallTrace(
        id=row.id,
        user_id=tenant.user_id,
        at=row.at,
        call=row.call,
        query=row.query,
        session_id=row.session_id,
        label=row.label,
        arguments=json.loads(row.arguments),
        hits=[TracedHit.model_validate(hit) for hit in json.loads(row.hits)],
        took_ms=row.took_ms,
    )


# --- the tier: export, erasure, import ----------------------------------------------------


RECENT_AT_A_MOMENT = 20
"""How many of the latest recalls a snapshot shows."""


def as_of(moment: Moment) -> dict[str, Any]:
    """The latest recalls kept by the moment, newest first (a snapshot's ``recent_recalls``)."""
    if moment.recalls_since is None:
        return {}
    found = read(moment.conn, moment.tenant, since=moment.recalls_since, until=moment.at, limit=RECENT_AT_A_MOMENT)
    return {"recent_recalls": found}


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    """Every trace the store holds, oldest first: an export is everything held about the person."""
    for r in reading.conn.execute(reading.tenant.select(traces_t).order_by(traces_t.c.at, traces_t.c.pk)):
        yield reading.record(
            "recall_trace",
            id=r.id,
            at=iso(r.at),
            call=r.call,
            query=r.query,
            session_id=r.session_id,
            label=r.label,
            arguments=json.loads(r.arguments),
            hits=json.loads(r.hits),
            took_ms=r.took_ms,
        )


def erased(e: Erasing) -> Select[Any] | None:
    """The recalls filtered to the session, or made before the date, or all with the tenant.
    A facts-only erasure keeps them: a query is no fact."""
    if e.scope.facts_only:
        return None
    traces = e.tenant.select(traces_t, traces_t.c.pk)
    if e.scope.session_id is not None:
        traces = traces.where(traces_t.c.session_id == e.scope.session_id)
    if e.scope.before is not None:
        traces = traces.where(traces_t.c.at < e.scope.before)
    return traces


class RecallTraceRecord(Record):
    type: Literal["recall_trace"]
    id: Name
    at: Time
    call: Call
    query: Text
    session_id: OptionalName = None
    label: OptionalText = None
    arguments: JsonObject
    hits: list[TracedHit]
    took_ms: float = Field(ge=0)


def write(importing: Importing, tenant: Tenant, records: list[RecallTraceRecord]) -> list[str]:
    conn, outcomes = importing.conn, []
    for r in records:
        if conn.execute(tenant.select(traces_t, traces_t.c.pk).where(traces_t.c.id == r.id)).first() is not None:
            outcomes.append(UNCHANGED)  # a trace never changes: the same id is the same recall
            continue
        row = {
            "id": r.id,
            "at": r.at,
            "call": r.call,
            "query": r.query,
            "session_id": r.session_id,
            "label": r.label,
            "arguments": json.dumps(r.arguments, ensure_ascii=False),
            "hits": json.dumps([hit.model_dump(mode="json") for hit in r.hits], ensure_ascii=False),
            "took_ms": r.took_ms,
        }
        conn.execute(traces_t.insert().values(tenant.stamp(row)))
        outcomes.append(WRITTEN)
    return outcomes
