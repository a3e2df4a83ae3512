"""Session working memory: key-value entries with TTL, task state, a scratchpad and
checkpoints, per (user_id, session_id). Reached as ``store.session(session_id, user_id=...)``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, Row, Select, Table, func, or_, select

from ..backend import Backend
from ..errors import InvalidInputError, UnknownCheckpointError, UnknownSessionError
from ..models import (
    Change,
    Checkpoint,
    CheckpointDiff,
    KeyValueEntry,
    ScratchpadEntry,
    SessionInfo,
    SessionSnapshot,
    SessionStats,
    TaskState,
)
from ..schema import checkpoints_t, episodes_t, from_micros, kv_t, scratch_t, sessions_t, task_t, tenants_t, to_micros
from ..tenancy import Tenant, across_tenants, in_tenant_groups, same_tenant, user_id_of
from ..validation import (
    check_datetime,
    check_flag,
    check_int,
    check_json,
    check_name,
    check_number,
    check_text,
    check_ttl,
    expiry,
    parse_time,
    utcnow,
)
from .changes import Window
from .common import ensure_session, find_session, loads, new_id, touch_tenant
from .erasing import Erasing
from .importing import UNCHANGED, WRITTEN, Importing
from .moments import Moment
from .record_fields import Name, Record, Time
from .records import Reading, iso

_MISSING = object()


class SessionMemory:
    """Working memory of one session. Reads of a session never written to are empty;
    the first write creates it."""

    def __init__(self, backend: Backend, tenant: Tenant, session_id: str, *, max_content_bytes: int, scratchpad_limit: int):
        self._db = backend
        self._max_bytes = max_content_bytes
        self._scratchpad_limit = scratchpad_limit
        self.tenant = tenant
        self.session_id = session_id

    @property
    def user_id(self) -> str | None:
        return self.tenant.user_id

    def __repr__(self) -> str:
        return f"SessionMemory(session_id={self.session_id!r}, user_id={self.user_id!r})"

    # --- plumbing --------------------------------------------------------------

    def _pk(self, conn: Connection) -> int | None:
        return find_session(conn, self.tenant, self.session_id)

    def _write_pk(self, conn: Connection, now: datetime) -> int:
        touch_tenant(conn, self.tenant, now)
        return ensure_session(conn, self.tenant, self.session_id, now)

    def _live(self, now: datetime) -> ColumnElement[bool]:
        return or_(kv_t.c.expires_at.is_(None), kv_t.c.expires_at > now)

    def _purge_expired(self, conn: Connection, pk: int, now: datetime) -> None:
        conn.execute(self.tenant.delete(kv_t).where(kv_t.c.session_pk == pk, kv_t.c.expires_at.is_not(None), kv_t.c.expires_at <= now))

    # --- key-value entries with TTL ---------------------------------------------

    def set(self, key: str, value: Any, ttl: float | timedelta | None = None, *, search_text: str | None = None) -> None:
        """Store ``value`` (anything JSON can hold) under ``key``, optionally expiring after ``ttl``
        seconds; :meth:`touch` moves the expiry to ``ttl`` after the touch. An entry rewritten keeps
        its ``created_at``. ``search_text``: the text :meth:`~store.memory.MemoryStore.search_keys`
        finds the entry by (None, the default: it is not searched)."""
        check_name(key, "key")
        text = check_json(value, "value", limit=self._max_bytes)
        if search_text is not None:
            check_text(search_text, "search_text", limit=self._max_bytes)
        now = utcnow()
        seconds, expires = check_ttl(ttl, now)
        with self._db.write(self.tenant) as conn:
            pk = self._write_pk(conn, now)
            self._purge_expired(conn, pk, now)
            values = {"value": text, "expires_at": expires, "ttl_seconds": seconds, "search_text": search_text, "updated_at": now}
            updated = conn.execute(self.tenant.update(kv_t).where(kv_t.c.session_pk == pk, kv_t.c.key == key).values(**values))
            if updated.rowcount == 0:
                conn.execute(kv_t.insert().values(self.tenant.stamp({"session_pk": pk, "key": key, **values, "created_at": now})))

    def touch(self, *keys: str) -> int:
        """Refresh the expiry of the live entries under ``keys`` that were given a time to live: each
        now expires that long after this call (a sliding time to live). Their value and
        ``updated_at`` stay. Returns how many were refreshed."""
        for key in keys:
            check_name(key, "key")
        now = utcnow()
        with self._db.write(self.tenant) as conn:
            pk = self._pk(conn)
            if pk is None or not keys:
                return 0
            rows = conn.execute(
                self.tenant.select(kv_t, kv_t.c.pk, kv_t.c.ttl_seconds).where(
                    kv_t.c.session_pk == pk, kv_t.c.key.in_(keys), kv_t.c.ttl_seconds.is_not(None), self._live(now)
                )
            ).all()
            for row_pk, seconds in rows:
                conn.execute(self.tenant.update(kv_t).where(kv_t.c.pk == row_pk).values(expires_at=expiry(seconds, now)))
            return len(rows)

    def get(self, key: str, default: Any = None) -> Any:
        entry = self.entry(key)
        return default if entry is None else entry.value

    def entry(self, key: str) -> KeyValueEntry | None:
        """The entry under ``key`` with its expiry, or None if absent or expired."""
        check_name(key, "key")
        # One statement (the session found inside it): a read by key is what a LangGraph graph
        # asks for most.
        session = self.tenant.select(sessions_t, sessions_t.c.pk).where(sessions_t.c.session_id == self.session_id)
        with self._db.read() as conn:
            row = conn.execute(
                self.tenant.select(kv_t).where(kv_t.c.session_pk == session.scalar_subquery(), kv_t.c.key == key, self._live(utcnow()))
            ).first()
        return None if row is None else kv_entry(row)

    def exists(self, key: str) -> bool:
        return self.entry(key) is not None

    def delete(self, key: str) -> bool:
        check_name(key, "key")
        now = utcnow()
        with self._db.write(self.tenant) as conn:
            pk = self._pk(conn)
            if pk is None:
                return False
            self._purge_expired(conn, pk, now)
            deleted = conn.execute(self.tenant.delete(kv_t).where(kv_t.c.session_pk == pk, kv_t.c.key == key)).rowcount > 0
            if deleted:
                self._touch(conn, pk, now)
            return deleted

    def entries(self) -> list[KeyValueEntry]:
        """Every live entry, by key."""
        with self._db.read() as conn:
            pk = self._pk(conn)
            if pk is None:
                return []
            rows = conn.execute(self.tenant.select(kv_t).where(kv_t.c.session_pk == pk, self._live(utcnow())).order_by(kv_t.c.key)).all()
        return [kv_entry(r) for r in rows]

    def list_keys(self) -> list[str]:
        return [e.key for e in self.entries()]

    def get_all(self) -> dict[str, Any]:
        return {e.key: e.value for e in self.entries()}

    def clear(self, *, keys_only: bool = False) -> int:
        """Forget the key-value entries, task state and scratchpad; checkpoints stay restorable.
        ``keys_only=True`` keeps the task state and scratchpad. Returns how many live keys went."""
        check_flag(keys_only, "keys_only")
        now = utcnow()
        with self._db.write(self.tenant) as conn:
            pk = self._pk(conn)
            if pk is None:
                return 0
            live: int = conn.execute(self.tenant.select(kv_t, func.count()).where(kv_t.c.session_pk == pk, self._live(now))).scalar_one()
            if keys_only:
                conn.execute(self.tenant.delete(kv_t).where(kv_t.c.session_pk == pk))
            else:
                self._clear_state(conn, pk)
            self._touch(conn, pk, now)
            return live

    def _touch(self, conn: Connection, pk: int, now: datetime) -> None:
        """A change that writes no row (a delete) still moves the session's ``updated_at``: a
        snapshot of a past moment trusts a session unchanged since only by that time."""
        conn.execute(self.tenant.update(sessions_t).where(sessions_t.c.pk == pk).values(updated_at=now))

    def _clear_state(self, conn: Connection, pk: int) -> None:
        for table in (kv_t, task_t, scratch_t):
            conn.execute(self.tenant.delete(table).where(table.c.session_pk == pk))

    # --- task state -------------------------------------------------------------

    def set_task_state(
        self,
        task: str,
        *,
        total_steps: int | None = None,
        current_step: int = 0,
        status: str = "in_progress",
        data: dict[str, Any] | None = None,
    ) -> TaskState:
        check_text(task, "task", limit=self._max_bytes)
        _check_data(data)
        now = utcnow()
        state = _make_task_state(task, current_step, total_steps, None, status, data or {}, now)
        self._save_task_state(state, now)
        return state

    def get_task_state(self) -> TaskState | None:
        with self._db.read() as conn:
            pk = self._pk(conn)
            row = None if pk is None else conn.execute(self.tenant.select(task_t).where(task_t.c.session_pk == pk)).first()
        return None if row is None else TaskState.model_validate_json(row.state)

    def update_task_progress(
        self,
        current_step: int | None = None,
        *,
        total_steps: int | None = None,
        progress_percent: float | None = None,
        status: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> TaskState:
        """Move the task on. Without ``progress_percent`` it follows current/total steps; always 0..100."""
        _check_data(data)
        old = self.get_task_state() or TaskState()
        now = utcnow()
        state = _make_task_state(
            old.task,
            old.current_step if current_step is None else current_step,
            old.total_steps if total_steps is None else total_steps,
            progress_percent,
            old.status if status is None else status,
            {**old.data, **(data or {})},
            now,
        )
        self._save_task_state(state, now)
        return state

    def _save_task_state(self, state: TaskState, now: datetime) -> None:
        text = check_text(state.model_dump_json(), "task state", limit=self._max_bytes)
        with self._db.write(self.tenant) as conn:
            pk = self._write_pk(conn, now)
            conn.execute(self.tenant.delete(task_t).where(task_t.c.session_pk == pk))
            conn.execute(task_t.insert().values(self.tenant.stamp({"session_pk": pk, "state": text, "updated_at": now})))

    # --- scratchpad ---------------------------------------------------------------

    def append_scratchpad(self, content: str) -> ScratchpadEntry:
        """Add a timestamped note; past the store's ``scratchpad_limit`` the oldest notes are dropped."""
        check_text(content, "content", limit=self._max_bytes)
        now = utcnow()
        with self._db.write(self.tenant) as conn:
            pk = self._write_pk(conn, now)
            entry_pk = conn.execute(
                scratch_t.insert().values(self.tenant.stamp({"session_pk": pk, "created_at": now, "content": content}))
            ).inserted_primary_key[0]  # type: ignore[index]  # a single-row INSERT always has its key
            keep = select(scratch_t.c.pk).where(scratch_t.c.session_pk == pk).order_by(scratch_t.c.pk.desc())
            keep = keep.limit(self._scratchpad_limit)
            conn.execute(self.tenant.delete(scratch_t).where(scratch_t.c.session_pk == pk, scratch_t.c.pk.not_in(keep)))
        return ScratchpadEntry(id=entry_pk, created_at=now, content=content)

    def get_scratchpad(self, limit: int | None = None) -> list[ScratchpadEntry]:
        """Notes oldest first; ``limit`` keeps the newest ones."""
        if limit is not None:
            check_int(limit, "limit")
        with self._db.read() as conn:
            pk = self._pk(conn)
            if pk is None:
                return []
            stmt = self.tenant.select(scratch_t).where(scratch_t.c.session_pk == pk).order_by(scratch_t.c.pk.desc())
            rows = conn.execute(stmt.limit(limit) if limit is not None else stmt).all()
        return [ScratchpadEntry(id=r.pk, created_at=r.created_at, content=r.content) for r in reversed(rows)]

    def clear_scratchpad(self) -> int:
        with self._db.write(self.tenant) as conn:
            pk = self._pk(conn)
            if pk is None:
                return 0
            cleared: int = conn.execute(self.tenant.delete(scratch_t).where(scratch_t.c.session_pk == pk)).rowcount
            self._touch(conn, pk, utcnow())
            return cleared

    # --- checkpoints -----------------------------------------------------------------

    def create_checkpoint(self, description: str = "") -> str:
        """Snapshot key-value entries, task state and scratchpad; returns the checkpoint id."""
        check_text(description, "description", limit=self._max_bytes)
        now = utcnow()
        with self._db.write(self.tenant) as conn:
            pk = self._write_pk(conn, now)
            snapshot = json.dumps(self._snapshot(conn, pk), ensure_ascii=False)
            checkpoint_id = new_id()
            conn.execute(
                checkpoints_t.insert().values(
                    self.tenant.stamp(
                        {"id": checkpoint_id, "session_pk": pk, "description": description, "created_at": now, "snapshot": snapshot}
                    )
                )
            )
        return checkpoint_id

    def restore_checkpoint(self, checkpoint_id: str) -> None:
        """Put the session back as it was at the checkpoint, in one transaction: all or nothing."""
        check_name(checkpoint_id, "checkpoint_id")
        now = utcnow()
        with self._db.write(self.tenant) as conn:
            pk, snapshot = self._load_checkpoint(conn, checkpoint_id)
            touch_tenant(conn, self.tenant, now)
            self._touch(conn, pk, now)
            self._clear_state(conn, pk)
            kv_rows = [
                self.tenant.stamp(
                    {
                        "session_pk": pk,
                        "key": key,
                        "value": item["value"],
                        "expires_at": None if item["expires_at"] is None else from_micros(item["expires_at"]),
                        "updated_at": now,
                        "created_at": now,
                    }
                )
                for key, item in snapshot["kv"].items()
            ]
            if kv_rows:
                conn.execute(kv_t.insert(), kv_rows)
            if snapshot["task_state"] is not None:
                conn.execute(
                    task_t.insert().values(self.tenant.stamp({"session_pk": pk, "state": snapshot["task_state"], "updated_at": now}))
                )
            notes = [
                self.tenant.stamp({"session_pk": pk, "created_at": from_micros(n["created_at"]), "content": n["content"]})
                for n in snapshot["scratchpad"]
            ]
            if notes:
                conn.execute(scratch_t.insert(), notes)

    def list_checkpoints(self) -> list[Checkpoint]:
        """Checkpoints oldest first."""
        with self._db.read() as conn:
            pk = self._pk(conn)
            if pk is None:
                return []
            rows = conn.execute(
                self.tenant.select(checkpoints_t)
                .where(checkpoints_t.c.session_pk == pk)
                .order_by(checkpoints_t.c.created_at, checkpoints_t.c.pk)
            ).all()
        return [Checkpoint(id=r.id, session_id=self.session_id, description=r.description, created_at=r.created_at) for r in rows]

    def delete_checkpoint(self, checkpoint_id: str) -> None:
        check_name(checkpoint_id, "checkpoint_id")
        with self._db.write(self.tenant) as conn:
            self._load_checkpoint(conn, checkpoint_id)
            conn.execute(self.tenant.delete(checkpoints_t).where(checkpoints_t.c.id == checkpoint_id))

    def diff_checkpoint(self, a: str, b: str | None = None) -> CheckpointDiff:
        """What changed from checkpoint ``a`` to checkpoint ``b``, or to the current state when ``b`` is None."""
        check_name(a, "a")
        if b is not None:
            check_name(b, "b")
        with self._db.read() as conn:
            pk, before = self._load_checkpoint(conn, a)
            after = self._load_checkpoint(conn, b)[1] if b is not None else self._snapshot(conn, pk)
        now = to_micros(utcnow())

        def live(snapshot: dict[str, Any]) -> dict[str, Any]:
            return {k: json.loads(v["value"]) for k, v in snapshot["kv"].items() if v["expires_at"] is None or v["expires_at"] > now}

        old_kv, new_kv = live(before), live(after)
        old_notes = [n["content"] for n in before["scratchpad"]]
        new_notes = [n["content"] for n in after["scratchpad"]]
        return CheckpointDiff(
            a=a,
            b=b,
            task_state_before=task_state_of(before["task_state"]),
            task_state_after=task_state_of(after["task_state"]),
            **state_changes(old_kv, new_kv, old_notes, new_notes),
        )

    def _load_checkpoint(self, conn: Connection, checkpoint_id: str) -> tuple[int, dict[str, Any]]:
        pk = self._pk(conn)
        row = None
        if pk is not None and isinstance(checkpoint_id, str):
            row = conn.execute(
                self.tenant.select(checkpoints_t).where(checkpoints_t.c.session_pk == pk, checkpoints_t.c.id == checkpoint_id)
            ).first()
        if pk is None or row is None:
            raise UnknownCheckpointError(f"no checkpoint {checkpoint_id!r} in session {self.session_id!r} for this user")
        return pk, json.loads(row.snapshot)

    def _snapshot(self, conn: Connection, pk: int) -> dict[str, Any]:
        kv = conn.execute(self.tenant.select(kv_t).where(kv_t.c.session_pk == pk)).all()
        task = conn.execute(self.tenant.select(task_t).where(task_t.c.session_pk == pk)).first()
        notes = conn.execute(self.tenant.select(scratch_t).where(scratch_t.c.session_pk == pk).order_by(scratch_t.c.pk)).all()
        return {
            "kv": {r.key: {"value": r.value, "expires_at": None if r.expires_at is None else to_micros(r.expires_at)} for r in kv},
            "task_state": None if task is None else task.state,
            "scratchpad": [{"created_at": to_micros(n.created_at), "content": n.content} for n in notes],
        }

    # --- stats ---------------------------------------------------------------------

    def get_stats(self) -> SessionStats:
        with self._db.read() as conn:
            pk = self._pk(conn)
            episodes: int = conn.execute(
                self.tenant.select(episodes_t, func.count()).where(episodes_t.c.session_id == self.session_id)
            ).scalar_one()
            if pk is None:
                return SessionStats(
                    session_id=self.session_id, keys=0, scratchpad_entries=0, checkpoints=0, has_task_state=False, episodes=episodes
                )

            def count(table: Table, *where: ColumnElement[bool]) -> int:
                n: int = conn.execute(self.tenant.select(table, func.count()).where(table.c.session_pk == pk, *where)).scalar_one()
                return n

            return SessionStats(
                session_id=self.session_id,
                keys=count(kv_t, self._live(utcnow())),
                scratchpad_entries=count(scratch_t),
                checkpoints=count(checkpoints_t),
                has_task_state=count(task_t) > 0,
                episodes=episodes,
            )

    def require_exists(self) -> SessionMemory:
        with self._db.read() as conn:
            known = (
                self._pk(conn) is not None
                or conn.execute(
                    self.tenant.select(episodes_t, episodes_t.c.pk).where(episodes_t.c.session_id == self.session_id).limit(1)
                ).first()
            )
        if not known:
            raise UnknownSessionError(f"no session {self.session_id!r} for this user")
        return self


