"""What every engine's implementation shares: the highlight markers, the upsert's shape, the
keyword policy and its data-version cache, how a writer waits out a tenant's erasure, and the
refusals of a schema version this memlens cannot open."""

from __future__ import annotations

import math
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, Table, text

from ..errors import SchemaTooNewError, StoreBusyError, StoreOpenError
from ..schema import episodes_t
from ..tenancy import Tenant

# Matched words come back from every engine's highlighter between these two control characters,
# which no stored text can hold unnoticed (validation refuses control characters in names, and a
# marker inside text only ever adds a word to the highlight list).
MARK_START, MARK_END = "\x02", "\x03"
_MARK = re.compile(f"{MARK_START}(.*?){MARK_END}", re.DOTALL)


# --- schema versions, refused in the same words on every engine ------------------------------------


def refuse_version(where: object, version: int, current: int, *, read_only: bool) -> None:
    """Raise if this memlens cannot open a store of schema ``version`` (``current`` is its own):
    a newer one always, an older one when opened read-only (migrating it is a write)."""
    if version > current:
        raise SchemaTooNewError(
            f"{where} has schema version {version}, newer than this memlens understands ({current}); "
            "upgrade memlens to open it. Nothing was changed."
        )
    if 0 < version < current and read_only:
        raise StoreOpenError(f"{where} has schema version {version} and needs migrating to {current}; open it once without read_only")


# --- keyword search policy, the same on every engine ---------------------------------------------

# A query matching more of a tenant's episodes than this ranks the most recent this-many of them
# by BM25: scoring every match costs tens of milliseconds per 10k, and rare words, the ones that
# carry a query, match fewer rows than this.
MAX_KEYWORD_MATCHES = 1000
# A word in more than this share of a tenant's episodes is left out of its keyword query while
# rarer words remain (ranking it costs more than it tells apart)...
COMMON_SHARE = 0.2
# ...once the tenant holds this many episodes; below it every match ranks quickly, nothing is cut.
MIN_EPISODES_FOR_CUT = 1000
# How many of the tenant's most recent episodes holding a word the common-word rule reads. A share
# near the 20% line is decided either way without harm; 100 halve the cost of 250 (3.7 ms against
# 6.7 ms p50 on SQLite with two interleaved tenants of 5k episodes, on a loaded machine).
COMMON_WINDOW = 100


def is_common(newest_holding: Callable[[int], Sequence[int]], written_since: Callable[[int, int], int]) -> bool:
    """The common-word rule, one for every engine: a word is too common to rank when the tenant's
    ``COMMON_WINDOW`` most recent episodes holding it are more than ``COMMON_SHARE`` of its
    episodes since the oldest of them. Recent episodes are the ones a keyword query ranks (see
    ``MAX_KEYWORD_MATCHES``), and both reads stop early: the engine's ``newest_holding(window)``
    gives the keys of the tenant's newest episodes holding the word (at most ``window``), and
    ``written_since(oldest, enough)`` counts its episodes from key ``oldest`` on, up to ``enough``.
    A word in fewer episodes than the window is never common (from ``MIN_EPISODES_FOR_CUT``
    episodes, a word in a fifth of them fills it)."""
    mine = newest_holding(COMMON_WINDOW)
    if len(mine) < COMMON_WINDOW:
        return False
    enough = round(COMMON_WINDOW / COMMON_SHARE)
    return written_since(min(mine), enough) < enough


# A query word in at most this many episodes is rare: every one of its matches is ranked too,
# beside the newest MAX_KEYWORD_MATCHES of the whole query, so an id or a tag behind a common word
# ("find the note tagged #48213") is not cut away with the older matches of the common one.
RARE_MATCHES = MAX_KEYWORD_MATCHES


# BM25 as FTS5 ranks (its constants, and an IDF of 1e-6 for a word in half the documents or more),
# so keyword scores mean the same on every engine.
K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6


