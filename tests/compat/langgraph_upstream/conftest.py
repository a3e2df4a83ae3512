"""Run LangGraph's own store tests (vendored from ``libs/checkpoint-sqlite/tests`` of
langchain-ai/langgraph at f09cfe8, MIT licence beside this file) against memlens.

Our store fixture: every ``SqliteStore`` / ``AsyncSqliteStore`` those tests open, from a
connection string, is a :class:`~store.compat.langgraph.MemlensStore` over a fresh memlens file
instead. The files are LangGraph's, unchanged but for one import (``test_async_store.py`` takes
``CharacterEmbeddings`` from its sibling by this package's path). Tests left out are listed
below, each with its reason; docs/switching.md counts them.
"""

from __future__ import annotations

import itertools
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from store.compat.langgraph import MemlensStore  # noqa: E402
from tests.compat.vendored import skip_left_out  # noqa: E402

_EMBED = (
    "checks the scores or order the test's CharacterEmbeddings give; memlens embeds with its own "
    "local model (MemlensStore refuses a caller's index['embed'])"
)
_HELD = "checks that the store holds the test's CharacterEmbeddings and its dims, which MemlensStore refuses"
_NO_SQL = (
    "expects SqliteStore to refuse a filter key it cannot put into SQL; memlens builds no SQL from "
    "a filter, so such a key matches nothing (the test's other checks pass)"
)
_NEWLINE = (
    "a user id ending in a newline: memlens refuses tenant names with surrounding whitespace "
    "(one user must not pass for another), so the namespace cannot be written"
)
_ASYNC_ONLY = "AsyncSqliteStore refuses its sync methods on the event loop's thread; MemlensStore serves both"
_INTERNAL = "SqliteStore internals (its SQL, its migrations, its glob escaping): no store under test"

LEFT_OUT = {
    "test_store.py::test_sql_injection_vulnerability": _NO_SQL,
    "test_store.py::test_scores": _EMBED,
    "test_store.py::test_vector_search_with_filters": _EMBED + " ('bbbbluuu' is near 'blue car' in characters, not in meaning)",
    "test_store.py::test_vector_store_initialization": _HELD,
    "test_async_store.py::test_vector_store_initialization": _HELD,
    "test_store.py::test_namespace_labels_with_trailing_newline": _NEWLINE,
    "test_async_store.py::test_no_running_loop": _ASYNC_ONLY,
    "test_store.py::test_nonnull_migrations": _INTERNAL,
    "test_store.py::test_escape_glob_literal": _INTERNAL,
    "test_store.py::test_namespace_match_pattern": _INTERNAL,
    "test_store.py::test_list_namespaces_prefix_uses_indexable_condition": _INTERNAL,
}


def pytest_collection_modifyitems(config, items):
    skip_left_out(items, Path(__file__).parent, LEFT_OUT)


@pytest.fixture(autouse=True)
def memlens_store(tmp_path, monkeypatch, request):
    numbers = itertools.count()

    def open_store(index, ttl, kind):
        if index is not None:
            # The tests' CharacterEmbeddings stand in for a hosted model: memlens's own model takes
            # their place (MemlensStore refuses a caller's embed, and its dims with it).
            fields = index.get("text_fields") or index.get("fields")  # SqliteStore's name, or BaseStore's
            index = {"fields": fields} if fields else {}
        return kind(tmp_path / f"langgraph-{next(numbers)}.db", index=index, ttl=ttl)

    class MemlensAsSqliteStore(MemlensStore):
        def setup(self) -> None:
            """memlens creates its schema when the store opens."""

        @classmethod
        @contextmanager
        def from_conn_string(cls, conn_string, *, index=None, ttl=None):
            with open_store(index, ttl, cls) as store:
                yield store

    class MemlensAsAsyncSqliteStore(MemlensStore):
        async def setup(self) -> None:
            """memlens creates its schema when the store opens."""

        @classmethod
        @asynccontextmanager
        async def from_conn_string(cls, conn_string, *, index=None, ttl=None):
            with open_store(index, ttl, cls) as store:
                yield store

    monkeypatch.setattr(request.module, "SqliteStore", MemlensAsSqliteStore, raising=False)
    monkeypatch.setattr(request.module, "AsyncSqliteStore", MemlensAsAsyncSqliteStore, raising=False)
