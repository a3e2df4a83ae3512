"""A loomflow ``ChromaMemory`` directory, read without changing it: ``memlens import --from chroma
DIR`` and the ``chroma:DIR`` view (:mod:`.loomflow_view`).

loomflow keeps each episode in the ``jeeves_episodes`` collection (its input, output, session,
user and time in the metadata, a tool transcript as JSON) and, with ``with_facts=True``, each fact
in ``jeeves_facts``; working blocks live in the agent's process only, so a directory holds none.
Chroma has no read-only mode (its client opens its SQLite file for writing and may migrate it),
so the directory is copied into a private temporary folder (0700) and the copy is opened with
chromadb's own client; the sizes and mtimes of every file are compared before and after the
copy, and a directory that changed meanwhile is refused (``SourceChangedError``). Reading needs
chromadb (``pip install 'memlens[chroma]'``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import (
    ImportValidationError,
    SourceChangedError,
    SourceNotFoundError,
    SourceToolMissingError,
    UnrecognizedSourceError,
)
from ..memory import MemoryStore
from .loomflow_sqlite import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    LoomflowImportReport,
    LoomflowSource,
    import_loomflow_sqlite,
    message,
    read_retried,
)
from .private_copies import make_private_folder, remove_private_folder

__all__ = ["directory_stamp", "import_chroma", "read_chroma"]

EPISODES, FACTS = "jeeves_episodes", "jeeves_facts"
# loomflow's wire value for the anonymous user (``memory._user_key``); older versions wrote "".
_ANONYMOUS = ("__jeeves_anon_user__", "")


def read_chroma(path: str | Path) -> LoomflowSource:
    """Read a loomflow ``ChromaMemory`` directory into memory, never changing it; a directory that
    is missing, not loomflow's, or written to meanwhile raises a typed error."""
    source = Path(os.path.realpath(path))
    if not source.is_dir():
        raise SourceNotFoundError(f"{path} is not a directory; a loomflow ChromaMemory keeps its memory in one; nothing was read")
    chromadb = _chromadb()
    # A copy the agent wrote to meanwhile (or that vanished under it) is made again after a pause.
    episodes, facts = read_retried(lambda: _snapshot(source, chromadb), source, "nothing was read")
    records: list[dict[str, Any]] = []
    where: list[str] = []
    messages = 0
    for eid, meta in zip(episodes["ids"], episodes["metadatas"], strict=True):
        here = f"{EPISODES}[{eid!r}]"
        record, steps = _episode(eid, meta or {}, here)
        records.append(record)
        where.append(here)
        messages += steps
    for fid, meta in zip(facts["ids"], facts["metadatas"], strict=True):
        here = f"{FACTS}[{fid!r}]"
        records.append(_fact(fid, meta or {}, here))
        where.append(here)
    counts = {"episodes": len(episodes["ids"]), "blocks": 0, "facts": len(facts["ids"])}
    tenants = list(dict.fromkeys(r["user_id"] for r in records))
    manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "tenants": tenants, "counts": counts}
    return LoomflowSource(source, {"records": records, "manifest": manifest}, where, messages)