def idf(count: int, matches: int) -> float:
    """A word's IDF among ``count`` documents, ``matches`` of which hold it, as FTS5 computes it.
    Never a logarithm of a non-positive number: ``matches`` is held to ``0..count``."""
    matches = min(max(matches, 0), max(count, 0))
    value = math.log((max(count, 0) - matches + 0.5) / (matches + 0.5))
    return value if value > 0 else IDF_FLOOR


def bm25(count: int, average: float, df: list[int], tf: list[int], length: int) -> float:
    """A document's BM25 (higher is better): ``count`` documents of ``average`` length, each
    query item's document count ``df`` and frequency in this document ``tf``, its ``length``."""
    score = 0.0
    for n, f in zip(df, tf, strict=True):
        if not f:
            continue
        # FTS5's own order of operations, to the last bit: equal scores stay equal, so ties
        # break the same way (newest first) as when FTS5 ranks.
        score += idf(count, n) * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / (average or 1.0))))
    return score


def is_rare(prefix: bool, matches: int) -> bool:
    """Whether a query word (not a prefix being typed, which expands to many words) is rare
    enough that every one of its ``matches`` in the tenant's episodes is ranked."""
    return not prefix and 0 < matches <= RARE_MATCHES


# The most answers a per-data-version cache of keyword statistics keeps before it starts over.
KEYWORD_CACHE_ENTRIES = 50_000


