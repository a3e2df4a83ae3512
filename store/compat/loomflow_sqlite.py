"""Open the memory a loomflow agent already has: a loomflow ``SqliteMemory`` file read into a
memlens store (``memlens import --from loomflow-sqlite PATH``).

The source is never changed. A ``mode=ro`` connection is not enough for that: on a WAL database
it writes read marks into the ``-shm`` file, and with no ``-wal`` present it creates an empty
``-wal`` and a ``-shm`` and leaves them behind (both seen with SQLite 3.40). So a source without
pending WAL or journal content is opened ``immutable=1`` (no side files, no locks), and one with
pending content is copied, with its side file, into a private temporary folder and read there,
where SQLite folds the pending content in. Either way the source's size and mtime are compared
before and after, so a loomflow process writing meanwhile refuses the import instead of feeding
it a torn read.

What is read is written through the store's own import (one transaction, every record held to
the API's rules, re-importing changes nothing), with ``expect_counts``: every episode, fact and
block read must be held as read once written, or nothing is written. No loomflow install is
needed; loomflow 0.20's schema is checked table by table and column by column.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import (
    ImportValidationError,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
    SourceSchemaTooNewError,
    UnrecognizedSourceError,
)
from ..memory import MemoryStore
from .private_copies import make_private_folder, remove_private_folder

__all__ = ["import_loomflow_sqlite", "read_loomflow_sqlite", "LoomflowSource", "LoomflowImportReport", "TierCount"]

# loomflow 0.20's SqliteMemory and SqliteFactStore: table -> columns. The first two are what
# makes a file a loomflow memory; the transcript table comes with 0.20, facts with_facts=True.
KNOWN = {
    "working_blocks": {"user_id", "name", "content", "pinned_order", "updated_at"},
    "episodes": {"id", "session_id", "user_id", "occurred_at", "input", "output", "embedding"},
    "episode_tool_transcripts": {"episode_id", "sequence", "message_json"},
    "facts": {
        "id",
        "user_id",
        "subject",
        "predicate",
        "object",
        "confidence",
        "valid_from",
        "valid_until",
        "recorded_at",
        "sources",
        "embedding",
    },
}
REQUIRED = ("working_blocks", "episodes")
# Side files whose content a reader must see: loomflow writes in WAL mode; a journal is a crash's.
PENDING = ("-wal", "-journal")
# memlens's documented export format, which the store's import reads.
EXPORT_FORMAT, EXPORT_VERSION = "memlens-export", 1


class TierCount(BaseModel):
    """One tier of an import: records read from the source, written now, already held as read."""

    read: int
    written: int
    unchanged: int


class LoomflowImportReport(BaseModel):
    """What ``import_loomflow_sqlite`` read and wrote, per tier (``episodes``, ``facts``,
    ``blocks``); ``tool_transcript_messages`` were read with their episodes. Every tier's
    ``read`` equals ``written + unchanged``: the import refuses otherwise."""

    source: str
    tenants: list[str | None]
    tiers: dict[str, TierCount]
    tool_transcript_messages: int
    reembedded: int


@dataclass(frozen=True)
class LoomflowSource:
    """A loomflow database as read by :func:`read_loomflow_sqlite`: its records in memlens's
    export shape, where each came from, and how many transcript messages they carry."""

    path: Path
    document: dict[str, Any]
    where: list[str]
    tool_transcript_messages: int
    # Triggers, views, tables and indexes loomflow does not create, read in the same snapshot.
    unknown_schema: tuple[str, ...] = ()


def read_loomflow_sqlite(path: str | Path) -> LoomflowSource:
    """Read a loomflow ``SqliteMemory`` database into memory, never changing it; a file that
    is missing, not loomflow's, of a newer schema or written to meanwhile raises a typed error."""
    source = Path(path)
    document, where, messages, unknown = _read(source)
    return LoomflowSource(source, document, where, messages, tuple(unknown))


