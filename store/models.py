"""The pydantic models the store returns. Rows never leave the store; these do."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Block(_Model):
    """A named working-memory block; ``pinned_order`` is its stable slot."""

    user_id: str | None
    name: str
    content: str
    pinned_order: int
    updated_at: datetime


class BlockVersion(_Model):
    """One version of a working block: what it held from ``written_at`` until ``replaced_at``
    (None: it still does), and the operation that ended it (``update``, ``append``, ``delete``)."""

    name: str
    content: str
    pinned_order: int
    written_at: datetime
    replaced_at: datetime | None
    replaced_by: str | None


class BlockHistory(_Model):
    """Every kept version of one block, oldest first; the current one, if the block exists, last.
    ``earlier_dropped``: the cap on the block's history dropped older versions, for good."""

    user_id: str | None
    name: str
    versions: list[BlockVersion]
    earlier_dropped: bool


class Episode(_Model):
    id: str
    user_id: str | None
    session_id: str | None
    occurred_at: datetime
    input: str
    output: str
    tool_calls: list[Any] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class EpisodePage(_Model):
    """One page of episodes, newest first; pass ``next_cursor`` to get the next one."""

    items: list[Episode]
    next_cursor: str | None


class Message(_Model):
    """One message of a replayed session; ``tool`` messages and assistant messages with
    ``tool_calls`` come from an episode's tool transcript."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    occurred_at: datetime
    episode_id: str
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[Any] = Field(default_factory=list)


class Fact(_Model):
    """A bi-temporal fact: valid in the world from ``valid_from`` until ``valid_until``
    (open when None), and known to the store since ``recorded_at``."""

    id: str
    user_id: str | None
    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: datetime
    valid_until: datetime | None
    recorded_at: datetime
    source_episode_ids: list[str] = Field(default_factory=list)

    @property
    def is_current(self) -> bool:
        return self.valid_until is None


class TaskState(_Model):
    task: str | None = None
    current_step: int = 0
    total_steps: int | None = None
    progress_percent: float = 0.0
    status: str = "pending"
    data: dict[str, Any] = Field(default_factory=dict)
    updated_at: datetime | None = None


class ScratchpadEntry(_Model):
    id: int
    created_at: datetime
    content: str


class KeyValueEntry(_Model):
    """A session's key-value entry. ``ttl_seconds``: the time to live it was last written with
    (None: never expires), which :meth:`~store.tiers.sessions.SessionMemory.touch` renews.
    ``created_at`` is None where it is not known: an entry rebuilt from a checkpoint.
    ``search_text``: what :meth:`~store.memory.MemoryStore.search_keys` finds it by (None: not searched)."""

    key: str
    value: Any
    expires_at: datetime | None
    updated_at: datetime
    created_at: datetime | None = None
    ttl_seconds: float | None = None
    search_text: str | None = None


class Checkpoint(_Model):
    id: str
    session_id: str
    description: str
    created_at: datetime


class CheckpointDiff(_Model):
    """What changed from checkpoint ``a`` to ``b`` (``b`` None: the current state)."""

    a: str
    b: str | None
    added_keys: dict[str, Any]
    removed_keys: dict[str, Any]
    changed_keys: dict[str, tuple[Any, Any]]
    task_state_before: TaskState | None
    task_state_after: TaskState | None
    scratchpad_added: list[str]
    scratchpad_removed: list[str]

    @property
    def is_empty(self) -> bool:
        return not (
            self.added_keys
            or self.removed_keys
            or self.changed_keys
            or self.task_state_before != self.task_state_after
            or self.scratchpad_added
            or self.scratchpad_removed
        )


class SessionStats(_Model):
    session_id: str
    keys: int
    scratchpad_entries: int
    checkpoints: int
    has_task_state: bool
    episodes: int


class SessionInfo(_Model):
    session_id: str
    created_at: datetime
    updated_at: datetime
    episodes: int
    keys: int = 0
    """Its live key-value entries."""


class TierCounts(_Model):
    blocks: int = 0
    episodes: int = 0
    facts: int = 0
    sessions: int = 0
    kv_entries: int = 0
    scratchpad_entries: int = 0
    checkpoints: int = 0
    task_states: int = 0


class TenantSummary(_Model):
    user_id: str | None
    counts: TierCounts
    last_activity: datetime | None

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None


class Profile(_Model):
    """What the store knows about one tenant at a glance: blocks, current facts, activity."""

    user_id: str | None
    blocks: dict[str, str]
    facts: list[Fact]
    counts: TierCounts
    first_activity: datetime | None
    last_activity: datetime | None


class Activity(_Model):
    """Episodes per day for one tenant, oldest day first and zeros included: ``episodes[i]``
    episodes occurred on ``days[i]``. Days are calendar days in UTC (``timezone``), the store's
    time zone; the last day is the one ``activity(until=...)`` falls on."""

    user_id: str | None
    days: list[date]
    episodes: list[int]
    timezone: Literal["UTC"] = "UTC"


class StoreStats(_Model):
    path: str
    schema_version: int
    tenants: int
    counts: TierCounts
    file_bytes: int
    embedding_model: str | None


class VectorIndexReport(_Model):
    """A tenant's server-side vector index, as built: how well it finds what exact search finds."""

    user_id: str | None
    vectors: int
    """The tenant's episode vectors when the index was measured."""
    recall_at_10: float
    """Of exact search's 10 nearest episodes, the share the index also returned, averaged over
    ``queries`` of the tenant's own episode vectors (each query's own episode left out)."""
    queries: int
    seconds: float
    """Building and measuring, end to end."""


