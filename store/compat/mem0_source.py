"""A mem0 agent's memory (``mem0ai``'s open-source ``Memory``: a local Qdrant collection and its
SQLite history) read without changing it, into a memlens store: ``memlens import --from mem0
CONFIG.json`` (the config the agent builds its ``Memory.from_config`` with, as JSON).

mem0 has no read-only mode (its client locks the Qdrant folder, its history manager creates and
migrates tables), so the Qdrant folder and the history database are copied into a private
temporary folder (0700; a link or a special file is refused) and mem0's own ``Memory`` reads the
copy, with telemetry off (mem0 keeps its own settings in its home folder, ``~/.mem0`` or
``$MEM0_DIR``, whenever it is imported); the sizes and times of every source
file are compared before and after the copy, and a source written meanwhile is read again, then
refused. Reading needs ``mem0ai`` (not a memlens dependency: install it beside memlens).

Each memory becomes a fact of its user's tenant (a memory without a ``user_id`` goes to the
anonymous tenant): subject the memory's id, predicate ``memory`` (``memory (agent A, run R)``
when mem0 scoped it so), object its text. Its history is kept as history: each text it held is a
fact valid from the event that wrote it until the next (an ``UPDATE`` supersedes, as memlens
supersedes a fact). Limits: a memory mem0 deleted keeps its history in mem0's database but is gone
from the vector store, which alone says whose it was, so it is not imported (and its text stays in
mem0's history database: erase it there); mem0's custom metadata is not kept. Qdrant's local mode
keeps each point pickled, so reading it runs Python's unpickler, as mem0 itself does: import only
memory you would run mem0 on.

``memlens mem0:CONFIG.json`` and ``store.open("mem0:CONFIG.json")`` show the same memory where it
lives, read-only and live (:mod:`.loomflow_view`): read again whenever a file of it changed.
memlens does not erase from it in place (see the view's reason).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ..errors import (
    ImportValidationError,
    InvalidInputError,
    SourceChangedError,
    SourceNotFoundError,
    SourceToolMissingError,
    UnrecognizedSourceError,
)
from ..memory import MemoryStore
from .chroma_source import copy_regular_files, directory_stamp
from .langgraph_sqlite import source_time
from .loomflow_sqlite import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    LoomflowImportReport,
    LoomflowSource,
    import_loomflow_sqlite,
    read_retried,
    source_stamp,
)
from .private_copies import make_private_folder, remove_private_folder

__all__ = ["import_mem0", "mem0_stamp", "read_mem0"]

# mem0's defaults where a config leaves them out (mem0.configs.base, mem0.vector_stores.configs).
_DEFAULT_QDRANT_PATH, _DEFAULT_COLLECTION = "/tmp/qdrant", "mem0"
_MOST_MEMORIES = 10_000_000


def read_mem0(config: dict[str, Any] | str | Path) -> LoomflowSource:
    """Read the mem0 memory ``config`` describes (a ``Memory.from_config`` dict, or a JSON file of
    one) into memory, never changing it; what cannot be read raises a typed error."""
    cfg = _config(config)
    store = cfg.get("vector_store") or {"provider": "qdrant", "config": {}}
    if store.get("provider", "qdrant") != "qdrant":
        raise InvalidInputError(f"memlens reads mem0's local Qdrant store; this config names {store.get('provider')!r}; nothing was read")
    options = dict(store.get("config") or {})
    if options.get("host") or options.get("url"):
        raise InvalidInputError("this mem0 config names a Qdrant server; memlens reads mem0's local Qdrant folder (path); nothing was read")
    qdrant, history = _places(cfg)
    if not qdrant.is_dir():
        raise SourceNotFoundError(f"{qdrant} is not a directory; mem0's local Qdrant keeps its memory in one; nothing was read")
    memories = read_retried(lambda: _snapshot(qdrant, history, cfg, options), qdrant, "nothing was read")
    records, where = _records(memories)
    tenants = list(dict.fromkeys(r["user_id"] for r in records))
    manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "tenants": tenants, "counts": {"facts": len(records)}}
    return LoomflowSource(qdrant, {"records": records, "manifest": manifest}, where, 0)


def mem0_stamp(config: str | Path) -> Any:
    """The config's, the Qdrant folder's and the history database's sizes and times (the view's
    poll): equal stamps mean mem0 wrote nothing since."""
    path = Path(config)
    try:
        cfg = _config(path)
    except (SourceNotFoundError, UnrecognizedSourceError):
        return None
    qdrant, history = _places(cfg)
    return (source_stamp(path), directory_stamp(qdrant), source_stamp(history))


def import_mem0(
    store: MemoryStore, config: dict[str, Any] | str | Path | LoomflowSource, *, actor: str = "mem0-import"
) -> LoomflowImportReport:
    """Read mem0's memory (never changing it) into ``store``: each mem0 user a tenant, each memory
    a fact with its history; one transaction, verified by counts."""
    source = config if isinstance(config, LoomflowSource) else read_mem0(config)
    return import_loomflow_sqlite(store, source, actor=actor)


def _places(cfg: dict[str, Any]) -> tuple[Path, Path]:
    """The Qdrant folder and the history database a config names (mem0's defaults if it names none)."""
    options = (cfg.get("vector_store") or {}).get("config") or {}
    qdrant = Path(os.path.realpath(options.get("path") or _DEFAULT_QDRANT_PATH))
    history = Path(os.path.realpath(os.path.expanduser(cfg.get("history_db_path") or "~/.mem0/history.db")))
    return qdrant, history


def _config(config: dict[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(config, dict):
        return config
    path = Path(config)
    try:
        loaded = json.loads(path.read_text())
    except FileNotFoundError:
        raise SourceNotFoundError(f"{path} does not exist; give the JSON config the agent builds mem0's Memory from") from None
    except (OSError, ValueError, RecursionError) as error:
        raise UnrecognizedSourceError(f"{path} is not a readable JSON mem0 config ({error}); nothing was read") from None
    if not isinstance(loaded, dict):
        raise UnrecognizedSourceError(f"{path} is not a mem0 config (a JSON object); nothing was read")
    return loaded


def _snapshot(
    qdrant: Path, history: Path, cfg: dict[str, Any], options: dict[str, Any]
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every memory's payload and history, read by mem0 from a private copy of its files."""
    before = (directory_stamp(qdrant), source_stamp(history))
    folder = make_private_folder("memlens-mem0-", qdrant)
    try:
        copy_regular_files(qdrant, folder / "qdrant")
        (folder / "history").mkdir(mode=0o700)
        for suffix in ("", "-wal", "-journal"):
            side = history.parent / (history.name + suffix)
            if side.is_file() and not side.is_symlink():
                shutil.copyfile(side, folder / "history" / ("history.db" + suffix))
        if (directory_stamp(qdrant), source_stamp(history)) != before:
            raise SourceChangedError(f"{qdrant} changed while it was being copied; nothing was read (is an agent writing to it?)")
        memory = _mem0_memory(folder, options, cfg)
        try:
            listed = memory.vector_store.list(filters={}, top_k=_MOST_MEMORIES)
            rows = listed[0] if listed and isinstance(listed[0], list) else listed
            return [(_payload(row), memory.history(str(row.id))) for row in rows]
        finally:
            memory.close()
    finally:
        remove_private_folder(folder)


def _mem0_memory(folder: Path, options: dict[str, Any], cfg: dict[str, Any]) -> Any:
    # No telemetry (posthog) from a reading: mem0 reads the switch when it is first imported, and
    # memlens turns it off on the module too, for a mem0 imported before.
    os.environ["MEM0_TELEMETRY"] = "False"
    try:
        from mem0 import Memory
        from mem0.memory import main as mem0_main
    except ImportError:
        raise SourceToolMissingError(
            "reading mem0's memory needs mem0ai, through its own Memory: pip install mem0ai; nothing was read"
        ) from None
    mem0_main.MEM0_TELEMETRY = False
    store_options = {**options, "path": str(folder / "qdrant"), "collection_name": options.get("collection_name") or _DEFAULT_COLLECTION}
    read_config = {
        "vector_store": {"provider": "qdrant", "config": store_options},
        # Nothing is embedded or asked of a model to read; these are never called.
        "embedder": {"provider": "openai", "config": {"api_key": "unused"}},
        "llm": {"provider": "openai", "config": {"api_key": "unused"}},
        "history_db_path": str(folder / "history" / "history.db"),
    }
    if cfg.get("version"):
        read_config["version"] = cfg["version"]
    try:
        return Memory.from_config(read_config)
    except Exception as error:  # mem0's and Qdrant's own errors: a damaged or foreign folder
        raise UnrecognizedSourceError(
            f"{options.get('path') or _DEFAULT_QDRANT_PATH} is not a readable mem0 memory ({error}); nothing was read"
        ) from None


def _payload(row: Any) -> dict[str, Any]:
    payload = dict(getattr(row, "payload", None) or {})
    payload["id"] = str(row.id)
    return payload


def _records(memories: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> tuple[list[dict[str, Any]], list[str]]:
    records: list[dict[str, Any]] = []
    where: list[str] = []
    for payload, history in memories:
        memory_id = payload["id"]
        here = f"memory[{memory_id!r}]"
        scope = [f"{name} {payload[key]}" for name, key in (("agent", "agent_id"), ("run", "run_id")) if payload.get(key)]
        predicate = f"memory ({', '.join(scope)})" if scope else "memory"
        versions = _versions(payload, history, here)
        for n, (text, start, end) in enumerate(versions):
            records.append(
                {
                    "type": "fact",
                    "user_id": payload.get("user_id"),
                    "id": f"{memory_id}#{n}",
                    "subject": memory_id,
                    "predicate": predicate,
                    "object": text,
                    "confidence": 1.0,
                    "valid_from": start,
                    "valid_until": end,
                    "recorded_at": start,
                    "source_episode_ids": [],
                }
            )
            where.append(f"{here} version {n}")
    return records, where


def _versions(payload: dict[str, Any], history: list[dict[str, Any]], here: str) -> list[tuple[str, str, str | None]]:
    """(text, from, until) of each text the memory held, oldest first; the last is its current one."""
    texts: list[tuple[str, str]] = []
    for event in sorted(history, key=lambda e: (_time(e.get("updated_at") or e.get("created_at"), here), e.get("id") or "")):
        if event.get("event") in ("ADD", "UPDATE") and event.get("new_memory"):
            texts.append((event["new_memory"], _time(event.get("updated_at") or event.get("created_at"), here)))
    current = payload.get("data")
    if not isinstance(current, str) or not current:
        raise ImportValidationError(f"{here}: no text (mem0 keeps it under 'data')")
    if not texts or texts[-1][0] != current:  # a history that does not end where the memory is
        texts.append((current, _time(payload.get("updated_at") or payload.get("created_at"), here)))
    return [(text, start, texts[i + 1][1] if i + 1 < len(texts) else None) for i, (text, start) in enumerate(texts)]


def _time(value: Any, where: str) -> str:
    return source_time(value, where, "mem0").isoformat()
