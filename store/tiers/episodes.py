"""Episodes: what happened in a conversation turn, newest first, keyset-paginated."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, tuple_

from ..backend import sql
from ..errors import InvalidInputError, UnknownEpisodeError
from ..models import Episode, EpisodePage, Message
from ..schema import episodes_t, from_micros, to_micros
from ..tenancy import Tenant
from .common import loads


def embed_text(input: str, output: str) -> str:
    """The text an episode is searched by, for both the keyword index and its vector."""
    return f"{input}\n{output}".strip()


def to_model(row) -> Episode:
    # Rows were validated on the way in; model_construct skips validating them again.
    return Episode.model_construct(
        id=row.id,
        user_id=Tenant(row.user_id).user_id,
        session_id=row.session_id,
        occurred_at=row.occurred_at,
        input=row.input,
        output=row.output,
        tool_calls=loads(row.tool_calls),
        metadata=loads(row.metadata),
    )


def insert_episodes(conn: Connection, tenant: Tenant, rows: list[dict[str, Any]]) -> list[int]:
    """Insert prepared rows in one statement; returns their row keys in order."""
    return sql(conn).insert_keyed(conn, episodes_t, [tenant.stamp(row) for row in rows])


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


def filtered(stmt, *, session_id: str | None, since: datetime | None, until: datetime | None):
    """Restrict an episodes query to a session and the time range ``[since, until)``."""
    if session_id is not None:
        stmt = stmt.where(episodes_t.c.session_id == session_id)
    if since is not None:
        stmt = stmt.where(episodes_t.c.occurred_at >= since)
    if until is not None:
        stmt = stmt.where(episodes_t.c.occurred_at < until)
    return stmt


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


def session_messages(conn: Connection, tenant: Tenant, session_id: str, limit: int | None) -> list[Message]:
    """User/assistant messages of a session, oldest first; ``limit`` keeps the newest ones."""
    stmt = (
        tenant.select(episodes_t)
        .where(episodes_t.c.session_id == session_id)
        .order_by(episodes_t.c.occurred_at.desc(), episodes_t.c.pk.desc())
    )
    if limit is not None:
        stmt = stmt.limit((limit + 1) // 2)
    messages: list[Message] = []
    for row in reversed(conn.execute(stmt).all()):
        if row.input:
            messages.append(Message(role="user", content=row.input, occurred_at=row.occurred_at, episode_id=row.id))
        if row.output:
            messages.append(
                Message(role="assistant", content=row.output, occurred_at=row.occurred_at, episode_id=row.id)
            )
    return messages[-limit:] if limit is not None else messages
