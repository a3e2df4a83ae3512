"""Episodes: what happened in a conversation turn, newest first, keyset-paginated."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, time
from types import SimpleNamespace
from typing import Any, Literal

from sqlalchemy import BigInteger, Connection, Row, Select, func, tuple_, type_coerce

from ..backend import sql
from ..backend.shared import filtered
from ..errors import InvalidInputError, UnknownEpisodeError
from ..models import Episode, EpisodePage, Message
from ..schema import episodes_t, from_micros, to_micros
from ..tenancy import Tenant, user_id_of
from ..validation import check_datetime, check_json, check_name, check_optional_name, check_text
from .common import content_hash, loads, new_id
from .erasing import Erasing
from .importing import KEPT, UNCHANGED, WRITTEN, Importing, insert_with_vectors, rows_by_id
from .moments import Moment
from .record_fields import Embedding, JsonList, JsonObject, Name, OptionalName, Record, Text, Time
from .records import Reading, iso


def embed_text(input: str, output: str) -> str:
    """The text an episode is searched by, for both the keyword index and its vector."""
    return f"{input}\n{output}".strip()


def to_model(row: Row[Any] | SimpleNamespace) -> Episode:
    # Rows were validated on the way in; model_construct skips validating them again.
    return Episode.model_construct(
        id=row.id,
        user_id=user_id_of(row.user_id),
        session_id=row.session_id,
        occurred_at=row.occurred_at,
        input=row.input,
        output=row.output,
        tool_calls=loads(row.tool_calls),
        metadata=loads(row.metadata),
    )


_FIELDS = frozenset({"input", "output", "session_id", "occurred_at", "tool_calls", "metadata", "id", "tool_transcript"})


def prepare_row(item: Any, index: int, now: datetime, limit: int) -> dict[str, Any]:
    """One ``remember_many`` item checked and turned into the row to insert (nothing is written).

    Most items carry no tool calls and no metadata: their JSON is written as the constant it
    serialises to. (Serialising and checking the two empty values was a fifth of ingest's Python
    time at 100k episodes, cProfile.)"""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"item {index} must be a mapping of remember()'s keywords")
    if not _FIELDS.issuperset(item):
        raise InvalidInputError(f"item {index} has unknown fields: {', '.join(sorted(set(item) - _FIELDS))}")
    input_text = check_text(item.get("input", ""), "input", limit=limit)
    output_text = check_text(item.get("output", ""), "output", limit=limit)
    if not input_text and not output_text:
        raise InvalidInputError(f"item {index}: an episode needs an input or an output")
    occurred_at = item.get("occurred_at")
    occurred_at = now if occurred_at is None else check_datetime(occurred_at, "occurred_at")
    tool_calls = item.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise InvalidInputError("tool_calls must be a list")
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata must be a mapping")
    if item.get("tool_transcript") is not None:
        metadata = {**metadata, "tool_transcript": check_transcript(item["tool_transcript"])}
    episode_id = item.get("id")
    return {
        "id": check_name(new_id() if episode_id is None else episode_id, "id"),
        "session_id": check_optional_name(item.get("session_id"), "session_id"),
        "occurred_at": occurred_at,
        "input": input_text,
        "output": output_text,
        "tool_calls": check_json(tool_calls, "tool_calls", limit=limit) if tool_calls else "[]",
        "metadata": check_json(dict(metadata), "metadata", limit=limit) if metadata else "{}",
        "content_hash": content_hash(embed_text(input_text, output_text)),
    }


def stored(tenant: Tenant, rows: list[dict[str, Any]]) -> list[Episode]:
    """The episodes ``rows`` (from :func:`prepare_row`) became, as ``remember_many`` returns them:
    their JSON read back, so what is returned equals what a later read gives."""
    return [
        Episode.model_construct(
            id=row["id"],
            user_id=tenant.user_id,
            session_id=row["session_id"],
            occurred_at=row["occurred_at"],
            input=row["input"],
            output=row["output"],
            tool_calls=[] if row["tool_calls"] == "[]" else json.loads(row["tool_calls"]),
            metadata={} if row["metadata"] == "{}" else json.loads(row["metadata"]),
        )
        for row in rows
    ]


def insert_episodes(conn: Connection, tenant: Tenant, rows: list[dict[str, Any]]) -> list[int]:
    """Insert prepared rows in one statement; returns their row keys in order."""
    return sql(conn).insert_keyed(conn, episodes_t, [tenant.stamp(row) for row in rows])


def drop_for_replacement(conn: Connection, tenant: Tenant, rows: list[dict[str, Any]], taken: set[str]) -> None:
    """Delete the tenant's episodes that ``rows`` replace (the delete trigger takes their keyword
    index and vector). A replacement with the same text keeps the old one's consolidation mark,
    so its extractor is not paid to read it again; new text is new evidence and is shown again."""
    old = {
        r.id: r
        for r in conn.execute(
            tenant.select(episodes_t, episodes_t.c.pk, episodes_t.c.id, episodes_t.c.content_hash, episodes_t.c.consolidated_at).where(
                episodes_t.c.id.in_(sorted(taken))
            )
        )
    }
    for row in rows:
        before = old.get(row["id"])
        row["consolidated_at"] = before.consolidated_at if before and before.content_hash == row["content_hash"] else None
    conn.execute(tenant.delete(episodes_t).where(episodes_t.c.pk.in_([r.pk for r in old.values()])))


_TRANSCRIPT_ROLES = ("assistant", "tool")


def check_transcript(transcript: Any) -> list[dict[str, Any]]:
    """A tool transcript as plain JSON messages; anything else is refused before a write."""
    if isinstance(transcript, (str, bytes, dict)) or not isinstance(transcript, list):
        raise InvalidInputError("tool_transcript must be a list of messages")
    checked = []
    for index, message in enumerate(transcript):
        if not isinstance(message, dict) or message.get("role") not in _TRANSCRIPT_ROLES:
            raise InvalidInputError(f"tool_transcript[{index}] must be a mapping with role 'assistant' or 'tool'")
        if not isinstance(message.get("content", ""), str):
            raise InvalidInputError(f"tool_transcript[{index}].content must be text")
        unknown = set(message) - {"role", "content", "name", "tool_call_id", "tool_calls"}
        if unknown:
            raise InvalidInputError(f"tool_transcript[{index}] has unknown fields: {', '.join(sorted(unknown))}")
        checked.append(dict(message))
    return checked


def get_episode(conn: Connection, tenant: Tenant, episode_id: str) -> Episode:
    row = conn.execute(tenant.select(episodes_t).where(episodes_t.c.id == episode_id)).first()
    if row is None:
        raise UnknownEpisodeError(f"no episode {episode_id!r} for this user")
    return to_model(row)


def encode_cursor(episode: Any) -> str:
    return f"{to_micros(episode.occurred_at)}.{episode.pk}"


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        micros, pk = cursor.split(".")
        if not 0 < int(pk) < 2**63:  # row keys are 64-bit; a larger one fails to bind
            raise ValueError(pk)
        return from_micros(int(micros)), int(pk)
    except (ValueError, AttributeError, OverflowError, OSError):
        raise InvalidInputError(f"cursor {cursor!r} was not returned by episodes()") from None


def page_episodes(
    conn: Connection,
    tenant: Tenant,
    *,
    session_id: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    cursor: str | None,
) -> EpisodePage:
    stmt = filtered(tenant.select(episodes_t), session_id=session_id, since=since, until=until)
    if cursor is not None:
        at, pk = decode_cursor(cursor)
        stmt = stmt.where(tuple_(episodes_t.c.occurred_at, episodes_t.c.pk) < tuple_(to_micros(at), pk))
    stmt = stmt.order_by(episodes_t.c.occurred_at.desc(), episodes_t.c.pk.desc()).limit(limit + 1)
    rows = conn.execute(stmt).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return EpisodePage(items=[to_model(r) for r in rows], next_cursor=encode_cursor(rows[-1]) if more else None)


DAY_MICROS = 86_400 * 1_000_000


def episodes_per_day(conn: Connection, tenant: Tenant, *, first_day: date, days: int) -> list[int]:
    """How many of the tenant's episodes occurred on each of ``days`` UTC days from
    ``first_day``, zeros included. Counted in the database (one row per active day), so a
    tenant with 100k episodes sends back at most ``days`` rows, not its episodes."""
    start = to_micros(datetime.combine(first_day, time(), UTC))
    # Stored as UTC microseconds; offset from the first midnight, whole days are the UTC days.
    day = (type_coerce(episodes_t.c.occurred_at, BigInteger) - start) // DAY_MICROS
    stmt = (
        tenant.select(episodes_t, day.label("day"), func.count())
        .where(
            type_coerce(episodes_t.c.occurred_at, BigInteger) >= start,
            type_coerce(episodes_t.c.occurred_at, BigInteger) < start + days * DAY_MICROS,
        )
        .group_by(day)
    )
    counts = [0] * days
    for index, n in conn.execute(stmt):
        counts[int(index)] = n
    return counts


def session_messages(conn: Connection, tenant: Tenant, session_id: str, limit: int | None) -> list[Message]:
    """User/assistant messages of a session, oldest first; ``limit`` keeps the newest ones.

    An episode's tool transcript is spliced between its user and assistant messages and does
    not count towards ``limit``; when the limit cuts an episode's user message, its transcript
    goes too, so a replay never starts with a tool result whose call was cut."""
    stmt = (
        tenant.select(episodes_t)
        .where(episodes_t.c.session_id == session_id)
        .order_by(episodes_t.c.occurred_at.desc(), episodes_t.c.pk.desc())
    )
    if limit is not None:
        stmt = stmt.limit((limit + 1) // 2)
    turns: list[list[Message]] = []
    for row in reversed(conn.execute(stmt).all()):
        turn = []
        if row.input:
            turn.append(Message(role="user", content=row.input, occurred_at=row.occurred_at, episode_id=row.id))
        for step in loads(row.metadata).get("tool_transcript") or []:
            turn.append(Message(occurred_at=row.occurred_at, episode_id=row.id, **step))
        if row.output:
            turn.append(Message(role="assistant", content=row.output, occurred_at=row.occurred_at, episode_id=row.id))
        turns.append(turn)
    spoken = sum(1 for turn in turns for m in turn if m.role in ("user", "assistant") and not m.tool_calls)
    if limit is not None and spoken > limit and turns and turns[0] and turns[0][0].role == "user":
        last = turns[0][-1]
        turns[0] = [last] if last.role == "assistant" and not last.tool_calls else []
    return [m for turn in turns for m in turn]


RECENT_AT_A_MOMENT = 20
"""How many of the latest episodes a snapshot shows."""


def as_of(moment: Moment) -> dict[str, Any]:
    """How many episodes had occurred by the moment, and the latest of them (a snapshot's
    ``episodes`` and ``recent_episodes``). Episodes carry no time of writing: one written later
    with an earlier ``occurred_at`` (an import, a backfill) counts as there."""
    e, tenant = episodes_t, moment.tenant
    count = moment.conn.execute(tenant.select(e, func.count()).where(e.c.occurred_at <= moment.at)).scalar_one()
    latest = moment.conn.execute(
        tenant.select(e).where(e.c.occurred_at <= moment.at).order_by(e.c.occurred_at.desc(), e.c.pk.desc()).limit(RECENT_AT_A_MOMENT)
    )
    return {"episodes": count, "recent_episodes": [to_model(r) for r in latest]}


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    """The tenant's episodes as export records, in the order they were stored, a chunk at a time."""
    for rows in reading.pages(reading.tenant.select(episodes_t), episodes_t.c.pk):
        vectors = reading.vectors("episode", [r.pk for r in rows])
        for r in rows:
            record = reading.record(
                "episode",
                id=r.id,
                session_id=r.session_id,
                occurred_at=iso(r.occurred_at),
                input=r.input,
                output=r.output,
                tool_calls=json.loads(r.tool_calls),
                metadata=json.loads(r.metadata),
            )
            if r.pk in vectors:
                record["embedding"] = vectors[r.pk]
            yield record