def session_infos(conn: Connection, tenant: Tenant) -> list[SessionInfo]:
    """The tenant's sessions with their episode and live key counts, most recently active first."""
    t, e = sessions_t, episodes_t
    counts: dict[str, int] = dict(
        conn.execute(tenant.select(e, e.c.session_id, func.count()).where(e.c.session_id.is_not(None)).group_by(e.c.session_id)).all()
    )
    live = or_(kv_t.c.expires_at.is_(None), kv_t.c.expires_at > utcnow())
    keys: dict[int, int] = dict(
        conn.execute(tenant.select(kv_t, kv_t.c.session_pk, func.count()).where(live).group_by(kv_t.c.session_pk)).all()
    )
    rows = conn.execute(tenant.select(t).order_by(t.c.updated_at.desc(), t.c.pk.desc())).all()
    return [
        SessionInfo(
            session_id=r.session_id,
            created_at=r.created_at,
            updated_at=r.updated_at,
            episodes=counts.get(r.session_id, 0),
            keys=keys.get(r.pk, 0),
        )
        for r in rows
    ]


def keyed_sessions(conn: Connection, prefix: str, keys: list[str] | None) -> list[tuple[str | None, str]]:
    """(user id, session id) of every session, of every tenant (or of the tenants of ``keys``),
    whose id starts with ``prefix`` and that holds a live key: one statement however many
    tenants, where asking each tenant reads its sessions' counts too."""
    s = sessions_t
    live = or_(kv_t.c.expires_at.is_(None), kv_t.c.expires_at > utcnow())
    live_key = select(kv_t.c.pk).where(same_tenant(kv_t, s), kv_t.c.session_pk == s.c.pk, live).exists()
    stmt = across_tenants(s, s.c.session_id, keys=keys).where(live_key)
    if prefix:
        stmt = stmt.where(s.c.session_id.startswith(prefix, autoescape=True))
    return [(user_id_of(key), session_id) for key, session_id in conn.execute(stmt)]