class ScoreBreakdown(_Model):
    """Why a memory came back: its place and score in each ranked list, and the score it was ordered by.

    ``vector`` is cosine similarity (-1..1), in hybrid mode also for a memory outside the vector
    list (``vector_rank`` None); ``keyword`` is BM25 with higher meaning better; ``fused`` is
    reciprocal rank fusion, the sum of 1/(60 + rank) over the lists it is in. ``score`` is what
    hits are ordered by, across tiers too: in hybrid mode ``vector`` + ``coverage ** 4`` +
    ``0.06 * keyword_standout`` + ``0.1 * vector_standout``, plus a bonus above all of those if
    ``exact``; in vector mode ``vector``; in keyword mode ``fused``. The rest are hybrid only:
    ``coverage`` is the share of the query's words the memory holds; ``keyword_standout`` how
    far its BM25 stands above the keyword list's mean, in standard deviations (0 at or below it,
    or outside the list); ``vector_standout`` the same for its cosine among all candidates,
    signed; ``exact`` the identifier of the query (a ticket or order number, an e-mail address,
    a version, a URL) the memory holds verbatim, which put it first.
    """

    vector: float | None = None
    keyword: float | None = None
    fused: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None
    score: float = 0.0
    coverage: float | None = None
    exact: str | None = None
    keyword_standout: float | None = None
    vector_standout: float | None = None


RecallKind = Literal["episode", "fact", "block", "scratchpad", "key"]


class RecallHit(_Model):
    kind: RecallKind
    id: str
    text: str
    session_id: str | None = None
    occurred_at: datetime | None = None
    episode: Episode | None = None
    fact: Fact | None = None
    block: Block | None = None
    note: ScratchpadEntry | None = None
    entry: KeyValueEntry | None = None
    """A session key's entry (:meth:`store.memory.MemoryStore.search_keys`)."""
    scores: ScoreBreakdown
    matched_terms: list[str] = Field(default_factory=list)


class TracedHit(_Model):
    """One hit of a traced recall: what it was and how it scored, never what it said."""

    kind: RecallKind
    id: str
    scores: ScoreBreakdown


class RecallTrace(_Model):
    """One recall an agent made through a store opened with tracing on
    (:meth:`store.memory.MemoryStore.recall_traces`): when, the ``call`` (``recall``,
    ``recall_facts`` or ``search_keys``), the query, the session it was filtered to, its other
    ``arguments`` (kind, mode, limit, time range, ...), each hit's kind, id and scores in the order
    they came back, how long it took and the ``label`` its caller gave."""

    id: str
    user_id: str | None
    at: datetime
    call: Literal["recall", "recall_facts", "search_keys"]
    query: str
    session_id: str | None
    label: str | None
    arguments: dict[str, Any]
    hits: list[TracedHit]
    took_ms: float


class ReplayedHit(_Model):
    """One memory in a replay's comparison (:class:`RecallReplay`): its rank and score when the
    recall was made (None: not returned then) and in the replay (None: not returned now), and
    whether the tenant still ``held`` it, with its ``text`` as held now (None when not held; and
    ``held`` None for a note or a key the replay did not return, which are not looked up)."""

    kind: RecallKind
    id: str
    text: str | None
    held: bool | None
    traced_rank: int | None = None
    traced_score: float | None = None
    replayed_rank: int | None = None
    replayed_score: float | None = None