def erased(e: Erasing) -> Select[Any] | None:
    """A session's episodes, those before a date, or all of them; none when only facts go."""
    if e.scope.facts_only:
        return None
    episodes = e.tenant.select(episodes_t, episodes_t.c.pk)
    if e.scope.session_id is not None:
        episodes = episodes.where(episodes_t.c.session_id == e.scope.session_id)
    if e.scope.before is not None:
        episodes = episodes.where(episodes_t.c.occurred_at < e.scope.before)
    return episodes


class EpisodeRecord(Record):
    type: Literal["episode"]
    id: Name
    session_id: OptionalName
    occurred_at: Time
    input: Text
    output: Text
    tool_calls: JsonList
    metadata: JsonObject
    embedding: Embedding = None

    def problem(self) -> tuple[str, str] | None:
        if not self.input and not self.output:
            return "input", "an episode needs an input or an output"
        if "tool_transcript" in self.metadata:
            # session_messages replays it as messages: held to remember(tool_transcript=)'s rule.
            try:
                check_transcript(self.metadata["tool_transcript"])
            except InvalidInputError as exc:
                return "metadata.tool_transcript", str(exc)
        return None


def write(importing: Importing, tenant: Tenant, records: list[EpisodeRecord]) -> list[str]:
    """Episodes new to the tenant inserted in bulk with their vectors; one the tenant has under
    the same id is kept."""
    existing = rows_by_id(importing.conn, tenant, episodes_t, [r.id for r in records])
    new: list[tuple[str, dict[str, Any], str]] = []
    outcomes = []
    for r in records:
        text = vector_text(r)
        values = {
            "id": r.id,
            "session_id": r.session_id,
            "occurred_at": r.occurred_at,
            "input": r.input,
            "output": r.output,
            "tool_calls": check_json(r.tool_calls, "tool_calls", limit=importing.max_bytes),
            "metadata": check_json(r.metadata, "metadata", limit=importing.max_bytes),
            "content_hash": content_hash(text),
        }
        row = existing.get(r.id)
        if row is None:
            if r.session_id:
                importing.session_pk(tenant, r.session_id)
            new.append((r.id, values, text))
            outcomes.append(WRITTEN)
        else:
            same = all(getattr(row, k) == v for k, v in values.items() if k != "content_hash")
            outcomes.append(UNCHANGED if same else KEPT)
    insert_with_vectors(importing, tenant, episodes_t, "episode", new)
    return outcomes


def vector_text(record: EpisodeRecord) -> str:
    """What an imported episode's vector is of."""
    return embed_text(record.input, record.output)