def keyed_sessions_read(
    read: Callable[[], AbstractContextManager[Connection]], prefix: str, per_read: int | None
) -> list[tuple[str | None, str]]:
    """:func:`keyed_sessions` of every tenant, a few tenants a read on PostgreSQL, by user id (the
    anonymous tenant last), then session."""
    found = in_tenant_groups(read, tenants_t, per_read, lambda conn, keys: keyed_sessions(conn, prefix, keys))
    return sorted(found, key=lambda row: (row[0] is None, row[0] or "", row[1]))


def kv_entry(row: Row[Any]) -> KeyValueEntry:
    return KeyValueEntry(
        key=row.key,
        value=loads(row.value),
        expires_at=row.expires_at,
        updated_at=row.updated_at,
        created_at=row.created_at,
        ttl_seconds=row.ttl_seconds,
        search_text=row.search_text,
    )


def task_state_of(text: str | None) -> TaskState | None:
    return None if text is None else TaskState.model_validate_json(text)


def state_changes(old_kv: dict[str, Any], new_kv: dict[str, Any], old_notes: list[str], new_notes: list[str]) -> dict[str, Any]:
    """How a session's keys and notes differ between two states: the fields a checkpoint diff
    and a diff of two moments (store.tiers.snapshots) both report."""
    return {
        "added_keys": {k: v for k, v in new_kv.items() if k not in old_kv},
        "removed_keys": {k: v for k, v in old_kv.items() if k not in new_kv},
        "changed_keys": {k: (old_kv[k], v) for k, v in new_kv.items() if k in old_kv and old_kv[k] != v},
        "scratchpad_added": [n for n in new_notes if n not in old_notes],
        "scratchpad_removed": [n for n in old_notes if n not in new_notes],
    }


