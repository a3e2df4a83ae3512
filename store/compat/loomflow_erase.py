"""Erasing a user from a loomflow ``SqliteMemory`` file in place, verified: what a forget through
a ``loomflow-sqlite:`` view does (``memlens forget --db loomflow-sqlite:bot.db --user U``).

The rows go through loomflow's own ``forget``, so the file stays what the agent expects (its
foreign keys take the tool transcripts, its fact store the facts). memlens then does what
loomflow leaves undone and checks the result the way it checks its own files:

1. Refused, with nothing changed, while another process holds the file's write lock (the agent
   is writing): a probe takes the lock without waiting.
2. loomflow's forget (``secure_delete`` is on in its connections: freed cells are zeroed).
3. The scrub: ``VACUUM`` and a ``TRUNCATE`` checkpoint, so no old page image of the erased rows
   stays in the file or its ``-wal``. A reader of the agent in the middle of a read keeps the WAL
   from being truncated: then the receipt says the bytes are not yet scrubbed, and why.
4. The byte scan: every text of the erased records that no remaining record holds (the user's
   inputs and outputs, transcript messages, block contents, fact objects, ids) is looked for in
   the file and each side file; one found is reported on the receipt.

No audit entry is written (the file is loomflow's, and it keeps no audit log): the receipt,
with its digest, is the record. Copies of the file made elsewhere (backups) are out of reach.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import (
    SourceBusyError,
    SourceChangedError,
    SourceError,
    SourceToolMissingError,
    UnknownSessionError,
    UnknownTenantError,
    UnrecognizedSourceError,
    close_matches,
    did_you_mean,
)
from ..models import ForgetReceipt
from . import erasure_journal as journal
from .loomflow_sqlite import LoomflowSource, read_loomflow_sqlite, schema_objects_loomflow_does_not_create, with_side_files
from .private_copies import copies_of, remove_private_folder

__all__ = ["ErasableFormat", "LOOMFLOW", "forget_in_place", "scrub_in_place", "OUT_OF_REACH"]

OUT_OF_REACH = "copies of the loomflow file made outside memlens (backups, synced folders); the file itself keeps no audit log"
# Texts shorter than this are left out of the byte scan: a word that short occurs by chance.
_MIN_NEEDLE = 4
_TIERS = {"episode": "episodes", "fact": "facts", "block": "blocks"}


@dataclass(frozen=True)
class ErasableFormat:
    """Another library's SQLite file that memlens erases from in place: how it is read, how the
    library itself erases, and what of a record the byte scan looks for afterwards."""

    scheme: str
    library: str
    read: Callable[[Path], LoomflowSource]
    """Every record the file holds, as the library wrote it (nothing left out: what is erased is counted)."""
    foreign_objects: Callable[[sqlite3.Connection], list[str]]
    """Schema objects the library does not create (a trigger would run inside its deletes)."""
    erase: Callable[[Path, list[dict[str, Any]], str | None, str | None], None]
    """Erase, through the library's own API, the given records (a user, or one session of it)."""
    erased_by: Callable[[dict[str, Any], str | None, str | None], bool]
    counts: Callable[[list[dict[str, Any]]], dict[str, int]]
    texts: Callable[[Iterable[dict[str, Any]]], list[str]]
    sessions: Callable[[list[dict[str, Any]], str | None], set[str | None]]
    """The sessions of a user a forget may name."""
    out_of_reach: str