class RecallReplay(_Model):
    """A kept recall made again (:meth:`store.memory.MemoryStore.replay`): now (``as_of`` None)
    or as of its own moment, with the replay's ``hits`` and a row for every memory either
    returned (the replay's in its order, then those only the recall returned). ``notes`` says,
    in words, what of the original moment the replay could not rebuild."""

    trace: RecallTrace
    as_of: datetime | None
    hits: list[RecallHit]
    rows: list[ReplayedHit]
    notes: list[str]


WhyNotCause = Literal["not_held", "kind", "session", "time", "superseded", "expired", "ranked_below", "beyond_depth", "words_missing"]


class WhyNot(_Model):
    """One reason a memory did not come back from a recall (:class:`RecallExplanation`).

    ``not_held``: the tenant holds no memory of that id (never stored for it, another tenant's,
    or erased). ``kind``, ``session``, ``time``: the recall's ``kind``, ``session_id`` or
    ``time_range`` left it out. ``superseded``, ``expired``: a fact no longer believed, replaced by
    another or ended with none in its place (recall searches current facts). ``ranked_below``: it was ranked, below the last hit returned.
    ``beyond_depth``: not among the first results the search ranked at all. ``words_missing``:
    query words it holds in no form (what keyword search and the hybrid's coverage look for)."""

    cause: WhyNotCause
    detail: str


class RecallExplanation(_Model):
    """Where one memory stands for one recall (:meth:`store.memory.MemoryStore.explain`): whether
    it came back and at which rank, its scores and those of the last hit returned (the one it had
    to beat), the query words it lacks, and every reason it did not come back (none if it did)."""

    query: str
    memory_id: str
    kind: RecallKind | None
    """``episode`` or ``fact``; None when the tenant holds no memory of that id."""
    returned: bool
    rank: int | None
    """Its place among the results, from 1 (None: filtered out, or beyond the ranked depth)."""
    limit: int
    scores: ScoreBreakdown | None
    cut: ScoreBreakdown | None
    """The scores of the last hit returned (rank ``limit``); None when fewer came back."""
    missing_words: list[str]
    causes: list[WhyNot]


class ForgetReceipt(_Model):
    """Proof of an erasure: what was asked, how much went, and a digest that identifies the
    request. It never holds erased content."""

    user_id: str | None
    session_id: str | None
    before: datetime | None
    dry_run: bool
    counts: dict[str, int]
    at: datetime
    actor: str
    digest: str
    # True once the erased content is gone from the files too (keyword indexes rewritten, WAL
    # truncated); False: the rows are gone but old bytes may remain until the pending scrub
    # runs (``scrub_pending_reason`` says why it could not run now).
    disk_scrubbed: bool = False
    scrub_pending_reason: str | None = None
    # What no erasure by this store reaches, even once scrubbed: copies made outside it (on
    # PostgreSQL WAL archives, replicas, backups); None on a dry run.
    out_of_reach: str | None = None
    # An in-place erasure of another library's file: how many of memlens's own leftover copies of
    # it (views' mirrors, readers' copies left by a process that is gone) it deleted.
    copies_erased: int = 0

    @property
    def total(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "vectors")


class PendingScrub(_Model):
    """Erasures whose rows are gone but whose old bytes may still be in the files."""

    erasures: int
    since: datetime
    digests: list[str]
    indexes_rewritten: bool


class AuditEntry(_Model):
    """One audit entry. ``origin`` is ``"local"`` when it happened in this store and
    ``"imported"`` when it is history copied from an import file: an imported ``forget`` says
    what the file claims happened elsewhere, not an erasure done here."""

    at: datetime
    actor: str
    action: Literal["forget", "export", "import", "migrate"]
    user_id: str | None
    scope: dict[str, Any]
    counts: dict[str, int]
    digest: str
    origin: Literal["local", "imported"] = "local"

    @property
    def disk_scrubbed(self) -> bool | None:
        """For a forget: whether its erased bytes have left the files (None: not recorded)."""
        return self.scope.get("disk_scrubbed") if self.action == "forget" else None


