"""Bi-temporal facts. A new fact about the same subject and predicate closes the open one.

History after an erasure (:func:`close_gaps`): a surviving fact whose ``valid_until`` was set
by an erased fact (equal to that fact's ``valid_from``) takes the ``valid_from`` of the next
surviving fact of the same subject and predicate instead, or is open again if none survives.
So no timestamp of erased data stays behind, and the belief the erased fact replaced is
current again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field
from sqlalchemy import ColumnElement, Connection, Row, Select, case, exists, func, literal_column, or_, select

from ..backend import Sql
from ..errors import DuplicateIdError, ImportValidationError, InvalidInputError, UnknownFactError
from ..models import Change, Fact
from ..schema import episodes_t, fact_changes_t, facts_t
from ..tenancy import Tenant, user_id_of
from .changes import Window
from .common import loads, new_id
from .erasing import Erasing
from .importing import KEPT, UNCHANGED, WRITTEN, Importing, insert_with_vectors, rows_by_id
from .moments import Moment
from .record_fields import Embedding, Name, Names, NonEmpty, OptionalTime, Record, Time, where
from .records import Reading, iso


def fact_text(subject: str, predicate: str, object: str) -> str:
    """The text a fact is searched and embedded by; writing, importing and re-embedding must agree."""
    return f"{subject} {predicate.replace('_', ' ')} {object}"


def to_model(row: Row[Any]) -> Fact:
    # Validated, not model_construct: pydantic's validator builds these faster (1,000 facts:
    # 20.7 ms a call against 24.6 ms here).
    return Fact(
        id=row.id,
        user_id=user_id_of(row.user_id),
        subject=row.subject,
        predicate=row.predicate,
        object=row.object,
        confidence=row.confidence,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        recorded_at=row.recorded_at,
        source_episode_ids=loads(row.source_episode_ids),
    )


def add_fact(
    conn: Connection,
    tenant: Tenant,
    *,
    subject: str,
    predicate: str,
    object: str,
    confidence: float,
    valid_from: datetime,
    recorded_at: datetime,
    source_episode_ids: list[str],
    fact_id: str | None = None,
) -> tuple[Fact, int]:
    """Insert a fact (named ``fact_id``, else a new id), superseding the open one; returns the
    fact and its row key. A ``fact_id`` the tenant already uses raises DuplicateIdError.

    Re-asserting the open fact (same object) is corroboration, not a change: it keeps the open
    fact and its ``valid_from``, and only adds the new sources, so the history never shows a
    belief ending and restarting at the same value."""
    open_row = conn.execute(
        tenant.select(facts_t).where(facts_t.c.subject == subject, facts_t.c.predicate == predicate, facts_t.c.valid_until.is_(None))
    ).first()
    if open_row is not None and open_row.object == object:
        sources = loads(open_row.source_episode_ids)
        added = [s for s in source_episode_ids if s not in sources]
        if added:
            conn.execute(tenant.update(facts_t).where(facts_t.c.pk == open_row.pk).values(source_episode_ids=json.dumps(sources + added)))
            open_row = conn.execute(tenant.select(facts_t).where(facts_t.c.pk == open_row.pk)).one()
        return to_model(open_row), open_row.pk
    if fact_id is not None and conn.execute(tenant.select(facts_t, facts_t.c.pk).where(facts_t.c.id == fact_id)).first():
        raise DuplicateIdError(f"fact id {fact_id!r} is already used by another fact of this user; nothing was stored")
    same = (facts_t.c.subject == subject, facts_t.c.predicate == predicate)
    # The fact whose interval holds ``valid_from`` ends there and the new one takes the rest of
    # it: the open fact when the new one is later (a supersession), a closed one when it is a
    # correction of the past. In a gap, or before every fact, the new one ends where the next
    # one starts.
    holder: Row[Any] | None
    if open_row is not None and open_row.valid_from <= valid_from:
        holder = open_row  # the usual case, a supersession: no need to look further
    else:
        holder = conn.execute(
            tenant.select(facts_t).where(*same, valid_at_clause(valid_from)).order_by(facts_t.c.valid_from.desc(), facts_t.c.pk.desc())
        ).first()
    if holder is not None:
        valid_until = holder.valid_until
    else:
        valid_until = conn.execute(
            tenant.select(facts_t, func.min(facts_t.c.valid_from)).where(*same, facts_t.c.valid_from > valid_from)
        ).scalar()
    fact_id = fact_id or new_id()
    pk = conn.execute(
        facts_t.insert().values(
            tenant.stamp(
                {
                    "id": fact_id,
                    "subject": subject,
                    "predicate": predicate,
                    "object": object,
                    "confidence": confidence,
                    "valid_from": valid_from,
                    "valid_until": valid_until,
                    "recorded_at": recorded_at,
                    "source_episode_ids": json.dumps(source_episode_ids),
                }
            )
        )
    ).inserted_primary_key[0]  # type: ignore[index]  # a single-row INSERT always has its key
    if holder is not None:
        conn.execute(tenant.update(facts_t).where(facts_t.c.pk == holder.pk).values(valid_until=valid_from))
        change = {"fact_id": holder.id, "valid_until_before": holder.valid_until, "changed_at": recorded_at, "caused_by": fact_id}
        conn.execute(fact_changes_t.insert().values(tenant.stamp(change)))
    fact = Fact(
        id=fact_id,
        user_id=tenant.user_id,
        subject=subject,
        predicate=predicate,
        object=object,
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
        recorded_at=recorded_at,
        source_episode_ids=source_episode_ids,
    )
    return fact, pk


def end_fact(conn: Connection, tenant: Tenant, fact_id: str, at: datetime, now: datetime) -> Fact:
    """The open fact ``fact_id`` stops being believed at ``at``, with no successor; kept in the
    history, and the change recorded (its cause is the fact itself) so ``known_at`` still
    answers as the store knew it before."""
    row = conn.execute(tenant.select(facts_t).where(facts_t.c.id == fact_id)).first()
    if row is None:
        raise UnknownFactError(f"no fact {fact_id!r} for this user; nothing was changed")
    if row.valid_until is not None:
        raise InvalidInputError(f"fact {fact_id!r} already ended at {row.valid_until.isoformat()}; nothing was changed")
    if at <= row.valid_from:
        raise InvalidInputError(f"a fact valid from {row.valid_from.isoformat()} cannot end at or before it; nothing was changed")
    conn.execute(tenant.update(facts_t).where(facts_t.c.pk == row.pk).values(valid_until=at))
    change = {"fact_id": fact_id, "valid_until_before": None, "changed_at": now, "caused_by": fact_id}
    conn.execute(fact_changes_t.insert().values(tenant.stamp(change)))
    return to_model(conn.execute(tenant.select(facts_t).where(facts_t.c.pk == row.pk)).one())


def valid_at_clause(valid_at: datetime, valid_until: ColumnElement[Any] = facts_t.c.valid_until) -> ColumnElement[bool]:
    return (facts_t.c.valid_from <= valid_at) & or_(valid_until.is_(None), valid_until > valid_at)


def valid_until_known_at(tenant: Tenant, known_at: datetime) -> ColumnElement[Any]:
    """A fact's ``valid_until`` as the store held it at ``known_at``: the value its first change
    after that moment replaced, or its current one if it has not changed since."""
    c = fact_changes_t.c
    later = tenant.select(fact_changes_t, c.valid_until_before).where(c.fact_id == facts_t.c.id, c.changed_at > known_at)
    first = later.order_by(c.changed_at, c.pk).limit(1).scalar_subquery()
    return case((later.exists(), first), else_=facts_t.c.valid_until)


def list_facts(
    conn: Connection,
    tenant: Tenant,
    *,
    valid_at: datetime | None,
    subject: str | None,
    include_history: bool,
    predicate: str | None = None,
    object: str | None = None,
    known_at: datetime | None = None,
) -> list[Fact]:
    """With ``known_at``, as the store held them at that moment: the facts recorded by then,
    each with the ``valid_until`` it had then."""
    valid_until: ColumnElement[Any] = facts_t.c.valid_until
    stmt = tenant.select(facts_t)
    if known_at is not None:
        valid_until = valid_until_known_at(tenant, known_at)
        # The row's valid_until column is the one it had then: every row is built the same way.
        columns = [c for c in facts_t.c if c.name != "valid_until"]
        stmt = tenant.select(facts_t, *columns, valid_until.label("valid_until")).where(facts_t.c.recorded_at <= known_at)
    if predicate is not None:
        stmt = stmt.where(facts_t.c.predicate == predicate)
    if object is not None:
        stmt = stmt.where(facts_t.c.object == object)
    if valid_at is not None:
        stmt = stmt.where(valid_at_clause(valid_at, valid_until))
    elif not include_history:
        stmt = stmt.where(valid_until.is_(None))
    if subject is not None:
        stmt = stmt.where(facts_t.c.subject == subject)
    stmt = stmt.order_by(facts_t.c.subject, facts_t.c.predicate, facts_t.c.valid_from.desc(), facts_t.c.pk.desc())
    return [to_model(r) for r in conn.execute(stmt)]


def close_gaps(conn: Connection, tenant: Tenant, erased_pks: Sequence[int]) -> int:
    """Apply the history rule for the facts about to be erased (``erased_pks``, still present);
    returns how many surviving facts changed."""
    if not erased_pks:
        return 0
    erased_set = set(erased_pks)
    groups: set[tuple[str, str]] = set()
    for start in range(0, len(erased_pks), 30_000):
        chunk = erased_pks[start : start + 30_000]
        groups.update(conn.execute(tenant.select(facts_t, facts_t.c.subject, facts_t.c.predicate).where(facts_t.c.pk.in_(chunk))).all())
    changed = 0
    for subject, predicate in groups:
        rows = conn.execute(
            tenant.select(facts_t, facts_t.c.pk, facts_t.c.valid_from, facts_t.c.valid_until)
            .where(facts_t.c.subject == subject, facts_t.c.predicate == predicate)
            .order_by(facts_t.c.valid_from, facts_t.c.pk)
        ).all()
        erased_starts = {r.valid_from for r in rows if r.pk in erased_set}
        survivors = [r for r in rows if r.pk not in erased_set]
        for index, row in enumerate(survivors):
            if row.valid_until is None or row.valid_until not in erased_starts:
                continue
            successor = next((s.valid_from for s in survivors[index + 1 :] if s.valid_from >= row.valid_until), None)
            if successor != row.valid_until:
                conn.execute(tenant.update(facts_t).where(facts_t.c.pk == row.pk).values(valid_until=successor))
                changed += 1
    return changed


def changes(window: Window) -> Iterator[Change]:
    """Each fact as recorded."""
    for r in window.conn.execute(window.within(window.tenant.select(facts_t), facts_t.c.recorded_at)):
        yield Change(at=r.recorded_at, tier="fact", kind="recorded", name=f"{r.subject} {r.predicate}", detail=r.object)


def validity_changes(window: Window) -> Iterator[Change]:
    """Each change of a fact's validity (a supersession or a correction), with its fact, in one
    statement (a lookup per change was a query each); a change whose fact is gone is not listed."""
    f, c, tenant = facts_t.c, fact_changes_t.c, window.tenant
    changed = tenant.select(fact_changes_t, c.changed_at, c.valid_until_before, f.subject, f.predicate, f.object).select_from(
        fact_changes_t.join(facts_t, (f.id == c.fact_id) & tenant.owns(facts_t))
    )
    for r in window.conn.execute(window.within(changed, c.changed_at)):
        was = "open" if r.valid_until_before is None else f"valid until {r.valid_until_before.isoformat()}"
        yield Change(
            at=r.changed_at, tier="fact", kind="validity changed", name=f"{r.subject} {r.predicate}", detail=f"{r.object} (was {was})"
        )


def as_of(moment: Moment) -> dict[str, Any]:
    """The facts current at the moment as the store held them then (a snapshot's ``facts``)."""
    return {"facts": list_facts(moment.conn, moment.tenant, valid_at=None, subject=None, include_history=False, known_at=moment.at)}


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    """The tenant's facts (every version) as export records, in the order they were recorded."""
    facts = reading.conn.execute(reading.tenant.select(facts_t).order_by(facts_t.c.pk)).all()
    vectors = reading.vectors("fact", [r.pk for r in facts])
    for r in facts:
        record = reading.record(
            "fact",
            id=r.id,
            subject=r.subject,
            predicate=r.predicate,
            object=r.object,
            confidence=r.confidence,
            valid_from=iso(r.valid_from),
            valid_until=iso(r.valid_until),
            recorded_at=iso(r.recorded_at),
            source_episode_ids=json.loads(r.source_episode_ids),
        )
        if r.pk in vectors:
            record["embedding"] = vectors[r.pk]
        yield record


def change_records(reading: Reading) -> Iterator[dict[str, Any]]:
    """When each fact's interval was closed, and by what, as export records."""
    c = fact_changes_t
    for r in reading.conn.execute(reading.tenant.select(c).order_by(c.c.changed_at, c.c.pk)):
        yield reading.record(
            "fact_change",
            fact_id=r.fact_id,
            valid_until_before=iso(r.valid_until_before),
            changed_at=iso(r.changed_at),
            caused_by=r.caused_by,
        )


def cites(dialect: Sql, ids: Select[Any], name: str) -> ColumnElement[bool]:
    """The fact cites at least one episode id produced by ``ids``."""
    sourced = dialect.json_array_items(facts_t.c.source_episode_ids, name=name)
    return exists(select(literal_column("1")).select_from(sourced).where(sourced.c.value.in_(ids)))


def erased(e: Erasing) -> Select[Any] | None:
    """Every fact with the tenant; with facts only, those recorded before the date (all without
    one); otherwise a fact goes when it rests only on erased episodes: it cites one, and none of
    the episodes it cites survives (facts citing no episode go only with the whole tenant)."""
    fact_keys = e.tenant.select(facts_t, facts_t.c.pk)
    if e.scope.facts_only:
        return fact_keys if e.scope.before is None else fact_keys.where(facts_t.c.recorded_at < e.scope.before)
    if e.scope.whole_tenant:
        return fact_keys
    episodes = e.required("episodes")
    erased_ids = e.tenant.select(episodes_t, episodes_t.c.id).where(episodes_t.c.pk.in_(episodes))
    surviving_ids = e.tenant.select(episodes_t, episodes_t.c.id).where(episodes_t.c.pk.not_in(episodes))
    return fact_keys.where(cites(e.dialect, erased_ids, "erased"), ~cites(e.dialect, surviving_ids, "surviving"))


def erased_changes(e: Erasing) -> Select[Any] | None:
    """All of them with the tenant; otherwise the records that go with the erased facts: their
    own changes, the changes their recording made to other facts, and any change that kept one
    of their start times (a time of erased data; a coincident time of a surviving fact's record
    goes too, which loses that record, never a fact)."""
    c = fact_changes_t.c
    if e.scope.whole_tenant:
        return e.tenant.select(fact_changes_t, c.pk)
    fact_keys = e.required("facts")
    erased_ids = e.tenant.select(facts_t, facts_t.c.id).where(facts_t.c.pk.in_(fact_keys))
    erased_starts = e.tenant.select(facts_t, facts_t.c.valid_from).where(facts_t.c.pk.in_(fact_keys))
    return e.tenant.select(fact_changes_t, c.pk).where(
        or_(c.fact_id.in_(erased_ids), c.caused_by.in_(erased_ids), c.valid_until_before.in_(erased_starts))
    )


class FactRecord(Record):
    type: Literal["fact"]
    id: Name
    subject: NonEmpty
    predicate: NonEmpty
    object: NonEmpty
    confidence: float = Field(ge=0, le=1)
    valid_from: Time
    valid_until: OptionalTime
    recorded_at: Time
    source_episode_ids: Names
    embedding: Embedding = None

    def problem(self) -> tuple[str, str] | None:
        if self.valid_until is not None and self.valid_until < self.valid_from:
            return "valid_until", "a fact cannot stop being valid before it starts (valid_until < valid_from)"
        return None


class FactChangeRecord(Record):
    type: Literal["fact_change"]
    fact_id: Name
    valid_until_before: OptionalTime
    changed_at: Time
    caused_by: Name


def write(importing: Importing, tenant: Tenant, records: list[FactRecord]) -> list[str]:
    """Facts new to the tenant inserted in bulk with their vectors. One the tenant has under
    the same id is kept, except that a fact only ever closes: an open one the file has closed
    since takes the file's end."""
    conn = importing.conn
    existing = rows_by_id(conn, tenant, facts_t, [r.id for r in records])
    new: list[tuple[str, dict[str, Any], str]] = []
    outcomes = []
    for r in records:
        values = {
            "id": r.id,
            "subject": r.subject,
            "predicate": r.predicate,
            "object": r.object,
            "confidence": r.confidence,
            "valid_from": r.valid_from,
            "valid_until": r.valid_until,
            "recorded_at": r.recorded_at,
            "source_episode_ids": json.dumps(r.source_episode_ids),
        }
        row = existing.get(r.id)
        if row is None:
            new.append((r.id, values, vector_text(r)))
            outcomes.append(WRITTEN)
        elif any(getattr(row, k) != v for k, v in values.items() if k != "valid_until"):
            outcomes.append(KEPT)
        elif row.valid_until == values["valid_until"]:
            outcomes.append(UNCHANGED)
        elif row.valid_until is None:  # superseded since: the closed one is newer
            conn.execute(tenant.update(facts_t).where(facts_t.c.pk == row.pk).values(valid_until=values["valid_until"]))
            outcomes.append(WRITTEN)
        else:
            outcomes.append(KEPT)
    insert_with_vectors(importing, tenant, facts_t, "fact", new)
    return outcomes


def write_changes(importing: Importing, tenant: Tenant, records: list[FactChangeRecord]) -> list[str]:
    """The same change is the same fact changed at the same moment; importing twice adds nothing."""
    c, outcomes = fact_changes_t, []
    for r in records:
        row = importing.conn.execute(tenant.select(c).where(c.c.fact_id == r.fact_id, c.c.changed_at == r.changed_at)).first()
        if row is not None:
            outcomes.append(UNCHANGED if (row.valid_until_before, row.caused_by) == (r.valid_until_before, r.caused_by) else KEPT)
            continue
        values = {"fact_id": r.fact_id, "valid_until_before": r.valid_until_before, "changed_at": r.changed_at, "caused_by": r.caused_by}
        importing.conn.execute(c.insert().values(tenant.stamp(values)))
        outcomes.append(WRITTEN)
    return outcomes


def before_deleting(e: Erasing, conn: Connection, erased_pks: Sequence[int]) -> None:
    """Facts that stay keep nothing of what goes: erased episode ids leave their source lists
    (no episode goes when only facts do), and the history rule (:func:`close_gaps`) reopens or
    re-closes facts an erased fact had closed. A whole tenant leaves no fact to amend."""
    if e.scope.whole_tenant:
        return
    t = e.tenant
    if not e.scope.facts_only:
        erased_ids_stmt = t.select(episodes_t, episodes_t.c.id).where(episodes_t.c.pk.in_(e.required("episodes")))
        citing = t.select(facts_t, facts_t.c.pk, facts_t.c.source_episode_ids).where(
            cites(e.dialect, erased_ids_stmt, "erased"), facts_t.c.pk.not_in(e.required("facts"))
        )
        rows = conn.execute(citing).all()
        if rows:
            erased_ids = set(conn.execute(erased_ids_stmt).scalars())
            for pk, sources in rows:
                kept = [s for s in json.loads(sources) if s not in erased_ids]
                conn.execute(t.update(facts_t).where(facts_t.c.pk == pk).values(source_episode_ids=json.dumps(kept)))
    close_gaps(conn, t, erased_pks)


def vector_text(record: FactRecord) -> str:
    """What an imported fact's vector is of."""
    return fact_text(record.subject, record.predicate, record.object)


def check_file(parsed: list[tuple[int | None, Any]], ids: set[tuple[str | None, str, str]]) -> None:
    """A fact's change names facts of the same tenant in the same file (an export holds them all);
    ``ids`` holds (tenant, record type, id) of every record with an id."""
    for index, (number, record) in enumerate(parsed):
        if record.type != "fact_change":
            continue
        for field in ("fact_id", "caused_by"):
            if (record.user_id, "fact", getattr(record, field)) not in ids:
                raise ImportValidationError(
                    f"this change names fact {getattr(record, field)!r}, which the file does not hold for this tenant",
                    **where(number, index, f"fact_change.{field}"),
                )