def import_loomflow_sqlite(
    store: MemoryStore, path: str | Path | LoomflowSource, *, actor: str = "loomflow-import"
) -> LoomflowImportReport:
    """Read the loomflow ``SqliteMemory`` database at ``path`` (never changing it) into ``store``:
    each loomflow user becomes the memlens tenant of that ``user_id`` (``None`` the anonymous
    bucket), with its episodes (tool transcripts included), working blocks and facts (superseded
    ones too), ids and times as loomflow recorded them. One transaction; a refusal raises a typed
    error from :mod:`store.errors` and writes nothing. ``path`` may be what
    :func:`read_loomflow_sqlite` returned, to check the source before opening a store."""
    source = path if isinstance(path, LoomflowSource) else read_loomflow_sqlite(path)
    expected = dict(source.document["manifest"]["counts"])
    try:
        report = store.import_(source.document, actor=actor, expect_counts=expected)
    except ImportValidationError as exc:
        raise ImportValidationError(f"{source.path}: {_located(str(exc), exc.field, source.where)}") from None
    return LoomflowImportReport(
        source=str(source.path),
        tenants=report.tenants,
        reembedded=report.reembedded,
        tool_transcript_messages=source.tool_transcript_messages,
        tiers={s: TierCount(read=n, written=report.counts.get(s, 0), unchanged=report.unchanged.get(s, 0)) for s, n in expected.items()},
    )


def _located(message: str, field: str | None, where: list[str]) -> str:
    """The store names ``records[i].field``; say which loomflow row that was."""
    if field and field.startswith("records["):
        index, _, rest = field[len("records[") :].partition("]")
        if index.isdigit() and int(index) < len(where):
            prefix = f"records[{index}]: "
            return f"{where[int(index)]}{rest}: {message.removeprefix(f'field {field!r}: ').removeprefix(prefix)}"
    return message


# --- reading the source without changing it ---------------------------------------------------


def with_side_files(path: Path) -> list[Path]:
    """The database file and every side file SQLite may keep beside it (present or not)."""
    return [path.parent / (path.name + suffix) for suffix in ("", *PENDING, "-shm")]