def _check_data(data: Any) -> None:
    if data is not None and not isinstance(data, dict):
        raise InvalidInputError(f"data must be a dict (or None), not {type(data).__name__}")


def _make_task_state(
    task: str | None,
    current_step: int,
    total_steps: int | None,
    progress_percent: float | None,
    status: str,
    data: dict[str, Any],
    now: datetime | None,
) -> TaskState:
    check_int(current_step, "current_step")
    if total_steps is not None:
        check_int(total_steps, "total_steps")
    if progress_percent is None:
        progress_percent = 100.0 * current_step / total_steps if total_steps else 0.0
    progress_percent = check_number(progress_percent, "progress_percent")
    check_name(status, "status")
    check_json(data, "data", limit=2**31)
    return TaskState(
        task=task,
        current_step=current_step,
        total_steps=total_steps,
        progress_percent=min(100.0, max(0.0, float(progress_percent))),
        status=status,
        data=data,
        updated_at=now,
    )


# --- the shapes the session tier writes, checked where they come from outside (imports) -------

_TASK_FIELDS = set(TaskState.model_fields)


def check_task_state(state: Any, *, limit: int) -> TaskState:
    """A task state as :meth:`SessionMemory.set_task_state` would have made it: the same
    fields, types and ranges (the steps as 64-bit integers, ``data`` as JSON within limits)."""
    if not isinstance(state, dict):
        raise InvalidInputError(f"task state must be an object, not {type(state).__name__}")
    unknown = set(state) - _TASK_FIELDS
    if unknown:
        raise InvalidInputError(f"task state has unknown fields: {', '.join(sorted(unknown))}")
    task = state.get("task")
    if task is not None:
        check_text(task, "task", limit=limit)
    current_step = check_int(state.get("current_step", 0), "current_step")
    total_steps = state.get("total_steps")
    if total_steps is not None:
        check_int(total_steps, "total_steps")
    percent = state.get("progress_percent", 0.0)
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 <= percent <= 100:
        raise InvalidInputError("progress_percent must be a number from 0 to 100")
    data = state.get("data", {})
    if not isinstance(data, dict):
        raise InvalidInputError("task state data must be an object")
    check_json(data, "data", limit=limit)
    updated_at = state.get("updated_at")
    if updated_at is not None:
        updated_at = parse_time(updated_at, "updated_at")
    return _make_task_state(task, current_step, total_steps, percent, state.get("status", "pending"), data, updated_at)