def forget_in_place(
    path: Path,
    *,
    form: ErasableFormat | None = None,
    user_id: str | None,
    session_id: str | None,
    dry_run: bool,
    actor: str,
    missing_ok: bool = False,
    own_copy: Path | None = None,
) -> ForgetReceipt:
    """Erase ``user_id`` (only ``session_id``'s episodes, if given) from the loomflow file at
    ``path``; see the module's docstring. A dry run reads and counts, and changes nothing. A user
    (or session of it) the file does not hold raises UnknownTenantError (UnknownSessionError)
    naming close matches, unless ``missing_ok``. ``own_copy``: the calling view's own mirror,
    which it replaces itself once this returns.

    The file is read raw, as loomflow wrote it: another user's record that memlens would refuse to
    import (too large, empty, odd characters) does not stand in the way of this user's erasure."""
    form = form or LOOMFLOW
    path = Path(os.path.realpath(path))  # SQLite keeps a linked file's -wal beside its target
    before = form.read(path)
    records = before.document["records"]
    if not missing_ok:
        _require_held(path, records, user_id, session_id, form)
    doomed = [r for r in records if form.erased_by(r, user_id, session_id)]
    counts = form.counts(doomed)
    at = datetime.now(UTC)
    scope = {"session_id": session_id, "in_place": form.scheme}
    digest = hashlib.sha256(
        json.dumps(
            {"action": "forget", "user_id": user_id, "scope": scope, "counts": counts, "at": at.isoformat()}, sort_keys=True
        ).encode()
    ).hexdigest()
    receipt = ForgetReceipt(
        user_id=user_id, session_id=session_id, before=None, dry_run=dry_run, counts=counts, at=at, actor=actor, digest=digest
    )
    if dry_run:
        return receipt
    if journal.under_way_elsewhere(path):
        raise SourceBusyError(
            f"{path}: another memlens is erasing from it in place right now; nothing was erased. Try again once it has finished"
        )
    if not any(counts.values()):
        if not journal.interrupted(path):
            return receipt.model_copy(update={"disk_scrubbed": True, "out_of_reach": form.out_of_reach})
        # Nothing left to delete, but an erasure of this file was cut short before its scrub:
        # its rows are gone, their bytes may not be. Finish it.
        _refuse_unless_only_the_library_writes(path, form)
        scrubbed, reason = _scrub(path, f"run `memlens scrub {form.scheme}:{path}`")
        if scrubbed:
            journal.end(path)
        return receipt.model_copy(update={"disk_scrubbed": scrubbed, "scrub_pending_reason": reason, "out_of_reach": form.out_of_reach})
    _refuse_unknown_schema(path, list(before.unknown_schema), form)
    _refuse_unless_only_the_library_writes(path, form)
    try:
        journal.begin(path, form.scheme)
    except OSError as error:
        raise SourceError(f"{path}: memlens could not note the erasure it is starting ({error.strerror}); nothing was erased") from None
    try:
        form.erase(path, doomed, user_id, session_id)
    except sqlite3.OperationalError as error:  # the agent took the write lock after the probe
        raise SourceBusyError(
            f"{path}: {form.library} could not erase ({error}); is the agent writing? Try again once it is stopped"
        ) from None
    # From here on the library has erased: a failure below leaves a receipt saying what is
    # pending, never "nothing was done".
    pending: list[str] = []
    remaining = [r for r in records if not form.erased_by(r, user_id, session_id)]
    try:
        after = form.read(path)
    except SourceChangedError:
        pending.append("the agent kept writing, so the file could not be read again to check it")
    else:
        left = [r for r in after.document["records"] if form.erased_by(r, user_id, session_id)]
        if left:
            raise SourceError(
                f"{path}: {form.library}'s erasure left {len(left)} of the user's records; the file is as {form.library} left it"
            )
        remaining = after.document["records"]
    scrubbed, reason = _scrub(path, f"run `memlens scrub {form.scheme}:{path}`")
    if reason:
        pending.append(reason)
    else:
        journal.end(path)  # kept otherwise: the next memlens finishes the scrub
    needles = _needles(doomed, remaining, form)
    copies_erased, held_by_views = _memlens_copies(path, needles, own_copy)
    traces = _traces(path, needles) + held_by_views
    if traces:
        pending.append(f"erased text is still in {', '.join(sorted(traces))}")
    return receipt.model_copy(
        update={
            "disk_scrubbed": scrubbed and not pending,
            "scrub_pending_reason": "; ".join(pending) or None,
            "out_of_reach": form.out_of_reach,
            "copies_erased": copies_erased,
        }
    )


