"""The synchronous store: one object per database, safe to share between threads.

A façade: each method checks its arguments, resolves the caller's tenant once and hands it to
the tier module (:mod:`store.tiers`) or the service it composes (:mod:`store.recall.service`,
:mod:`store.rights.service`, :mod:`store.consolidation`) that does the work."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from . import schema, tenancy
from .backend import Backend, open_backend
from .consolidation import Consolidation
from .embedding import Embedder
from .errors import DuplicateIdError, InvalidInputError, ReadOnlyStoreError, UnknownTraceError
from .locations import foreign_scheme
from .models import (
    Activity,
    AuditEntry,
    Block,
    BlockHistory,
    Change,
    Episode,
    EpisodePage,
    Fact,
    ForgetReceipt,
    ImportReport,
    MemoryDiff,
    MemorySnapshot,
    Message,
    MigrationReport,
    PendingScrub,
    Profile,
    RecallExplanation,
    RecallHit,
    RecallReplay,
    RecallTrace,
    SessionInfo,
    StoreStats,
    TenantSummary,
    TierCounts,
    VectorIndexReport,
)
from .recall import indexing
from .recall.explain import explain as explain_recall
from .recall.hits import Mode
from .recall.indexing import Indexer, recorded_model
from .recall.replay import replay as replay_recall
from .recall.service import RecallScope, RecallService
from .rights.erasure import erasure_count, erasures_after
from .rights.service import DataRights
from .tenancy import UNSET, Tenant, named_tenants_exist, resolve
from .tiers import blocks, episodes, facts, overview, sessions, snapshots, timeline, traces
from .tiers.common import content_hash, ensure_session, ids_present, touch_tenant
from .tiers.sessions import SessionMemory
from .validation import (
    DEFAULT_MAX_CONTENT_BYTES,
    check_datetime,
    check_flag,
    check_int,
    check_name,
    check_optional_datetime,
    check_optional_name,
    check_optional_text,
    check_text,
    utcnow,
)

TRACE_ENV = "MEMLENS_TRACE"
"""The environment variable that turns the recall trace on for stores opened with ``trace=None``."""
_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _tracing(trace: bool | None, read_only: bool) -> bool:
    """Whether a store opened with ``trace`` keeps its recalls: the switch, else the environment."""
    if trace is not None:
        check_flag(trace, "trace")
        if trace and read_only:
            raise InvalidInputError("a read-only store cannot keep recall traces: open it with read_only=False, or trace=False")
        return trace
    value = os.environ.get(TRACE_ENV, "").strip().lower()
    if value not in _ON + _OFF:
        raise InvalidInputError(f"{TRACE_ENV} must be one of {', '.join(repr(v) for v in _ON + _OFF[1:])}, not {value!r}")
    return value in _ON and not read_only


class MemoryStore:
    """An agent-memory store in one SQLite file.

    Open it with :meth:`open`. Every method takes ``user_id``; ``None`` is the anonymous
    bucket, a partition of its own. Nothing a method reads or writes crosses tenants.
    """

    def __init__(
        self,
        db: Backend,
        indexer: Indexer,
        *,
        max_content_bytes: int,
        scratchpad_limit: int,
        block_versions_kept: int = blocks.DEFAULT_VERSIONS_KEPT,
        tracer: traces.Tracer | None = None,
        trace_ttl: timedelta = traces.DEFAULT_TTL,
    ):
        self._db = db
        self._tracer = tracer
        self.trace_ttl = trace_ttl
        self._indexer = indexer
        self.max_content_bytes = max_content_bytes
        self.scratchpad_limit = scratchpad_limit
        self.block_versions_kept = block_versions_kept
        # Every method resolves its user_id here, once, and hands the tenant down.
        self._recall = RecallService(db, indexer)
        self._rights = DataRights(db, indexer, max_content_bytes=max_content_bytes)
        self._consolidation = Consolidation(db, indexer, max_content_bytes=max_content_bytes)
        db.after_write = self._rights.after_write

    @classmethod
    def open(
        cls,
        path_or_url: str | Path,
        *,
        read_only: bool = False,
        create: bool = True,
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        scratchpad_limit: int = 100,
        embedder: Any = "default",
        check_model: bool = True,
        block_versions_kept: int = blocks.DEFAULT_VERSIONS_KEPT,
        trace: bool | None = None,
        traces_kept: int = traces.DEFAULT_KEPT,
        trace_ttl: timedelta = traces.DEFAULT_TTL,
    ) -> MemoryStore:
        """Open (or create) the memlens store at ``path_or_url``: a file path, an ``sqlite:///``
        URL or a ``postgresql://`` one. Another library's memory (``loomflow-sqlite:FILE``,
        ``chroma:DIR``) is opened where it lives by :func:`store.open`; here it raises
        :class:`~store.errors.InvalidInputError`.

        A file that is not a memlens store is refused without being changed; an older
        schema is migrated in one transaction; a newer one is refused. A missing file is
        created owner-only (0600) unless ``create=False``, which raises
        :class:`~store.errors.StoreNotFoundError` instead, as does ``read_only=True``; with
        ``create=False`` an empty file is refused too rather than made a store.

        ``embedder`` is ``"default"`` (the packaged all-MiniLM-L6-v2, loaded on first need),
        a local model directory, an :class:`~store.embedding.Embedder`, or None for keyword
        recall only. A store whose vectors came from another model is refused unless
        ``check_model=False`` (for :meth:`reembed`).

        ``block_versions_kept``: how many earlier versions of each working block are kept
        (:meth:`block_history`, at least 1); older ones are dropped for good.

        ``trace=True`` keeps every recall made through the store (:meth:`recall`,
        :meth:`recall_facts`, :meth:`search_keys`, and so every compat module and the async
        twin): :meth:`recall_traces`. None (the default) follows the ``MEMLENS_TRACE`` environment
        variable (``1``/``true``/``yes``/``on``), off when it is unset; a read-only store never
        traces. Each tenant keeps its newest ``traces_kept`` traces for at most ``trace_ttl``.
        """
        check_int(max_content_bytes, "max_content_bytes", minimum=1)
        check_int(traces_kept, "traces_kept", minimum=1)
        if not isinstance(trace_ttl, timedelta) or trace_ttl <= timedelta(0):
            raise InvalidInputError("trace_ttl must be a positive timedelta")
        tracing = _tracing(trace, read_only)
        check_int(block_versions_kept, "block_versions_kept", minimum=1)
        check_int(scratchpad_limit, "scratchpad_limit", minimum=1)
        check_flag(read_only, "read_only")
        if foreign_scheme(path_or_url) is not None:
            raise InvalidInputError(
                f"{path_or_url} is another library's memory, not a memlens store: store.open({str(path_or_url)!r}) shows it where it lives"
            )
        embedder = indexing.make_embedder(embedder)  # looked up at call time, so tests can swap it
        width = embedder.dim if embedder is not None and check_model else None
        db = open_backend(path_or_url, read_only=read_only, create=create, vector_dim=width)
        try:
            if check_model:
                with db.read() as conn:
                    indexing.check_model(conn, embedder, db.path)
            indexer = Indexer(embedder, db, erasure_count, erasures_after)
            store = cls(
                db,
                indexer,
                max_content_bytes=max_content_bytes,
                scratchpad_limit=scratchpad_limit,
                block_versions_kept=block_versions_kept,
                tracer=traces.Tracer(db, kept=traces_kept, ttl=trace_ttl) if tracing else None,
                trace_ttl=trace_ttl,
            )
            # An erasure whose process died (or met a reader) before its bytes were scrubbed is
            # finished here, and expired key-value entries leave the file.
            store._rights.finish_scrubs(budget=0.5)
        except BaseException:
            db.close()
            raise
        return store

    @property
    def path(self) -> Path | str:
        """The SQLite file's path, or the PostgreSQL server's URL."""
        return self._db.path

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    def data_version(self) -> int:
        """Changes whenever anyone commits to the store: poll it to know when to refresh a view."""
        return self._db.data_version()

    def close(self) -> None:
        if self._tracer is not None:
            self._tracer.close()  # the traces handed over are written before the store goes
        self._indexer.cache.close()
        self._db.close()

    def _traces_written(self) -> None:
        """Wait for the traces this process handed over, so a read, export or erasure sees them."""
        if self._tracer is not None:
            self._tracer.flush()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.path)!r}, read_only={self.read_only})"

    def _tenant(self, user_id: Any) -> Tenant:
        """``user_id`` as a tenant (:func:`store.tenancy.resolve`); called by the public method
        itself, so a warning names the line that called that method."""
        return resolve(user_id, self._named_tenants_exist, stacklevel=3)

    def _named_tenants_exist(self) -> bool:
        with self._db.read() as conn:
            return named_tenants_exist(conn, schema.tenants_t)

    def _text(self, value: Any, field: str) -> str:
        return check_text(value, field, limit=self.max_content_bytes)

    # --- working blocks ------------------------------------------------------------

    def working(self, *, user_id: str | None = UNSET, as_of: datetime | None = None) -> list[Block]:
        """The tenant's working blocks in pinned order; with ``as_of``, as they read at that
        moment (each with the time its content then was written). A block whose version at that
        moment the history cap dropped (``block_versions_kept``) is left out."""
        tenant = self._tenant(user_id)
        as_of = check_optional_datetime(as_of, "as_of")
        with self._db.read() as conn:
            return blocks.list_blocks(conn, tenant) if as_of is None else blocks.blocks_as_of(conn, tenant, as_of)

    def snapshot(self, *, user_id: str | None = UNSET, as_of: datetime) -> MemorySnapshot:
        """The tenant's memory as it stood at ``as_of``, every tier: blocks as they read then and
        facts as the store held them then (both exactly), the number of episodes that had
        occurred by then and the latest of them, and each session's key-value entries, task state
        and scratchpad as far as they can be rebuilt.

        What cannot be rebuilt, and how the snapshot says so: sessions keep no change history,
        so a session changed since ``as_of`` is shown as its latest checkpoint by then
        (``source="checkpoint"``; changes between that checkpoint and ``as_of`` are missing) or
        not at all (``source="unknown"``), and a key that expired since and was purged is
        missing from a session unchanged since; episodes carry no time of writing, so one written
        later with an earlier ``occurred_at`` (an import, a backfill) counts as present; a block
        whose version at ``as_of`` the history cap dropped is left out. ``gaps`` lists, in words,
        the sessions not shown as they were. ``recent_recalls``: the latest recalls kept by then
        (a store opened with ``trace=True``), newest first."""
        tenant = self._tenant(user_id)
        as_of = check_datetime(as_of, "as_of")
        self._traces_written()
        with self._db.read() as conn:
            return snapshots.memory_at(conn, tenant, as_of, recalls_since=utcnow() - self.trace_ttl)

    def memory_diff(self, *, user_id: str | None = UNSET, a: datetime, b: datetime) -> MemoryDiff:
        """What changed in the tenant's memory from moment ``a`` to moment ``b``: the two
        :meth:`snapshot` s compared, tier by tier (blocks, the facts current at each, the number of
        episodes, each session's keys, task state and notes); ``gaps`` says what either moment
        could not rebuild."""
        tenant = self._tenant(user_id)
        a, b = check_datetime(a, "a"), check_datetime(b, "b")
        with self._db.read() as conn:
            return snapshots.diff(conn, tenant, a, b)

    def timeline(
        self, *, user_id: str | None = UNSET, since: datetime | None = None, until: datetime | None = None, limit: int = 200
    ) -> list[Change]:
        """The tenant's changes in ``[since, until)``, newest first, at most ``limit``: blocks
        written and deleted, facts recorded and their validity changed, sessions started and
        checkpointed. Each ``at`` is a moment :meth:`snapshot` can show. Episodes are not listed
        one by one (see :meth:`episodes`)."""
        tenant = self._tenant(user_id)
        since = check_optional_datetime(since, "since")
        until = check_optional_datetime(until, "until")
        check_int(limit, "limit", minimum=1, maximum=10_000)
        with self._db.read() as conn:
            return timeline.changes(conn, tenant, since=since, until=until, limit=limit)

    def block_history(self, name: str, *, user_id: str | None = UNSET) -> BlockHistory:
        """Every kept version of the block ``name``, oldest first, the current one (if the block
        exists) last: its content, slot, when it was written, and when and by which operation
        (``update``, ``append``, ``delete``) it was replaced. ``earlier_dropped`` says the cap
        dropped older ones."""
        tenant = self._tenant(user_id)
        check_name(name, "name")
        with self._db.read() as conn:
            return blocks.history(conn, tenant, name)

    def get_block(self, name: str, *, user_id: str | None = UNSET) -> Block | None:
        tenant = self._tenant(user_id)
        check_name(name, "name")
        with self._db.read() as conn:
            return blocks.get_block(conn, tenant, name)

    def update_block(self, name: str, content: str, *, user_id: str | None = UNSET) -> Block:
        """Set a block's content; an existing block keeps its slot, a new one goes last."""
        tenant = self._tenant(user_id)
        check_name(name, "name")
        self._text(content, "content")
        now = utcnow()
        with self._db.write(tenant) as conn:
            touch_tenant(conn, tenant, now)
            return blocks.put_block(conn, tenant, name, content, now, kept=self.block_versions_kept)

    def append_block(self, name: str, content: str, *, user_id: str | None = UNSET, separator: str = "\n") -> Block:
        """Append to a block (creating it if needed); the whole block must stay within the size limit."""
        tenant = self._tenant(user_id)
        check_name(name, "name")
        self._text(content, "content")
        self._text(separator, "separator")
        now = utcnow()
        with self._db.write(tenant) as conn:
            current = blocks.get_block(conn, tenant, name)
            combined = content if current is None or not current.content else current.content + separator + content
            self._text(combined, "content")
            touch_tenant(conn, tenant, now)
            return blocks.put_block(conn, tenant, name, combined, now, op="append", kept=self.block_versions_kept)

    def delete_block(self, name: str, *, user_id: str | None = UNSET) -> bool:
        tenant = self._tenant(user_id)
        check_name(name, "name")
        now = utcnow()
        with self._db.write(tenant) as conn:
            return blocks.delete_block(conn, tenant, name, now, kept=self.block_versions_kept)

    # --- episodes ----------------------------------------------------------------------

    def remember(
        self,
        input: str,
        output: str = "",
        *,
        user_id: str | None = UNSET,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        tool_calls: list[Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        id: str | None = None,
        tool_transcript: list[Mapping[str, Any]] | None = None,
        on_duplicate: str = "refuse",
    ) -> Episode:
        """Store one episode (a user input and the agent's output) and return it.

        ``tool_transcript``: the tool work between input and output, as messages
        (``{"role": "assistant" | "tool", "content", "name"?, "tool_call_id"?, "tool_calls"?}``);
        kept in ``metadata["tool_transcript"]`` and replayed by :meth:`session_messages`.
        """
        item = {
            "input": input,
            "output": output,
            "session_id": session_id,
            "occurred_at": occurred_at,
            "tool_calls": tool_calls,
            "metadata": metadata,
            "id": id,
            "tool_transcript": tool_transcript,
        }
        return self._remember_many([item], self._tenant(user_id), on_duplicate)[0]

    def remember_many(
        self, items: Iterable[Mapping[str, Any]], *, user_id: str | None = UNSET, on_duplicate: str = "refuse"
    ) -> list[Episode]:
        """Store many episodes in one transaction; each item takes :meth:`remember`'s keywords.

        Every item is validated before anything is written. An ``id`` is unique within the
        tenant: with ``on_duplicate="refuse"`` (the default) one the tenant already has raises
        :class:`~store.errors.DuplicateIdError` and nothing is stored; with ``"replace"`` the
        tenant's episode of that id is replaced (its keyword index and vector go with it; it
        stays consolidated only if its text is unchanged). An id twice in ``items`` is always
        refused. Other tenants' ids are no concern of this one.
        """
        return self._remember_many(items, self._tenant(user_id), on_duplicate)

    def _remember_many(self, items: Iterable[Mapping[str, Any]], tenant: Tenant, on_duplicate: str) -> list[Episode]:
        if on_duplicate not in ("refuse", "replace"):
            raise InvalidInputError("on_duplicate must be 'refuse' or 'replace'")
        now = utcnow()
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
            raise InvalidInputError("items must be a list of mappings of remember()'s keywords")
        rows = [episodes.prepare_row(item, index, now, self.max_content_bytes) for index, item in enumerate(items)]
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        repeated = [i for i, n in Counter(ids).items() if n > 1]
        if repeated:
            raise DuplicateIdError(f"episode id {repeated[0]!r} appears more than once in this batch; nothing was stored")
        hashes = [r["content_hash"] for r in rows]
        vectors = self._indexer.prepare(tenant, "episode", [episodes.embed_text(r["input"], r["output"]) for r in rows], hashes)
        with self._db.write(tenant) as conn:
            taken = ids_present(conn, tenant, schema.episodes_t, ids)
            if taken and on_duplicate == "replace":
                episodes.drop_for_replacement(conn, tenant, rows, taken)
            elif taken:
                raise DuplicateIdError(
                    f"this user already has an episode with id {sorted(taken)[0]!r}; pick another id or leave it out "
                    "to get a new one (nothing was stored)"
                )
            touch_tenant(conn, tenant, now)
            for session_id in dict.fromkeys(r["session_id"] for r in rows if r["session_id"] is not None):
                ensure_session(conn, tenant, session_id, now)
            pks = episodes.insert_episodes(conn, tenant, rows)
            self._indexer.save(conn, tenant, "episode", pks, hashes, vectors)
        return episodes.stored(tenant, rows)

    def get_episode(self, episode_id: str, *, user_id: str | None = UNSET) -> Episode:
        tenant = self._tenant(user_id)
        check_name(episode_id, "episode_id")
        with self._db.read() as conn:
            return episodes.get_episode(conn, tenant, episode_id)

    def episodes(
        self,
        *,
        user_id: str | None = UNSET,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> EpisodePage:
        """One page of episodes, newest first, in ``[since, until)``. Pages in constant time at any depth."""
        tenant = self._tenant(user_id)
        check_optional_name(session_id, "session_id")
        since = check_optional_datetime(since, "since")
        until = check_optional_datetime(until, "until")
        check_int(limit, "limit", minimum=1, maximum=10_000)
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidInputError("cursor must be the next_cursor text of a page episodes() returned")
        with self._db.read() as conn:
            return episodes.page_episodes(conn, tenant, session_id=session_id, since=since, until=until, limit=limit, cursor=cursor)

    def session_messages(self, session_id: str, *, user_id: str | None = UNSET, limit: int | None = None) -> list[Message]:
        """The session's conversation as user/assistant messages, oldest first."""
        tenant = self._tenant(user_id)
        check_name(session_id, "session_id")
        if limit is not None:
            check_int(limit, "limit", minimum=1, maximum=2**62)
        with self._db.read() as conn:
            return episodes.session_messages(conn, tenant, session_id, limit)

    # --- facts --------------------------------------------------------------------------

    def add_fact(
        self,
        subject: str,
        predicate: str,
        object: str,
        *,
        user_id: str | None = UNSET,
        confidence: float = 1.0,
        valid_from: datetime | None = None,
        source_episode_ids: Iterable[str] = (),
        id: str | None = None,
    ) -> Fact:
        """Record a fact. The fact of the same subject and predicate whose validity holds
        ``valid_from`` ends there (kept, not deleted) and the new one takes the rest of it: the
        open fact, when the new one is later; a closed one, when it corrects the past (the new
        fact then ends where the next one starts). The store records each such change with its
        time, so :meth:`facts` can answer as it knew things at any moment (``known_at``). ``id`` names the new
        fact (default: a new id); one the tenant already uses for a fact raises
        :class:`~store.errors.DuplicateIdError` and nothing is stored. Stating the open fact's
        object again is corroboration: the open fact gains the sources and is returned, with
        its own id."""
        tenant = self._tenant(user_id)
        fact_id = None if id is None else check_name(id, "id")
        for value, field in ((subject, "subject"), (predicate, "predicate"), (object, "object")):
            check_text(value, field, limit=self.max_content_bytes, allow_empty=False)
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
            raise InvalidInputError("confidence must be a number from 0 to 1")
        given = None if valid_from is None else check_datetime(valid_from, "valid_from")
        if isinstance(source_episode_ids, (str, bytes)) or not isinstance(source_episode_ids, Iterable):
            raise InvalidInputError("source_episode_ids must be a list of episode ids")
        sources = [check_name(s, "source_episode_ids") for s in source_episode_ids]
        text = facts.fact_text(subject, predicate, object)
        digest = content_hash(text)
        vectors = self._indexer.prepare(tenant, "fact", [text], [digest])
        with self._db.write(tenant) as conn:
            # "Now" is read once the write has begun: read before it, another process's fact on
            # the same subject could commit meanwhile with a later time, and this one would be
            # refused as superseding backwards (three processes did so in tests/test_many_writers.py).
            now = utcnow()
            valid_from = now if given is None else given
            touch_tenant(conn, tenant, now)
            fact, pk = facts.add_fact(
                conn,
                tenant,
                subject=subject,
                predicate=predicate,
                object=object,
                confidence=float(confidence),
                valid_from=valid_from,
                recorded_at=now,
                source_episode_ids=sources,
                fact_id=fact_id,
            )
            self._indexer.save(conn, tenant, "fact", [pk], [digest], vectors)
        return fact

    def end_fact(self, id: str, *, user_id: str | None = UNSET, at: datetime | None = None) -> Fact:
        """The open fact ``id`` stops being believed at ``at`` (default: now), with nothing in
        its place: a retraction, where :meth:`add_fact` supersedes. The fact stays in the history
        (``include_history``, ``valid_at``, ``known_at`` before the change); erase it with
        :meth:`forget`. Returns the fact as ended. An id the tenant does not hold raises
        :class:`~store.errors.UnknownFactError`; a fact already ended, or an ``at`` not after
        its ``valid_from``, raises :class:`~store.errors.InvalidInputError`; nothing is changed."""
        tenant = self._tenant(user_id)
        fact_id = check_name(id, "id")
        given = None if at is None else check_datetime(at, "at")
        with self._db.write(tenant) as conn:
            now = utcnow()
            touch_tenant(conn, tenant, now)
            return facts.end_fact(conn, tenant, fact_id, now if given is None else given, now)

    def facts(
        self,
        *,
        user_id: str | None = UNSET,
        valid_at: datetime | None = None,
        subject: str | None = None,
        include_history: bool = False,
        predicate: str | None = None,
        object: str | None = None,
        known_at: datetime | None = None,
    ) -> list[Fact]:
        """Facts believed at ``valid_at`` (default: the current ones); ``include_history`` lists
        superseded ones too. ``subject``, ``predicate`` and ``object`` match exactly.

        ``known_at`` asks as the store knew it then: only facts recorded by that moment, each
        with the ``valid_until`` it had then (a later supersession or correction of the past
        does not change the answer). So ``facts(valid_at=V, known_at=K)`` is "what was true at
        V, as the store knew it at K"; ``known_at`` alone gives the facts current at K."""
        tenant = self._tenant(user_id)
        valid_at = check_optional_datetime(valid_at, "valid_at")
        known_at = check_optional_datetime(known_at, "known_at")
        for value, field in ((subject, "subject"), (predicate, "predicate"), (object, "object")):
            if value is not None:
                check_text(value, field, limit=self.max_content_bytes)
        check_flag(include_history, "include_history")
        with self._db.read() as conn:
            return facts.list_facts(
                conn,
                tenant,
                valid_at=valid_at,
                subject=subject,
                include_history=include_history,
                predicate=predicate,
                object=object,
                known_at=known_at,
            )

    def consolidate(
        self,
        extract: Callable[[Episode], Iterable[Any]],
        *,
        user_id: str | None = UNSET,
        session_id: str | None = None,
        limit: int = 1000,
        all_tenants: bool = False,
    ) -> list[Fact]:
        """Turn episodes into facts with ``extract`` (an LLM call, rules, anything).

        ``all_tenants=True`` (no ``user_id``) runs it for every tenant in turn, each in its own
        transaction, ``limit`` per tenant: for a background worker that serves every user.

        ``extract(episode)`` returns ``(subject, predicate, object)`` or ``(subject, predicate,
        object, confidence)`` tuples. Each fact is recorded with the episode as its source (so
        forgetting the episode takes the fact with it), valid from when the episode happened.
        Up to ``limit`` episodes not yet consolidated (and not cited by a fact) are shown to
        ``extract``, oldest first. All or nothing: if ``extract`` raises or returns something
        malformed, no fact is stored and no episode is marked. Otherwise one transaction stores
        every fact and marks every episode shown, including those that yielded nothing, so none
        is shown again. Returns the facts added, oldest episode first.
        """
        check_flag(all_tenants, "all_tenants")
        if not callable(extract):
            raise InvalidInputError("extract must be a callable taking an Episode")
        if all_tenants:
            if user_id is not UNSET:
                raise InvalidInputError("pass user_id or all_tenants=True, not both")
            with self._db.read() as conn:
                tenant_ids = [t.user_id for t in tenancy.all_tenants(conn, schema.tenants_t)]
            return [fact for uid in tenant_ids for fact in self.consolidate(extract, user_id=uid, session_id=session_id, limit=limit)]
        tenant = self._tenant(user_id)
        check_optional_name(session_id, "session_id")
        check_int(limit, "limit", minimum=1)
        if self.read_only:  # before the extractor runs, not after: its calls may cost money
            raise ReadOnlyStoreError(f"{self.path} is open read-only; reopen it with read_only=False to consolidate")
        return self._consolidation.run(extract, tenant, session_id, limit)

    # --- sessions ---------------------------------------------------------------------

    def session(self, session_id: str, *, user_id: str | None = UNSET, create: bool = True) -> SessionMemory:
        """The working memory of one session. With ``create=False`` an unknown session raises
        :class:`~store.errors.UnknownSessionError`."""
        tenant = self._tenant(user_id)
        check_flag(create, "create")
        memory = SessionMemory(
            self._db,
            tenant,
            check_name(session_id, "session_id"),
            max_content_bytes=self.max_content_bytes,
            scratchpad_limit=self.scratchpad_limit,
        )
        return memory if create else memory.require_exists()

    def sessions(self, *, user_id: str | None = UNSET) -> list[SessionInfo]:
        """The tenant's sessions, most recently active first."""
        tenant = self._tenant(user_id)
        with self._db.read() as conn:
            return sessions.session_infos(conn, tenant)

    def keyed_sessions(self, prefix: str = "") -> list[tuple[str | None, str]]:
        """(user id, session id) of every tenant's sessions whose id starts with ``prefix`` and
        that hold a live key, by user and session: what a listing across every user needs (a
        LangGraph namespace listing), without asking each tenant for its sessions."""
        check_text(prefix, "prefix", limit=self.max_content_bytes)
        return sessions.keyed_sessions_read(self._db.read, prefix, self._db.tenants_per_read)

    def purge_expired(self) -> int:
        """Delete every expired key-value entry and every recall trace past ``trace_ttl`` of
        every tenant (reads already hide both), then scrub their bytes from the storage as a
        forget does (left pending if a reader is in the way). Returns how many went."""
        self._traces_written()
        return self._rights.purge_expired(traces_before=utcnow() - self.trace_ttl)

    # --- recall (forwarded to the recall service) ---------------------------------------

    def recall(
        self,
        query: str,
        *,
        user_id: str | None = UNSET,
        limit: int = 5,
        session_id: str | None = None,
        time_range: tuple[datetime | None, datetime | None] | None = None,
        kind: RecallScope = "episodic",
        mode: Mode = "hybrid",
        prefix: bool = False,
        label: str | None = None,
    ) -> list[RecallHit]:
        """Search the tenant's memories; every hit carries its score breakdown.

        ``kind``: ``"episodic"``, ``"facts"`` (current ones), ``"working"`` (blocks),
        ``"scratchpad"`` or ``"all"``. ``mode``: ``"hybrid"`` (vector and BM25 keyword
        candidates, ordered by cosine plus query-word coverage and any exact identifier: see
        the recall docs), ``"keyword"`` or ``"vector"``; without an embedder
        hybrid is keyword-only. ``prefix=True`` treats the last word as a prefix, for
        search as you type. An empty query returns the most recent episodes. ``label``: what the
        recall trace records as its caller (with tracing on, :meth:`recall_traces`).
        """
        tenant, label = self._tenant(user_id), check_optional_text(label, "label", limit=200)
        started = time.perf_counter()
        found = self._recall.recall(
            query, tenant, limit=limit, session_id=session_id, time_range=time_range, kind=kind, mode=mode, prefix=prefix
        )
        if self._tracer is not None:
            since, until = time_range or (None, None)
            arguments = {"kind": kind, "mode": mode, "limit": limit, "prefix": prefix, "since": since, "until": until}
            self._trace(tenant, "recall", query, found, started, session_id=session_id, label=label, arguments=arguments)
        return found

    def search_keys(
        self,
        query: str,
        *,
        user_id: str | None = UNSET,
        among: Iterable[tuple[str, str]] | None = None,
        limit: int = 10,
        mode: Mode = "hybrid",
        label: str | None = None,
    ) -> list[RecallHit]:
        """Search the tenant's live session keys that were given a ``search_text``
        (:meth:`SessionMemory.set <store.tiers.sessions.SessionMemory.set>`), best first, scored
        as :meth:`recall` scores blocks; each hit (kind ``key``) carries its ``entry`` and
        ``session_id``. ``among``: only these ``(session_id, key)`` pairs (None: every session).
        ``label``: as for :meth:`recall`."""
        tenant, label = self._tenant(user_id), check_optional_text(label, "label", limit=200)
        started = time.perf_counter()
        if among is not None and self._tracer is not None:
            among = list(among)
        found = self._recall.search_keys(query, tenant, among=among, limit=limit, mode=mode)
        if self._tracer is not None:
            arguments = {"mode": mode, "limit": limit, "among": None if among is None else len(among)}  # type: ignore[arg-type]
            self._trace(tenant, "search_keys", query, found, started, session_id=None, label=label, arguments=arguments)
        return found

    def _trace(self, tenant: Tenant, call: traces.Call, query: str, found: list[RecallHit], started: float, **fields: Any) -> None:
        assert self._tracer is not None
        took_ms = (time.perf_counter() - started) * 1000
        self._tracer.keep(tenant, call, query, found, at=utcnow(), took_ms=took_ms, **fields)

    def recall_traces(
        self,
        *,
        user_id: str | None = UNSET,
        session_id: str | None = None,
        as_of: datetime | None = None,
        limit: int | None = 100,
    ) -> list[RecallTrace]:
        """The recalls kept for the tenant (a store opened with ``trace=True``), newest first:
        those filtered to ``session_id`` if given, those made up to ``as_of`` if given (time
        travel), at most ``limit`` (None: all). A trace past the time to live is not returned."""
        tenant = self._tenant(user_id)
        check_optional_name(session_id, "session_id")
        as_of = check_optional_datetime(as_of, "as_of")
        if limit is not None:
            check_int(limit, "limit", minimum=1)
        self._traces_written()
        with self._db.read() as conn:
            since = utcnow() - self.trace_ttl
            return traces.read(conn, tenant, since=since, until=as_of, session_id=session_id, limit=limit)

    def get_recall_trace(self, trace_id: str, *, user_id: str | None = UNSET) -> RecallTrace:
        """One kept recall of the tenant; :class:`~store.errors.UnknownTraceError` if the tenant
        holds none of that id (never kept for it, another tenant's, past its time to live, or erased)."""
        tenant = self._tenant(user_id)
        check_name(trace_id, "trace_id")
        self._traces_written()
        with self._db.read() as conn:
            found = traces.read_one(conn, tenant, trace_id, since=utcnow() - self.trace_ttl)
        if found is None:
            raise UnknownTraceError(f"no recall trace {trace_id!r} for this user")
        return found

    def replay(self, trace_id: str, *, user_id: str | None = UNSET, then: bool = False) -> RecallReplay:
        """Make the kept recall ``trace_id`` again, now or (``then=True``) as of the moment it was
        made, and compare: a row for every memory either returned, with its rank and score in
        each and its text as the tenant holds it now. As of its moment, a recall sees the
        episodes that had occurred by then and the facts believed then; what it cannot rebuild
        (blocks, notes and keys keep no such time) ``notes`` says. The replay is not traced."""
        check_flag(then, "then")
        trace = self.get_recall_trace(trace_id, user_id=user_id)
        return replay_recall(_Untraced(self, self._recall), trace, then=then)

    @property
    def tracing(self) -> bool:
        """Whether this store keeps the recalls made through it (``open(trace=...)``)."""
        return self._tracer is not None

    def explain(
        self,
        query: str,
        memory_id: str,
        *,
        user_id: str | None = UNSET,
        limit: int = 5,
        session_id: str | None = None,
        time_range: tuple[datetime | None, datetime | None] | None = None,
        kind: RecallScope = "episodic",
        mode: Mode = "hybrid",
    ) -> RecallExplanation:
        """Why the episode or fact ``memory_id`` did or did not come back from
        ``recall(query, ...)`` with the same arguments: its rank and scores against the last hit
        returned, the query words it lacks, and each reason it was left out (another kind, session
        or time range; a fact superseded or ended; ranked below the cut; not ranked at all; not
        held by the tenant). See :class:`~store.models.RecallExplanation`."""
        return explain_recall(
            _Untraced(self, self._recall),
            query,
            check_name(memory_id, "memory_id"),
            user_id=self._tenant(user_id).user_id,
            limit=limit,
            session_id=session_id,
            time_range=time_range,
            kind=kind,
            mode=mode,
        )

    def recall_facts(
        self,
        query: str,
        *,
        user_id: str | None = UNSET,
        limit: int = 5,
        valid_at: datetime | None = None,
        mode: Mode = "hybrid",
        label: str | None = None,
    ) -> list[RecallHit]:
        """Search the facts believed at ``valid_at`` (default: the current ones). ``label``: as for :meth:`recall`."""
        tenant, label = self._tenant(user_id), check_optional_text(label, "label", limit=200)
        started = time.perf_counter()
        found = self._recall.recall_facts(query, tenant, limit=limit, valid_at=valid_at, mode=mode)
        if self._tracer is not None:
            arguments = {"mode": mode, "limit": limit, "valid_at": valid_at}
            self._trace(tenant, "recall_facts", query, found, started, session_id=None, label=label, arguments=arguments)
        return found

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model (None: keyword recall only)."""
        return self._recall.embedder

    @property
    def model_ready(self) -> bool:
        """True once the embedding model is loaded: semantic recall costs milliseconds from then on."""
        return self._recall.model_ready

    def warm_model(self) -> None:
        """Load the embedding model now (blocking); call it from a worker thread to warm in the background."""
        return self._recall.warm_model()

    def warm_vectors(self, *, user_id: str | None = UNSET) -> int:
        """Load the tenant's episode vectors into memory now, so its first search does not wait
        for them (call it from a worker thread). Returns how many were loaded."""
        return self._recall.warm_vectors(self._tenant(user_id))

    def build_vector_index(self, *, user_id: str | None = UNSET, sample: int = 100) -> VectorIndexReport:
        """PostgreSQL only: build an approximate vector index (pgvector's HNSW) on the tenant's
        vectors in the database, and report its recall@10 against exact search, measured on up
        to ``sample`` of the tenant's own episode vectors as queries. From then on every process
        searches that tenant's episodes and facts on the server, without loading its vectors into
        memory (recall@10 0.998 at 80k episodes in this project's benchmark); scores stay exact
        cosines. The build runs concurrently with the tenant's writers and may take a minute per
        100k vectors. A whole-tenant :meth:`forget` drops the index with the tenant's storage.
        Raises :class:`~store.errors.UnsupportedByBackendError` on SQLite (whose large tenants
        are indexed in memory by themselves) and :class:`~store.errors.UnknownTenantError` for a
        tenant the store does not hold; both change nothing."""
        return self._recall.build_vector_index(self._tenant(user_id), sample=sample)

    def drop_vector_index(self, *, user_id: str | None = UNSET) -> bool:
        """PostgreSQL only: drop the tenant's server-side vector index (its searches are exact
        again); returns whether there was one. Errors as :meth:`build_vector_index`."""
        return self._recall.drop_vector_index(self._tenant(user_id))

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every episode and fact of every tenant with the current model.

        Blocks and scratchpad notes are re-embedded on their next search. ``progress(done, total)``
        is called as batches finish. Returns the number of items embedded.
        """
        return self._recall.reembed(progress)

    # --- export, import, forget, audit (forwarded to the data-rights service) -------------

    def require_tenant(self, *, user_id: Any = UNSET, missing_ok: bool = False) -> bool:
        """Whether the store holds this tenant. Unless ``missing_ok``, a tenant it does not hold
        raises UnknownTenantError naming close matches (``Alice`` for ``alice``)."""
        return self._rights.require_tenant(self._tenant(user_id), missing_ok=missing_ok)

    def export(
        self, *, user_id: Any = UNSET, include_embeddings: bool = False, actor: str = "api", missing_ok: bool = False
    ) -> dict[str, Any]:
        """Everything the store holds for one tenant, grouped by section, with a manifest
        (format version, counts and sha256 per section, when, from which store). A tenant the
        store does not hold raises UnknownTenantError unless ``missing_ok``."""
        self._traces_written()
        return self._rights.export(user_id=user_id, include_embeddings=include_embeddings, actor=actor, missing_ok=missing_ok)

    def export_to(
        self,
        target: str | Path | IO[str],
        *,
        user_ids: list[str | None] | None = None,
        fmt: str = "jsonl",
        include_embeddings: bool = False,
        actor: str = "api",
        progress: Callable[[int, int], None] | None = None,
        overwrite: bool = False,
        missing_ok: bool = False,
    ) -> dict[str, Any]:
        """Stream an export of ``user_ids`` (None: every tenant) to a path or text stream.

        ``fmt`` is ``"jsonl"`` (a record a line, the manifest last) or ``"json"`` (one
        document). A tenant the store does not hold raises UnknownTenantError (naming close
        matches) unless ``missing_ok``. A path is never the store itself or one of its side
        files, and never an existing file unless ``overwrite``: the export goes to an owner-only
        (0600) partial file that is renamed into place, so a failed or killed export leaves no
        half file (see :mod:`store.export_file`). Each exported tenant gets an audit entry.
        Returns the manifest.
        """
        self._traces_written()
        return self._rights.export_to(
            target,
            user_ids=user_ids,
            fmt=fmt,
            include_embeddings=include_embeddings,
            actor=actor,
            progress=progress,
            overwrite=overwrite,
            missing_ok=missing_ok,
        )

    def import_(
        self,
        source: str | Path | dict[str, Any],
        *,
        actor: str = "api",
        as_user: Any = UNSET,
        expect_counts: Mapping[str, int] | None = None,
    ) -> ImportReport:
        """Import an export (a path to JSON or JSONL, or the dict :meth:`export` returns).

        Records may only belong to the tenants the manifest declares; ``as_user`` imports a
        one-tenant export under another ``user_id`` (None: the anonymous bucket). Every record
        meets the API's rules and the manifest's digests are checked before anything is
        written; the import is one transaction. Records the tenant already holds are kept:
        the same id is the same record, and blocks, keys and task states are replaced only by
        a newer ``updated_at``, so importing a file twice is the same as once and an older
        export never overwrites newer state. Vectors made with another model (or none) are
        re-embedded with this store's model. Audit entries from the file are kept as imported
        history (``origin="imported"``).

        ``expect_counts`` (section to count, e.g. ``{"episodes": 120}``): that many of the
        section's records must be held as the file has them once written (added now, or already
        held unchanged); otherwise :class:`~store.errors.ImportMismatchError` is raised inside
        the transaction and nothing is imported. Importers of other libraries' data use it to
        verify that what they read is what the store holds.
        """
        return self._rights.import_(source, actor=actor, as_user=as_user, expect_counts=expect_counts)

    def migrate_from(
        self,
        source: MemoryStore,
        *,
        into_existing: bool = False,
        reembed: bool = False,
        actor: str = "api",
        progress: Callable[[int, int], None] | None = None,
    ) -> MigrationReport:
        """Copy everything ``source`` holds into this store: every tenant and tier, facts' full
        history, sessions with their expiry times, checkpoints, the audit log (including the
        entries of erased tenants, with their origin), and the vectors.

        Vectors are copied as they are when both stores use the same model; otherwise
        :class:`~store.errors.ModelMismatchError` unless ``reembed=True``, which embeds everything
        with this store's model. This store must hold no tenant (not even audit history), or,
        with ``into_existing=True``, none of the source's tenants
        (:class:`~store.errors.MigrationTargetError`). Every source record is held to the import
        checks (:class:`~store.errors.MigrationSourceError`). The copy is one transaction, and
        each tenant is read back and compared with the source (counts and content digests per
        section) before it commits: any difference raises
        :class:`~store.errors.MigrationMismatchError`, and any failure or kill leaves this store
        as it was. The source is only read. Each tenant gets a ``migrate`` audit entry here.
        ``progress(done, total)`` is called per tenant. ``source`` may be an AsyncMemoryStore."""
        source = getattr(source, "sync", source)  # an AsyncMemoryStore's own store
        if not isinstance(source, MemoryStore):
            raise InvalidInputError(f"source must be a MemoryStore or an AsyncMemoryStore, not {type(source).__name__}")
        return self._rights.migrate_from(source._db, into_existing=into_existing, reembed=reembed, actor=actor, progress=progress)

    def forget(
        self,
        *,
        user_id: Any = UNSET,
        session_id: str | None = None,
        before: datetime | None = None,
        dry_run: bool = False,
        actor: str = "api",
        missing_ok: bool = False,
        facts_only: bool = False,
    ) -> ForgetReceipt:
        """Erase a tenant, one of its sessions, or what is older than ``before``, and everything
        derived from it, down to the bytes on disk. Returns a receipt (counts, never content).

        ``user_id`` is required (``None`` means the anonymous bucket). A tenant that holds
        nothing raises :class:`~store.errors.UnknownTenantError` unless ``missing_ok``.
        ``dry_run=True`` returns the same counts and changes nothing. Other tenants are not
        touched. ``facts_only=True`` erases only the tenant's facts (with ``before``, those
        recorded before it), as loomflow's ``FactStore.delete`` does; surviving facts get the
        history rule of any erasure. The erasure of a session, of what is older than ``before``
        or of facts is one transaction: a crash leaves all of the scope or none of it. A whole
        tenant reads as gone from the commit of its first transaction (audit entry and erasure
        marker) and is deleted in short steps after it, so other tenants' writers never wait
        long; its own writers wait for the end, and a crash between steps is finished by the
        next read-write open. If the bytes cannot be scrubbed at once, the receipt says why and
        the scrub is finished later (next write, next open, or :meth:`scrub`).
        """
        if user_id is UNSET:  # an erasure names its target: no anonymous bucket by default
            raise InvalidInputError("forget needs user_id: name the tenant to erase, or pass user_id=None for the anonymous bucket")
        self._traces_written()
        return self._rights.forget(
            self._tenant(user_id),
            session_id=session_id,
            before=before,
            dry_run=dry_run,
            actor=actor,
            missing_ok=missing_ok,
            facts_only=facts_only,
        )

    def scrub(self) -> bool:
        """Make deleted content unrecoverable from the files: delete expired key-value entries,
        rewrite the keyword indexes and truncate the WAL, then mark pending erasures as scrubbed.
        Returns False if a reader still held an old snapshot; call again once it has finished."""
        return self._rights.scrub()

    def pending_scrub(self) -> PendingScrub | None:
        """Erasures whose rows are gone but whose bytes may still be in the files, if any."""
        return self._rights.pending_scrub()

    def audit_log(
        self,
        *,
        user_id: Any = UNSET,
        all_tenants: bool = False,
        limit: int = 1000,
        origin: str | None = None,
        missing_ok: bool = True,
    ) -> list[AuditEntry]:
        """Audit entries, newest first: one tenant's, or with ``all_tenants=True`` the whole store's.

        ``origin="local"`` keeps what happened in this store, ``origin="imported"`` the history
        that arrived in import files; None gives both, each entry saying which it is. With
        ``missing_ok=False``, a tenant that holds nothing and has no entries (a typo, not an erased
        tenant: those keep their entries) raises :class:`UnknownTenantError` with close matches."""
        check_flag(all_tenants, "all_tenants")  # before the tenant: "yes" is refused, not a warned-about anonymous read
        tenant = None if all_tenants else self._tenant(user_id)
        return self._rights.audit_log(tenant, limit=limit, origin=origin, missing_ok=missing_ok)

    # --- overviews ------------------------------------------------------------------------

    def tenants(self, *, user_ids: Iterable[str | None] | None = None) -> list[TenantSummary]:
        """Every tenant with its counts per tier and last activity, most recent first; with
        ``user_ids``, only those of them the store holds (counting every tenant reads every row
        of the store: a list that shows a screenful of many thousands counts what it shows)."""
        wanted = None
        if user_ids is not None:
            if isinstance(user_ids, (str, bytes)) or not isinstance(user_ids, Iterable):
                raise InvalidInputError("user_ids must be a list of user ids (None is the anonymous bucket)")
            wanted = [self._tenant(user_id) for user_id in user_ids]
        return overview.tenant_summaries_read(self._db.read, wanted, self._db.tenants_per_read)

    def tenant_names(self) -> list[str | None]:
        """Every tenant's user id (None: the anonymous bucket), in :meth:`tenants` order, without
        counting anything: one read of the tenant list, however large the store."""
        with self._db.read() as conn:
            return overview.tenant_names(conn)

    def profile(self, *, user_id: str | None = UNSET) -> Profile:
        """A tenant at a glance: its blocks, current facts, counts and activity."""
        tenant = self._tenant(user_id)
        with self._db.read() as conn:
            return overview.profile(conn, tenant)

    def activity(self, *, user_id: str | None = UNSET, days: int = 56, until: datetime | None = None) -> Activity:
        """Episodes per UTC day for one tenant over the ``days`` days ending on ``until``'s UTC
        day (default: today), oldest first, days without episodes as zeros."""
        tenant = self._tenant(user_id)
        check_int(days, "days", minimum=1, maximum=3660)
        last = (check_optional_datetime(until, "until") or utcnow()).astimezone(UTC).date()
        try:
            first = last - timedelta(days=days - 1)
        except OverflowError:
            raise InvalidInputError(f"{days} days before {last} would fall before the year 1") from None
        with self._db.read() as conn:
            counts = episodes.episodes_per_day(conn, tenant, first_day=first, days=days)
        return Activity(user_id=tenant.user_id, days=[first + timedelta(days=i) for i in range(days)], episodes=counts)

    def stats(self) -> StoreStats:
        """Store-wide totals (no content)."""
        summaries = self.tenants()
        totals = {name: sum(getattr(s.counts, name) for s in summaries) for name in overview.TIER_TABLES}
        size = sum(p.stat().st_size for p in self._files() if p.exists())
        return StoreStats(
            path=str(self.path),
            schema_version=self._db.schema_version,
            tenants=len(summaries),
            counts=TierCounts(**totals),
            file_bytes=size,
            embedding_model=self._embedding_model_name(),
        )

    def _embedding_model_name(self) -> str | None:
        with self._db.read() as conn:
            return recorded_model(conn)[0]

    def _files(self) -> list[Path]:
        return self._db.files()


class _Untraced:
    """A store's read API whose recalls are not traced, for :meth:`MemoryStore.explain` and
    :meth:`MemoryStore.replay`: a person asking why, or what now, is not the agent recalling."""

    def __init__(self, store: MemoryStore, service: RecallService):
        self.get_episode = store.get_episode
        self.get_block = store.get_block
        self.facts = store.facts
        self.audit_log = store.audit_log
        self._service = service

    def recall(self, query: str, *, user_id: str | None, **arguments: Any) -> list[RecallHit]:
        return self._service.recall(query, Tenant.of(user_id), **arguments)

    def recall_facts(self, query: str, *, user_id: str | None, **arguments: Any) -> list[RecallHit]:
        return self._service.recall_facts(query, Tenant.of(user_id), **arguments)

    def search_keys(self, query: str, *, user_id: str | None, **arguments: Any) -> list[RecallHit]:
        return self._service.search_keys(query, Tenant.of(user_id), **arguments)