def check_snapshot(snapshot: Any, *, limit: int) -> dict[str, Any]:
    """A checkpoint snapshot in the shape ``_snapshot`` writes and ``restore_checkpoint`` and
    ``diff_checkpoint`` read: ``kv`` (key to JSON text and expiry in microseconds),
    ``task_state`` (None or a task state as JSON text) and ``scratchpad`` (notes)."""
    if not isinstance(snapshot, dict) or set(snapshot) != {"kv", "task_state", "scratchpad"}:
        raise InvalidInputError("snapshot must be an object with exactly kv, task_state and scratchpad")
    if not isinstance(snapshot["kv"], dict):
        raise InvalidInputError("snapshot kv must be an object")
    for key, item in snapshot["kv"].items():
        check_name(key, "snapshot key")
        if not isinstance(item, dict) or set(item) != {"value", "expires_at"}:
            raise InvalidInputError(f"snapshot kv[{key!r}] must be an object with exactly value and expires_at")
        _json_text(item["value"], f"snapshot kv[{key!r}].value", limit)
        if item["expires_at"] is not None:
            _micros(item["expires_at"], f"snapshot kv[{key!r}].expires_at")
    if snapshot["task_state"] is not None:
        check_task_state(_json_text(snapshot["task_state"], "snapshot task_state", limit), limit=limit)
    if not isinstance(snapshot["scratchpad"], list):
        raise InvalidInputError("snapshot scratchpad must be a list")
    for index, note in enumerate(snapshot["scratchpad"]):
        if not isinstance(note, dict) or set(note) != {"created_at", "content"}:
            raise InvalidInputError(f"snapshot scratchpad[{index}] must be an object with exactly created_at and content")
        _micros(note["created_at"], f"snapshot scratchpad[{index}].created_at")
        check_text(note["content"], f"snapshot scratchpad[{index}].content", limit=limit)
    return snapshot