def _snapshot(source: Path, chromadb: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    before = directory_stamp(source)
    folder = make_private_folder("memlens-chroma-", source)
    try:
        copy = folder / "copy"
        copy_regular_files(source, copy)
        if directory_stamp(source) != before:
            raise SourceChangedError(f"{source} changed while it was being copied; nothing was read (is an agent writing to it?)")
        client = None
        try:
            client = chromadb.PersistentClient(path=str(copy), settings=chromadb.Settings(anonymized_telemetry=False))
            collections = {c.name for c in client.list_collections()}
            if EPISODES not in collections:
                raise UnrecognizedSourceError(
                    f"{source} is not a loomflow ChromaMemory directory (no {EPISODES} collection); nothing was read"
                )
            episodes = client.get_collection(EPISODES).get(include=["metadatas"])
            facts = client.get_collection(FACTS).get(include=["metadatas"]) if FACTS in collections else {"ids": [], "metadatas": []}
        except (UnrecognizedSourceError, SourceChangedError):
            raise
        except Exception as error:  # chromadb's own errors: a damaged or foreign directory
            raise UnrecognizedSourceError(f"{source} is not a readable Chroma directory ({error}); nothing was read") from None
        finally:
            if client is not None:
                client.close()
    finally:
        remove_private_folder(folder)
    return episodes, facts


def import_chroma(store: MemoryStore, path: str | Path | LoomflowSource, *, actor: str = "chroma-import") -> LoomflowImportReport:
    """Read the loomflow ``ChromaMemory`` directory at ``path`` (never changing it) into ``store``,
    as :func:`.loomflow_sqlite.import_loomflow_sqlite` does a loomflow file: each loomflow user a
    tenant, one transaction, verified by counts, a refusal a typed error that writes nothing."""
    source = path if isinstance(path, LoomflowSource) else read_chroma(path)
    return import_loomflow_sqlite(store, source, actor=actor)


def copy_regular_files(source: Path, copy: Path) -> None:
    """Copy the directory's folders and regular files, refusing any link or special file: the
    copy is opened by chromadb for writing, and a link kept as a link would let it write through
    to wherever the link points (another of the user's files)."""
    for root, folders, files in os.walk(source, followlinks=False):
        here = Path(root)
        target = copy / here.relative_to(source)
        target.mkdir(mode=0o700)
        for name in [*folders, *files]:
            try:
                mode = (here / name).lstat().st_mode
            except FileNotFoundError:
                raise SourceChangedError(
                    f"{source} changed while it was being copied; nothing was read (is an agent writing to it?)"
                ) from None
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                kind = "a link" if stat.S_ISLNK(mode) else "a special file"
                raise UnrecognizedSourceError(
                    f"{source} holds {kind}, {(here / name).relative_to(source)}: a Chroma directory holds folders and files only; "
                    "nothing was read"
                )
        for name in files:
            # O_NOFOLLOW: a file swapped for a link after the check above is refused, not followed.
            try:
                fd = os.open(here / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except FileNotFoundError:
                raise SourceChangedError(
                    f"{source} changed while it was being copied; nothing was read (is an agent writing to it?)"
                ) from None
            except OSError as error:
                raise UnrecognizedSourceError(
                    f"{source}: {(here / name).relative_to(source)} could not be read as a file ({error.strerror}); nothing was read"
                ) from None
            with os.fdopen(fd, "rb") as reading, open(target / name, "xb") as writing:
                shutil.copyfileobj(reading, writing)


def directory_stamp(path: Path) -> list[tuple[str, int, int]]:
    """The relative path, size and mtime of every file under ``path``: equal stamps before and
    after a read mean nobody wrote meanwhile."""
    stamp = []
    for root, _, files in os.walk(path):
        for name in files:
            full = Path(root) / name
            try:
                st = full.stat()
            except FileNotFoundError:
                continue
            stamp.append((str(full.relative_to(path)), st.st_size, st.st_mtime_ns))
    return sorted(stamp)


def _chromadb() -> Any:
    try:
        import chromadb
    except ImportError:
        raise SourceToolMissingError("reading a Chroma directory needs chromadb: pip install 'memlens[chroma]'; nothing was read") from None
    return chromadb


def _user(meta: dict[str, Any], where: str) -> str | None:
    value = meta.get("user_id")
    if not isinstance(value, str):
        raise ImportValidationError(f"{where}.user_id: {value!r} is not a user id loomflow writes")
    return None if value in _ANONYMOUS else value


def _text(meta: dict[str, Any], key: str, where: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str):
        raise ImportValidationError(f"{where}.{key}: {value!r} is not the text loomflow writes")
    return value


def _moment(meta: dict[str, Any], key: str, where: str) -> str:
    value = meta.get(key)
    try:
        return datetime.fromtimestamp(float(value), tz=UTC).isoformat()  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        raise ImportValidationError(f"{where}.{key}: {value!r} is not a time loomflow writes (seconds since 1970)") from None


def _episode(eid: str, meta: dict[str, Any], where: str) -> tuple[dict[str, Any], int]:
    transcript = meta.get("tool_transcript_json")
    steps: list[dict[str, Any]] = []
    if transcript is not None:
        try:
            raw = json.loads(transcript)
        except (TypeError, ValueError, RecursionError):
            raise ImportValidationError(f"{where}.tool_transcript_json: not the JSON list loomflow writes") from None
        if not isinstance(raw, list):
            raise ImportValidationError(f"{where}.tool_transcript_json: not the JSON list loomflow writes")
        steps = [message(json.dumps(step), f"{where}.tool_transcript_json[{i}]") for i, step in enumerate(raw)]
    occurred = meta.get("occurred_at")
    record: dict[str, Any] = {
        "type": "episode",
        "user_id": _user(meta, where),
        "id": eid,
        "session_id": meta.get("session_id") or None,
        # The ISO form loomflow writes beside its numeric twin, which keeps the offset as given.
        "occurred_at": occurred if isinstance(occurred, str) else _moment(meta, "occurred_ts", where),
        "input": _text(meta, "input", where),
        "output": _text(meta, "output", where),
        "tool_calls": [],
        "metadata": {"tool_transcript": steps} if transcript is not None else {},
    }
    return record, len(steps)


def _fact(fid: str, meta: dict[str, Any], where: str) -> dict[str, Any]:
    sources = meta.get("sources", "[]")
    try:
        source_ids = json.loads(sources) if isinstance(sources, str) else None
    except (ValueError, RecursionError):
        source_ids = None
    if not isinstance(source_ids, list):
        raise ImportValidationError(f"{where}.sources: {sources!r} is not the JSON list loomflow writes")
    closed = not meta.get("currently_valid", True) and float(meta.get("valid_until_ts") or 0.0) > 0
    return {
        "type": "fact",
        "user_id": _user(meta, where),
        "id": fid,
        "subject": _text(meta, "subject", where),
        "predicate": _text(meta, "predicate", where),
        "object": _text(meta, "object", where),
        "confidence": meta.get("confidence", 1.0),
        "valid_from": _moment(meta, "valid_from_ts", where),
        "valid_until": _moment(meta, "valid_until_ts", where) if closed else None,
        "recorded_at": _moment(meta, "recorded_at_ts", where),
        "source_episode_ids": source_ids,
    }