def source_stamp(path: Path) -> list[tuple[str, int, int] | None]:
    """The size and mtime of the file and each of its side files (None: absent): equal stamps
    before and after a read mean nobody wrote meanwhile."""
    out: list[tuple[str, int, int] | None] = []
    for side in with_side_files(path):
        try:
            st = side.stat()
            out.append((side.name, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return out


# One reading of a loomflow file: its records in the export shape, where each came from, how many
# transcript messages they carry, and the schema objects loomflow does not create.
Reading = tuple[dict[str, Any], list[str], int, list[str]]
T = TypeVar("T")

# A reading that meets the agent writing is tried again, after pauses growing from the first to
# the last (s), each drawn at random up to that length so that the readings do not keep step with
# an agent that writes on a fixed beat, until READ_RETRY_SECONDS have passed: a write of
# loomflow's takes milliseconds, and a busy agent on a loaded machine leaves gaps that short.
READ_RETRY_FIRST_PAUSE, READ_RETRY_LAST_PAUSE = 0.01, 0.25
READ_RETRY_SECONDS = 3.0


def _read(path: Path) -> Reading:
    return read_sqlite_source(path, read_memory, "loomflow database")


def read_sqlite_source(path: Path, read_memory: Callable[[Path, sqlite3.Connection], T], what: str) -> T:
    """Read another library's SQLite file with ``read_memory`` (given the file's path for its
    messages, and a connection to read it by), never changing it: read ``immutable``, or a private
    copy while the file has pending content; read again while a writer tears the reading, and
    refused with SourceChangedError if it keeps doing so. ``what`` names the kind of file in errors."""
    if not path.is_file():
        raise SourceNotFoundError(f"{path} does not exist or is not a file; nothing was imported")
    # SQLite keeps the -wal of a database opened through a symlink beside the file it points to:
    # from here on, messages name that file.
    path = Path(os.path.realpath(path))
    return read_retried(lambda: _read_once(path, read_memory, what), path, "nothing was imported")


def read_retried(read: Callable[[], T], source: Path, nothing: str) -> T:
    """``read()``, made again after a pause while it raises SourceChangedError (the agent wrote
    meanwhile), for up to READ_RETRY_SECONDS; then refused saying the agent is writing, with
    ``nothing`` saying what the refusal left undone."""
    deadline = time.monotonic() + READ_RETRY_SECONDS
    pause, readings = READ_RETRY_FIRST_PAUSE, 0
    while True:
        readings += 1
        try:
            return read()
        except SourceChangedError:
            if time.monotonic() + pause > deadline:
                break
        time.sleep(random.uniform(pause / 2, pause))
        pause = min(pause * 2, READ_RETRY_LAST_PAUSE)
    raise SourceChangedError(
        f"{source} changed during each of {readings} readings in {READ_RETRY_SECONDS:g} s: the agent is writing to it; "
        f"{nothing} (try again when it pauses)"
    )


def _read_once(path: Path, read_memory: Callable[[Path, sqlite3.Connection], T], what: str) -> T:
    """One reading; a reading that failed or disagreed with itself while the file's stamp moved
    was torn by a writer, and raises SourceChangedError whatever it met (a vanished -wal, a page
    that looked malformed, counts that disagree). A file with pending writes is copied and the copy
    read: only the copying can meet the agent, so a busy agent (a write every few milliseconds)
    tears the few milliseconds of a copy, not the whole reading."""
    before = source_stamp(path)
    sizes = {stamp[0]: stamp[1] for stamp in before if stamp is not None}
    pending = [suffix for suffix in PENDING if sizes.get(path.name + suffix, 0) > 0]  # as the stamp saw them
    try:
        if pending:
            return _read_a_copy(path, pending, before, read_memory)
        result = read_memory(path, sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True))
    except SourceChangedError:
        raise
    except (sqlite3.Error, OSError, SourceError, ImportValidationError) as exc:
        if source_stamp(path) != before:
            raise SourceChangedError(f"{path} changed while it was being read; nothing was imported (is an agent writing to it?)") from None
        if isinstance(exc, sqlite3.Error):
            raise UnrecognizedSourceError(f"{path} is not a readable {what} ({exc}); nothing was imported") from None
        if isinstance(exc, OSError):
            raise SourceNotFoundError(f"{path} could not be read ({exc.strerror or exc}); nothing was imported") from None
        raise
    if source_stamp(path) != before:
        raise SourceChangedError(f"{path} changed while it was being read; nothing was imported (is an agent writing to it?)")
    return result


def _read_a_copy(
    path: Path, pending: list[str], before: list[tuple[str, int, int] | None], read_memory: Callable[[Path, sqlite3.Connection], T]
) -> T:
    """Copy the file and its pending side files into a private folder, check that nobody wrote
    meanwhile, and read the copy (which no agent writes), removing it whatever happens."""
    folder = make_private_folder("memlens-loomflow-", path)
    try:
        copy = folder / "source.db"
        shutil.copyfile(path, copy)
        for suffix in pending:
            shutil.copyfile(path.parent / (path.name + suffix), folder / ("source.db" + suffix))
        if source_stamp(path) != before:
            raise SourceChangedError(f"{path} changed while it was being copied; nothing was imported (is an agent writing to it?)")
        return read_memory(path, sqlite3.connect(copy))
    finally:
        remove_private_folder(folder)


def read_memory(path: Path, connection: sqlite3.Connection) -> Reading:
    """The records, where each came from, the transcript messages counted, and the schema objects
    loomflow does not create: all from one snapshot."""
    with closing(connection) as conn:
        # Its schema is someone else's: run none of its SQL functions, write nothing.
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA query_only = ON")
        conn.execute("BEGIN")  # one snapshot for the counts, the rows and the schema
        tables = _check_schema(path, conn)
        return (*_records(path, conn, tables), schema_objects_loomflow_does_not_create(conn))


def _check_schema(path: Path, conn: sqlite3.Connection) -> set[str]:
    kinds = {name: kind for kind, name in conn.execute("SELECT type, name FROM sqlite_master") if name in KNOWN}
    if not all(name in kinds for name in REQUIRED):
        raise UnrecognizedSourceError(
            f"{path} is not a loomflow SqliteMemory database (it has no {' and '.join(REQUIRED)} tables); nothing was imported"
        )
    for name, kind in kinds.items():
        if kind != "table":
            raise UnrecognizedSourceError(f"{path}: {name} is a {kind}, not loomflow's table; nothing was imported")
        columns = {row[1] for row in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))}
        if columns - KNOWN[name]:
            raise SourceSchemaTooNewError(
                f"{path}: table {name} has columns loomflow 0.20 does not write ({', '.join(sorted(columns - KNOWN[name]))}); "
                "nothing was imported"
            )
        if KNOWN[name] - columns:
            raise UnrecognizedSourceError(
                f"{path}: table {name} lacks {', '.join(sorted(KNOWN[name] - columns))}, as an older loomflow wrote it; open it "
                "once with loomflow 0.20's SqliteMemory (which migrates it) and import again; nothing was imported"
            )
    return set(kinds)