def _json_text(text: Any, field: str, limit: int) -> Any:
    check_text(text, field, limit=limit)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInputError(f"{field} is not JSON text") from None
    check_json(value, field, limit=limit)
    return value


def _micros(value: Any, field: str) -> datetime:
    check_int(value, field, minimum=-(2**63), maximum=2**63 - 1)
    try:
        moment = from_micros(value)
    except (ValueError, OverflowError, OSError):
        raise InvalidInputError(f"{field} is not a time memlens can represent") from None
    return check_datetime(moment, field)


# The sessions tier: its export records, what an erasure takes, its import record and writer.


def changes(window: Window) -> Iterator[Change]:
    """Each session as started."""
    for r in window.conn.execute(window.within(window.tenant.select(sessions_t), sessions_t.c.created_at)):
        yield Change(at=r.created_at, tier="session", kind="started", name=r.session_id, detail="")


def as_of(moment: Moment) -> dict[str, Any]:
    """Each session that existed by the moment, as far as it can be rebuilt (a snapshot's
    ``sessions``, with ``gaps`` naming those not shown as they were).

    Sessions keep no change history, by choice: an agent writes them at every turn (keys with a
    time to live, task progress), a copy of every write would double the tier's writes and hold
    values past their expiry, and checkpoints are where an agent already says "keep this state".
    A session unchanged since the moment is shown as it is now ("current": its keys live then; a
    key that expired since and was purged is missing); one changed since, as its latest
    checkpoint taken by then ("checkpoint": changes between it and the moment are not in it), or
    not at all ("unknown")."""
    conn, tenant, at, e = moment.conn, moment.tenant, moment.at, episodes_t
    counts: dict[str, int] = dict(
        conn.execute(
            tenant.select(e, e.c.session_id, func.count())
            .where(e.c.session_id.is_not(None), e.c.occurred_at <= at)
            .group_by(e.c.session_id)
        ).all()
    )
    shown = [
        _session_at(conn, tenant, row, at).model_copy(update={"episodes": counts.get(row.session_id, 0)})
        for row in conn.execute(tenant.select(sessions_t).where(sessions_t.c.created_at <= at).order_by(sessions_t.c.session_id))
    ]
    gaps = [f"session {s.session_id!r}: changed since, and no checkpoint by then" for s in shown if s.source == "unknown"]
    gaps += [
        f"session {s.session_id!r}: as of its checkpoint at {s.checkpoint_at.isoformat()}"
        for s in shown
        if s.source == "checkpoint" and s.checkpoint_at
    ]
    return {"sessions": shown, "gaps": gaps}