class MigrationReport(_Model):
    """What a migration copied: every tenant of the source (``tenants``, those with only audit
    history included), ``counts`` written per section, and the vectors: ``"copied"`` as they
    were (same model on both sides), ``"embedded"`` by the destination's model (``embedded``
    counts them), or ``"none"`` (no model). It is returned only after the destination was
    verified to hold exactly the source's records, and committed."""

    source: str
    destination: str
    tenants: list[str | None]
    counts: dict[str, int]
    vectors: Literal["copied", "embedded", "none"]
    # Of ``tenants``, those that hold nothing but audit entries (erased tenants, whose log outlives them).
    history_only: list[str | None] = []
    embedded: int
    at: datetime


class ImportReport(_Model):
    """What an import did, per section: ``counts`` written (added, or replacing an older
    version), ``unchanged`` already held as in the file, ``kept_existing`` not written because
    the store held a newer version (blocks, keys, task states by ``updated_at``) or different
    content under the same id. ``reembedded`` counts vectors computed afresh."""

    tenants: list[str | None]
    counts: dict[str, int]
    unchanged: dict[str, int] = Field(default_factory=dict)
    kept_existing: dict[str, int] = Field(default_factory=dict)
    reembedded: int
    manifest: dict[str, Any]


class SessionSnapshot(_Model):
    """One session's working memory at a past moment. ``source``: ``current`` (unchanged since),
    ``checkpoint`` (its latest checkpoint by then: ``checkpoint_id``, ``checkpoint_at``), or
    ``unknown`` (changed since, no checkpoint by then: nothing is shown)."""

    session_id: str
    source: Literal["current", "checkpoint", "unknown"]
    checkpoint_id: str | None = None
    checkpoint_at: datetime | None = None
    episodes: int = 0
    """The session's episodes that had occurred by then."""
    updated_at: datetime | None = None
    """When the state shown was written: the session's last change (``current``), the checkpoint's time (``checkpoint``), or None."""
    kv: list[KeyValueEntry] = Field(default_factory=list)
    task_state: TaskState | None = None
    scratchpad: list[ScratchpadEntry] = Field(default_factory=list)


class MemorySnapshot(_Model):
    """A tenant's memory as it stood at ``as_of`` (:meth:`store.memory.MemoryStore.snapshot`):
    blocks and facts exactly, episodes by their time, sessions as far as their history goes;
    ``gaps`` says, in words, what could not be rebuilt."""

    user_id: str | None
    as_of: datetime
    blocks: list[Block]
    facts: list[Fact]
    episodes: int
    recent_episodes: list[Episode]
    sessions: list[SessionSnapshot]
    gaps: list[str]
    recent_recalls: list[RecallTrace] = Field(default_factory=list)


class Change(_Model):
    """One change in a tenant's timeline (:meth:`store.memory.MemoryStore.timeline`): a block
    written or deleted, a fact recorded or its validity changed, a session started or
    checkpointed."""

    at: datetime
    tier: Literal["block", "fact", "session"]
    kind: str
    name: str
    detail: str


class BlockChange(_Model):
    """A block that differs between two moments: ``before`` None, it did not exist at the first;
    ``after`` None, it did not exist at the second."""

    name: str
    before: str | None
    after: str | None


class SessionChange(_Model):
    """A session's working memory that differs between two moments (as far as each snapshot
    could rebuild it: see :class:`SessionSnapshot`)."""

    session_id: str
    added_keys: dict[str, Any]
    removed_keys: dict[str, Any]
    changed_keys: dict[str, tuple[Any, Any]]
    task_state_before: TaskState | None
    task_state_after: TaskState | None
    scratchpad_added: list[str]
    scratchpad_removed: list[str]


class MemoryDiff(_Model):
    """What changed in a tenant's memory from moment ``a`` to moment ``b``
    (:meth:`store.memory.MemoryStore.memory_diff`): blocks, the facts current at each, the
    number of episodes, and each session; ``gaps`` repeats what either snapshot could not rebuild."""

    user_id: str | None
    a: datetime
    b: datetime
    blocks: list[BlockChange]
    facts_added: list[Fact]
    facts_removed: list[Fact]
    episodes_added: int
    sessions: list[SessionChange]
    gaps: list[str]

    @property
    def is_empty(self) -> bool:
        return not (self.blocks or self.facts_added or self.facts_removed or self.episodes_added or self.sessions)