def _require_held(path: Path, records: list[dict[str, Any]], user_id: str | None, session_id: str | None, form: ErasableFormat) -> None:
    users = {r["user_id"] for r in records}
    if user_id not in users:
        if user_id is None:
            raise UnknownTenantError(f"the anonymous bucket holds nothing in {path}; nothing was erased")
        matches = close_matches(user_id, [u for u in users if u is not None])
        raise UnknownTenantError(f"{path} holds no user {user_id!r}{did_you_mean(matches)}; nothing was erased", close_matches=matches)
    if session_id is not None and session_id not in form.sessions(records, user_id):
        raise UnknownSessionError(f"{path} holds no session {session_id!r} of this user; nothing was erased")


def _memlens_copies(path: Path, needles: set[bytes], own_copy: Path | None) -> tuple[int, list[str]]:
    """memlens's own copies of the file (views' mirrors, readers' copies; :mod:`.private_copies`):
    those whose process is gone are deleted, the others byte-scanned. (how many were deleted,
    the open ones still holding erased text)"""
    erased, holding = 0, []
    for copy in copies_of(path):
        if copy.folder == own_copy:
            continue
        if not copy.owner_alive:
            remove_private_folder(copy.folder)
            erased += 1
        elif any(_holds(file, needles) for file in copy.files()):
            holding.append(f"the copy a memlens view in process {copy.pid} holds ({copy.folder}; it is replaced at that view's next poll)")
    return erased, holding


def _holds(file: Path, needles: set[bytes]) -> bool:
    """Whether ``file`` holds one of ``needles`` (read whole: one file in memory at a time)."""
    try:
        data = file.read_bytes()
    except FileNotFoundError:  # gone meanwhile (a view replaced its copy, SQLite removed a side file)
        return False
    return any(n in data for n in needles)