def _session_at(conn: Connection, tenant: Tenant, session: Any, at: datetime) -> SessionSnapshot:
    pk = session.pk
    if session.updated_at <= at:
        kv = conn.execute(tenant.select(kv_t).where(kv_t.c.session_pk == pk).order_by(kv_t.c.key)).all()
        task = conn.execute(tenant.select(task_t).where(task_t.c.session_pk == pk)).first()
        notes = conn.execute(tenant.select(scratch_t).where(scratch_t.c.session_pk == pk).order_by(scratch_t.c.pk)).all()
        return SessionSnapshot(
            session_id=session.session_id,
            source="current",
            updated_at=session.updated_at,
            kv=[kv_entry(r) for r in kv if r.expires_at is None or r.expires_at > at],
            task_state=None if task is None else task_state_of(task.state),
            scratchpad=[ScratchpadEntry(id=n.pk, created_at=n.created_at, content=n.content) for n in notes],
        )
    c = checkpoints_t
    checkpoint = conn.execute(
        tenant.select(c).where(c.c.session_pk == pk, c.c.created_at <= at).order_by(c.c.created_at.desc(), c.c.pk.desc())
    ).first()
    if checkpoint is None:
        return SessionSnapshot(session_id=session.session_id, source="unknown")
    held = json.loads(checkpoint.snapshot)
    return SessionSnapshot(
        session_id=session.session_id,
        source="checkpoint",
        checkpoint_id=checkpoint.id,
        checkpoint_at=checkpoint.created_at,
        updated_at=checkpoint.created_at,
        kv=[
            KeyValueEntry(
                key=key,
                value=json.loads(item["value"]),
                expires_at=None if item["expires_at"] is None else from_micros(item["expires_at"]),
                updated_at=checkpoint.created_at,
            )
            for key, item in sorted(held["kv"].items())
            if item["expires_at"] is None or from_micros(item["expires_at"]) > at
        ],
        task_state=task_state_of(held["task_state"]),
        scratchpad=[ScratchpadEntry(id=0, created_at=from_micros(n["created_at"]), content=n["content"]) for n in held["scratchpad"]],
    )