# Indexes loomflow 0.20 creates on its tables; SQLite's own objects (sqlite_autoindex_*, sqlite_sequence) aside.
KNOWN_INDEXES = {
    "episodes_user_session_idx",
    "episodes_user_occurred_idx",
    "episode_tool_transcripts_episode_idx",
    "facts_subject_idx",
    "facts_user_subject_predicate_idx",
}


def schema_objects_loomflow_does_not_create(conn: sqlite3.Connection) -> list[str]:
    """Every trigger, view, table and index in the file that loomflow 0.20 does not create, as
    ``"trigger NAME"``: a trigger runs inside loomflow's own statements (an ``AFTER DELETE`` could
    keep what an erasure deletes), so a file holding one is not erased in place."""
    found = []
    for kind, name in conn.execute("SELECT type, name FROM sqlite_master"):
        if name.startswith("sqlite_"):
            continue
        known = (kind == "table" and name in KNOWN) or (kind == "index" and name in KNOWN_INDEXES)
        if not known:
            found.append(f"{kind} {name}")
    return sorted(found)


def _time(value: Any, where: str) -> str:
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value, tz=UTC).isoformat()  # as loomflow reads it back
        except (OverflowError, OSError, ValueError):
            pass
    raise ImportValidationError(f"{where}: {value!r} is not a time loomflow writes (seconds since 1970)")