class DataVersionCache:
    """Values computed from a store's data (a word's document count, whether it is common), kept
    under the data version they were computed at, for every engine's keyword index.

    The version must be read before the data it keys was read (each engine says how), so a value
    is only ever kept under a version at or below the data it came from, never above it: none
    from before a commit, an erasure included, is used once that commit is counted. Only the
    newest version's entries are kept, replaced whole when a newer version arrives; a reader on
    an older one computes without keeping. Search as you type asks the same things at every
    keystroke, so nearly every lookup between two commits is a hit."""

    MISSING: Any = object()

    def __init__(self, max_entries: int = KEYWORD_CACHE_ENTRIES) -> None:
        # One (version, entries) pair, replaced whole: a reader never pairs one version's
        # entries with another's number while a writer moves on.
        self._kept: tuple[int | None, dict[Any, Any]] = (None, {})
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get(self, version: int | None, key: Hashable) -> Any:
        """The value kept for ``key`` at ``version``, or MISSING."""
        kept_version, entries = self._kept
        if version is None or version != kept_version:
            return self.MISSING
        return entries.get(key, self.MISSING)

    def keep(self, version: int | None, values: dict[Any, Any]) -> None:
        """Keep ``values`` (key: value) under ``version``, unless a newer version is kept already."""
        if version is None:
            return
        with self._lock:
            kept_version, entries = self._kept
            if kept_version is None or version > kept_version:
                kept_version, entries = version, {}
                self._kept = (kept_version, entries)
            if version == kept_version:
                room = self.max_entries - len(entries)
                entries.update(list(values.items())[: max(room, 0)])

    def kept(self, version: int | None, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value kept for ``key`` at ``version``, else ``compute()``'s, kept for next time."""
        value = self.get(version, key)
        if value is self.MISSING:
            value = compute()
            self.keep(version, {key: value})
        return value


def marked_terms(*highlighted: str) -> list[str]:
    """The words an engine's highlighter marked, lower-cased, first seen first."""
    seen: dict[str, None] = {}
    for value in highlighted:
        for term in _MARK.findall(value or ""):
            seen.setdefault(term.lower(), None)
    return list(seen)


def upsert(
    insert: Callable[[Table], Any],
    conn: Connection,
    table: Table,
    values: dict[str, Any],
    keys: Sequence[str],
    update: dict[str, Any] | None,
) -> None:
    """INSERT ... ON CONFLICT, with the engine's own ``insert`` construct (SQLite's and
    PostgreSQL's spell the conflict clause alike)."""
    stmt = insert(table).values(values)
    if update is None:
        stmt = stmt.on_conflict_do_nothing(index_elements=list(keys))
    else:
        stmt = stmt.on_conflict_do_update(index_elements=list(keys), set_=update)
    conn.execute(stmt)


# Schema version 6 keeps tenant names in NFC. Two forms of one name (a store written before it
# may hold both) become one tenant; where both used the same name or id (unique within a tenant,
# by table below), the other form's keeps it with MERGED_SUFFIX: nothing lost or overwritten.
UNIQUE_WITHIN_TENANT = {"blocks": "name", "episodes": "id", "facts": "id", "sessions": "session_id", "checkpoints": "id"}
MERGED_SUFFIX = " (merged)"


def tenant_names_to_rename(conn: Connection) -> list[tuple[str, str]]:
    """(stored name, its NFC form) for every tenant name, current or erased, not in NFC."""
    names = conn.execute(text("SELECT user_id FROM tenants UNION SELECT user_id FROM audit_log")).scalars()
    return [(old, new) for old in sorted(names) if (new := unicodedata.normalize("NFC", old)) != old]


def merge_tenant_names(conn: Connection, old: str, new: str) -> None:
    """Before the rows of ``old`` become ``new``'s: give each name or id that both already use a
    MERGED_SUFFIX on ``old``'s side, and leave one tenant row (the earliest creation, the latest
    activity). The rows themselves are moved by the backend's own migration step."""
    names = {"old": old, "new": new, "suffix": MERGED_SUFFIX}
    for table, column in UNIQUE_WITHIN_TENANT.items():
        conn.execute(
            text(
                f"UPDATE {table} SET {column} = {column} || :suffix WHERE user_id = :old "
                f"AND {column} IN (SELECT {column} FROM {table} WHERE user_id = :new)"
            ),
            names,
        )
    if conn.execute(text("SELECT count(*) FROM tenants WHERE user_id IN (:old, :new)"), names).scalar_one() == 2:
        conn.execute(
            text(
                "UPDATE tenants SET created_at = (SELECT min(created_at) FROM tenants WHERE user_id IN (:old, :new)), "
                "last_activity = (SELECT max(last_activity) FROM tenants WHERE user_id IN (:old, :new)) WHERE user_id = :new"
            ),
            names,
        )
        conn.execute(text("DELETE FROM tenants WHERE user_id = :old"), names)
    else:
        conn.execute(text("UPDATE tenants SET user_id = :new WHERE user_id = :old"), names)
    conn.execute(text("UPDATE audit_log SET user_id = :new WHERE user_id = :old"), names)


# --- writers of a tenant whose erasure is under way -----------------------------------------------

# How long a writer of a tenant being erased waits for the erasure to end before it gives up:
# an erasure of 10k episodes takes about a second in short transactions.
ERASURE_WAIT_S = 10.0
_ERASURE_POLL_S = 0.02


def wait_out_erasure(erasing: Sequence[Tenant], since: float, where: object) -> None:
    """A writer found ``erasing`` (tenants it names) being erased (:func:`store.tenancy.being_erased`)
    and rolled back: sleep a moment before it tries again, or, ``ERASURE_WAIT_S`` after ``since``
    (a ``time.monotonic()``), refuse with :class:`StoreBusyError`."""
    if time.monotonic() - since > ERASURE_WAIT_S:
        names = ", ".join(repr(t.user_id) for t in erasing)
        raise StoreBusyError(f"{where} is busy: {names} is being erased; nothing was changed, try again once the erasure is done")
    time.sleep(_ERASURE_POLL_S)


def filtered(stmt: Select[Any], *, session_id: str | None, since: datetime | None, until: datetime | None) -> Select[Any]:
    """Restrict an episodes query to a session and the time range ``[since, until)``: the one
    rule the episodes tier and both engines' keyword searches filter by."""
    if session_id is not None:
        stmt = stmt.where(episodes_t.c.session_id == session_id)
    if since is not None:
        stmt = stmt.where(episodes_t.c.occurred_at >= since)
    if until is not None:
        stmt = stmt.where(episodes_t.c.occurred_at < until)
    return stmt