def _run(coroutine: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run loomflow's coroutine to its end, from a thread with an event loop running or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine())
    with ThreadPoolExecutor(1) as pool:  # asyncio.run refuses to nest in a running loop
        return pool.submit(asyncio.run, coroutine()).result()


def _episode_sessions(records: list[dict[str, Any]], user_id: str | None) -> set[str | None]:
    return {r["session_id"] for r in records if r["user_id"] == user_id and r["type"] == "episode"}


def _erase_through_loomflow(path: Path, doomed: list[dict[str, Any]], user_id: str | None, session_id: str | None) -> None:
    memory_class = _loomflow_memory()
    _run(lambda: memory_class(path).forget(user_id=user_id, session_id=session_id))


def _erased_by(record: dict[str, Any], user_id: str | None, session_id: str | None) -> bool:
    if record["user_id"] != user_id:
        return False
    # loomflow's forget of one session takes its episodes alone (blocks and facts have no session).
    return session_id is None or (record["type"] == "episode" and record["session_id"] == session_id)


def _counts(records: list[dict[str, Any]]) -> dict[str, int]:
    counted = Counter(_TIERS[r["type"]] for r in records)
    messages = sum(len(r["metadata"].get("tool_transcript", [])) for r in records if r["type"] == "episode")
    return {"episodes": counted["episodes"], "facts": counted["facts"], "blocks": counted["blocks"], "tool_transcript_messages": messages}


def _loomflow_memory() -> Any:
    try:
        from loomflow.memory import HashEmbedder
        from loomflow.memory.sqlite import SqliteMemory
    except ImportError:
        raise SourceToolMissingError(
            "erasing in place goes through loomflow's own forget, so the file stays valid for the agent: "
            "install loomflow (pip install 'memlens[compat]'); nothing was erased"
        ) from None
    # Its forget embeds nothing; an embedder given keeps loomflow from warning that it falls back to one.
    return lambda path: SqliteMemory(path, embedder=HashEmbedder())


def _refuse_unless_only_the_library_writes(path: Path, form: ErasableFormat) -> None:
    """Take the write lock without waiting, look at the schema, and let the lock go. Refused while
    another process holds the lock (the agent is writing), and for a file whose schema holds
    objects the library does not create (a trigger would run inside its own deletes)."""
    for side in with_side_files(path)[1:]:
        if side.is_symlink():
            raise SourceError(f"{side} is a link; SQLite would write through it to another file; nothing was erased")
    with closing(sqlite3.connect(path, timeout=0, isolation_level=None)) as conn:
        conn.execute("PRAGMA trusted_schema = OFF")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            raise SourceBusyError(
                f"{path} is being written by another process (it holds the file's write lock); nothing was erased. "
                "Stop the agent, or try again"
            ) from None
        try:
            foreign = form.foreign_objects(conn)
        finally:
            conn.execute("ROLLBACK")
    _refuse_unknown_schema(path, foreign, form)


def _refuse_unknown_schema(path: Path, foreign: list[str], form: ErasableFormat) -> None:
    if foreign:
        raise UnrecognizedSourceError(
            f"{path} holds schema objects {form.library} does not create ({', '.join(foreign)}): they would run inside "
            f"{form.library}'s own deletes (a trigger can keep what an erasure removes), so memlens does not erase it in place; "
            "nothing was erased. Look at them with the sqlite3 shell, or import the file into a memlens store"
        )


def scrub_in_place(path: Path, form: ErasableFormat | None = None) -> tuple[bool, str | None]:
    """The scrub of :func:`forget_in_place` alone (``memlens scrub loomflow-sqlite:PATH``),
    refused while another process writes the file; (scrubbed, why not)."""
    form = form or LOOMFLOW
    path = Path(os.path.realpath(path))
    form.read(path)  # the library's file, or a typed error before anything is written
    _refuse_unless_only_the_library_writes(path, form)
    scrubbed, reason = _scrub(path, "run it again")
    if scrubbed and not journal.under_way_elsewhere(path):
        journal.end(path)  # an erasure cut short before its scrub is finished now
    return scrubbed, reason


def _scrub(path: Path, again: str) -> tuple[bool, str | None]:
    """VACUUM, then a TRUNCATE checkpoint; (scrubbed, why not), ``again`` saying what to run next."""
    with closing(sqlite3.connect(path, timeout=5, isolation_level=None)) as conn:
        conn.execute("PRAGMA secure_delete = ON")
        try:
            conn.execute("VACUUM")
        except sqlite3.OperationalError as error:
            return False, f"the file could not be rewritten ({error}); {again} once the agent is stopped"
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        return False, f"a reader of the agent kept the -wal from being truncated; {again} once the agent is stopped"
    return True, None


def _needles(erased: list[dict[str, Any]], remaining: list[dict[str, Any]], form: ErasableFormat) -> set[bytes]:
    """The erased records' texts that no remaining record holds (those may stay, as others' data)."""
    kept = "\x00".join(form.texts(remaining))
    return {t.encode() for t in form.texts(erased) if len(t) >= _MIN_NEEDLE and t not in kept}


def _texts(records: Iterable[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for r in records:
        if r["type"] == "episode":
            found += [r["id"], r["input"], r["output"]]
            found += [m.get("content") or "" for m in r["metadata"].get("tool_transcript", [])]
        elif r["type"] == "block":
            found.append(r["content"])
        else:
            found += [r["id"], r["object"]]
    return [t for t in found if t]


def _traces(path: Path, needles: set[bytes]) -> list[str]:
    """The file and side files that still hold one of ``needles``."""
    return [side.name for side in with_side_files(path) if side.is_file() and _holds(side, needles)]


def _read_loomflow(path: Path) -> LoomflowSource:
    return read_loomflow_sqlite(path)  # looked up at each call, so tests can make one fail


LOOMFLOW = ErasableFormat(
    scheme="loomflow-sqlite",
    library="loomflow",
    read=_read_loomflow,
    foreign_objects=schema_objects_loomflow_does_not_create,
    erase=_erase_through_loomflow,
    erased_by=_erased_by,
    counts=_counts,
    texts=_texts,
    sessions=_episode_sessions,
    out_of_reach=OUT_OF_REACH,
)