def _records(path: Path, conn: sqlite3.Connection, tables: set[str]) -> tuple[dict[str, Any], list[str], int]:
    records: list[dict[str, Any]] = []
    where: list[str] = []
    transcripts: dict[Any, list[Any]] = {}
    messages = 0
    if "episode_tool_transcripts" in tables:
        # Rows whose episode is gone (a forget with foreign keys off) belong to nothing and stay behind.
        for episode_id, sequence, raw in conn.execute(
            "SELECT t.episode_id, t.sequence, t.message_json FROM episode_tool_transcripts t "
            "JOIN episodes e ON e.id = t.episode_id ORDER BY t.episode_id, t.sequence"
        ):
            transcripts.setdefault(episode_id, []).append(message(raw, f"episode_tool_transcripts[{episode_id!r}, {sequence!r}]"))
            messages += 1
    for eid, session_id, user_id, occurred_at, input_, output in conn.execute(
        "SELECT id, session_id, user_id, occurred_at, input, output FROM episodes ORDER BY occurred_at, id"
    ):
        here = f"episodes[{eid!r}]"
        metadata = {"tool_transcript": transcripts[eid]} if eid in transcripts else {}
        records.append(
            {
                "type": "episode",
                "user_id": user_id,
                "id": eid,
                "session_id": session_id or None,
                "occurred_at": _time(occurred_at, f"{here}.occurred_at"),
                "input": input_,
                "output": output,
                "tool_calls": [],
                "metadata": metadata,
            }
        )
        where.append(here)
    for user_id, name, content, order, updated_at in conn.execute(
        "SELECT user_id, name, content, pinned_order, updated_at FROM working_blocks ORDER BY user_id, pinned_order, name"
    ):
        here = f"working_blocks[{user_id!r}, {name!r}]"
        records.append(
            {
                "type": "block",
                "user_id": user_id,
                "name": name,
                "content": content,
                "pinned_order": order,
                "updated_at": _time(updated_at, f"{here}.updated_at"),
            }
        )
        where.append(here)
    if "facts" in tables:
        for fid, user_id, subject, predicate, obj, confidence, valid_from, valid_until, recorded_at, sources in conn.execute(
            "SELECT id, user_id, subject, predicate, object, confidence, valid_from, valid_until, recorded_at, sources "
            "FROM facts ORDER BY recorded_at, id"
        ):
            here = f"facts[{fid!r}]"
            records.append(
                {
                    "type": "fact",
                    "user_id": user_id,
                    "id": fid,
                    "subject": subject,
                    "predicate": predicate,
                    "object": obj,
                    "confidence": confidence,
                    "valid_from": _time(valid_from, f"{here}.valid_from"),
                    "valid_until": None if valid_until is None else _time(valid_until, f"{here}.valid_until"),
                    "recorded_at": _time(recorded_at, f"{here}.recorded_at"),
                    "source_episode_ids": _sources(sources, f"{here}.sources"),
                }
            )
            where.append(here)
    # Counted apart from the rows, in the same snapshot: the store must end up holding this many.
    counts = {
        "episodes": _count(conn, "episodes"),
        "blocks": _count(conn, "working_blocks"),
        "facts": _count(conn, "facts") if "facts" in tables else 0,
    }
    read = {s: sum(1 for r in records if r["type"] + "s" == s) for s in counts}
    if read != counts:
        raise ImportValidationError(f"{path}: read {read} but the tables hold {counts}; nothing was imported")
    tenants = list(dict.fromkeys(r["user_id"] for r in records))
    manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "tenants": tenants, "counts": counts}
    return {"records": records, "manifest": manifest}, where, messages


def _count(conn: sqlite3.Connection, table: str) -> int:
    counted: int = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # table is one of KNOWN's names
    return counted


def _sources(raw: Any, where: str) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) and raw else []
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
        raise ImportValidationError(f"{where}: not the JSON list loomflow writes") from None


def message(raw: Any, where: str) -> dict[str, Any]:
    """A loomflow ``Message`` (its ``model_dump_json``) as memlens keeps a transcript step, the
    same conversion the loomflow adapter makes when it remembers one."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
        raise ImportValidationError(f"{where}: not the JSON message loomflow writes") from None
    if not isinstance(data, dict):
        raise ImportValidationError(f"{where}: not the JSON message loomflow writes")
    if data.get("images"):
        raise ImportValidationError(f"{where}: a transcript message with images, which memlens cannot keep")
    out = {"role": data.get("role"), "content": data.get("content")}
    for key in ("name", "tool_call_id"):
        if data.get(key) is not None:
            out[key] = data[key]
    calls = data.get("tool_calls")
    if calls:
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise ImportValidationError(f"{where}: tool_calls is not a list of calls")
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "tool_def"} for c in calls]
    unknown = set(data) - {"role", "content", "name", "tool_call_id", "tool_calls", "images"}
    if unknown:
        raise SourceSchemaTooNewError(f"{where}: message fields loomflow 0.20 does not write ({', '.join(sorted(unknown))})")
    return out
