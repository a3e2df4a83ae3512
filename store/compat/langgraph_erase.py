"""Erasing a user from a LangGraph ``SqliteStore`` file in place, verified: what a forget
through a ``langgraph-sqlite:`` view does (``memlens forget --db langgraph-sqlite:agent.sqlite
--user U``), by the same steps as a loomflow file's (:mod:`.loomflow_erase`): refused while
another process holds the write lock or the schema holds objects LangGraph does not create; the
items deleted through LangGraph's own ``SqliteStore`` (so LangGraph reopens the file and reads
everyone else's); the file read again, ``VACUUM`` and a ``TRUNCATE`` checkpoint; a byte scan of
the file, its side files and memlens's own copies for the erased text.

A user's items are those whose namespace names them (its second label: the rule
``MemlensStore`` states by default), expired ones not yet swept included; ``--session`` names one
namespace of theirs (``langgraph:memories.alice``). LangGraph declares the vectors of an item
(``store_vectors``) to go with it, but SQLite keeps its foreign keys off unless asked, so they
would stay: memlens deletes the erased items' vectors itself and checks none is left.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, SourceError, SourceToolMissingError
from .langgraph_sqlite import SESSION_PREFIX, read_langgraph_sqlite, schema_objects_langgraph_does_not_create, strings
from .loomflow_erase import ErasableFormat
from .loomflow_sqlite import LoomflowSource

__all__ = ["LANGGRAPH", "langgraph_format"]


def _namespace(record: dict[str, Any]) -> tuple[str, ...]:
    return tuple(record["session_id"].removeprefix(SESSION_PREFIX).split("."))


def _erase(path: Path, doomed: list[dict[str, Any]], user_id: str | None, session_id: str | None) -> None:
    try:
        from langgraph.store.base import PutOp
        from langgraph.store.sqlite import SqliteStore
    except ImportError:
        raise SourceToolMissingError(
            "erasing in place goes through LangGraph's own SqliteStore, so the file stays valid for the agent: "
            "install langgraph-checkpoint-sqlite (pip install 'memlens[compat]'); nothing was erased"
        ) from None
    items = [(_namespace(r), r["key"]) for r in doomed if r["type"] == "kv"]
    with SqliteStore.from_conn_string(str(path)) as store:
        store.batch([PutOp(namespace, key, None) for namespace, key in items])
    with closing(sqlite3.connect(path, timeout=5, isolation_level=None)) as conn:
        conn.execute("PRAGMA trusted_schema = OFF")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_vectors'").fetchone() is None:
            return
        conn.execute("BEGIN IMMEDIATE")
        for namespace, key in items:
            conn.execute("DELETE FROM store_vectors WHERE prefix = ? AND key = ?", (".".join(namespace), key))
        conn.execute("COMMIT")
        left = sum(
            conn.execute("SELECT COUNT(*) FROM store_vectors WHERE prefix = ? AND key = ?", (".".join(ns), key)).fetchone()[0]
            for ns, key in items
        )
    if left:
        raise SourceError(f"{path}: {left} vectors of the erased items are still in store_vectors")


def _erased_by(record: dict[str, Any], user_id: str | None, session_id: str | None) -> bool:
    return record["user_id"] == user_id and (session_id is None or record["session_id"] == session_id)


def _counts(records: list[dict[str, Any]]) -> dict[str, int]:
    items = sum(1 for r in records if r["type"] == "kv")
    return {"sessions": len(records) - items, "kv_entries": items}


def _texts(records: Iterable[dict[str, Any]]) -> list[str]:
    """An item's key, namespace and every string of its document, each also as the JSON text
    LangGraph writes it in (a quote or a line break is escaped there, other characters kept or,
    by another encoder, escaped too)."""
    found: list[str] = []
    for r in records:
        plain = [r["session_id"].removeprefix(SESSION_PREFIX)]
        if r["type"] == "kv":
            plain += [r["key"], *strings(r["value"])]
        for text in plain:
            found += [text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]]
    return [t for t in dict.fromkeys(found) if t]


def _sessions(records: list[dict[str, Any]], user_id: str | None) -> set[str | None]:
    return {r["session_id"] for r in records if r["user_id"] == user_id and r["type"] == "session"}


def langgraph_format(user_at: int = 1) -> ErasableFormat:
    """A LangGraph file's erasure, each item's user named by its namespace label at ``user_at``
    (as ``MemlensStore`` states it; the second label by default)."""
    if isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0:
        raise InvalidInputError(f"user_at must be a label position (0 or more), not {user_at!r}")

    def read_everything(path: Path) -> LoomflowSource:
        return read_langgraph_sqlite(path, keep_expired=True, user_at=user_at)

    return ErasableFormat(
        scheme="langgraph-sqlite",
        library="LangGraph",
        read=read_everything,
        foreign_objects=schema_objects_langgraph_does_not_create,
        erase=_erase,
        erased_by=_erased_by,
        counts=_counts,
        texts=_texts,
        sessions=_sessions,
        out_of_reach="copies of the LangGraph file made outside memlens (backups, synced folders); the file itself keeps no audit log",
    )


LANGGRAPH = langgraph_format()