def records(reading: Reading) -> Iterator[dict[str, Any]]:
    for s in reading.conn.execute(reading.tenant.select(sessions_t).order_by(sessions_t.c.session_id)):
        yield reading.record("session", session_id=s.session_id, created_at=iso(s.created_at), updated_at=iso(s.updated_at))


# A whole session (or tenant) goes with its working memory; a date range alone keeps the current
# state (the sessions, their keys and task) and removes only what is older than the date; an
# erasure of facts alone takes none of these.


def erased(e: Erasing) -> Select[Any] | None:
    return None if e.scope.facts_only or e.scope.before is not None else e.sessions()


class SessionRecord(Record):
    type: Literal["session"]
    session_id: Name
    created_at: Time
    updated_at: Time


# Sessions are imported first (the registry's import order), so a session's own times are in
# place before its other records touch it.


def write(importing: Importing, tenant: Tenant, records: list[SessionRecord]) -> list[str]:
    """A session new here is made with the file's times; one the tenant has spans both."""
    conn, outcomes = importing.conn, []
    for r in records:
        row = conn.execute(tenant.select(sessions_t).where(sessions_t.c.session_id == r.session_id)).first()
        if row is None:
            values = {"session_id": r.session_id, "created_at": r.created_at, "updated_at": r.updated_at}
            conn.execute(sessions_t.insert().values(tenant.stamp(values)))
            outcomes.append(WRITTEN)
            continue
        created, updated = min(row.created_at, r.created_at), max(row.updated_at, r.updated_at)
        if (created, updated) == (row.created_at, row.updated_at):
            outcomes.append(UNCHANGED)
            continue
        conn.execute(tenant.update(sessions_t).where(sessions_t.c.pk == row.pk).values(created_at=created, updated_at=updated))
        outcomes.append(WRITTEN)
    return outcomes
