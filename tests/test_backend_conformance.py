"""Each engine is what store.backend.interface says an engine is: every method of each protocol,
with the same parameters (names, kinds, defaults), and every attribute on an open store. mypy
checks the types (each engine module declares its protocols); this checks what mypy lets pass,
such as a renamed keyword argument or a changed default, and the attributes at run time."""

from __future__ import annotations

import inspect

import pytest

from store.backend import interface, open_backend
from store.backend.sqlite.database import Database
from store.backend.sqlite.keyword import SqliteKeywordIndex
from store.backend.sqlite.sql import SqliteSql

pytest.importorskip("psycopg")
from store.backend.postgres.backend import PostgresBackend  # noqa: E402
from store.backend.postgres.keyword import PostgresKeywordIndex  # noqa: E402
from store.backend.postgres.sql import PostgresSql  # noqa: E402
from store.backend.postgres.vectors import PgvectorIndex  # noqa: E402

ENGINES = {
    interface.Backend: [Database, PostgresBackend],
    interface.KeywordIndex: [SqliteKeywordIndex, PostgresKeywordIndex],
    interface.Sql: [SqliteSql, PostgresSql],
    interface.ServerVectorIndex: [PgvectorIndex],
}


def members(protocol: type) -> dict[str, object]:
    return {name: value for name, value in vars(protocol).items() if not name.startswith("_") and callable(value)}


def shape(function: object) -> list[tuple[str, object, object]]:
    """The parameters as a caller meets them: names, kinds and defaults (types are mypy's job)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(("protocol", "engine"), [(p, e) for p, engines in ENGINES.items() for e in engines], ids=lambda x: x.__name__)
def test_every_method_of_the_protocol_with_its_parameters(protocol, engine):
    assert members(protocol), protocol
    for name, declared in members(protocol).items():
        implemented = inspect.getattr_static(engine, name, None)
        assert implemented is not None, f"{engine.__name__} has no {name}"
        if isinstance(implemented, staticmethod):
            implemented = implemented.__func__
            assert shape(implemented) == shape(declared)[1:], f"{engine.__name__}.{name}"
        else:
            assert shape(implemented) == shape(declared), f"{engine.__name__}.{name}"


def test_an_open_store_has_every_attribute(backend_url):
    attributes = [name for name, value in vars(interface.Backend).items() if isinstance(value, property)]
    attributes += list(interface.Backend.__annotations__)
    assert {"path", "read_only", "keyword", "after_write", "vector_index"} <= set(attributes)
    store = open_backend(backend_url.removeprefix("sqlite:///"), read_only=False, create=True)
    try:
        for name in attributes:
            assert hasattr(store, name), name
        assert isinstance(store.keyword, (SqliteKeywordIndex, PostgresKeywordIndex))
    finally:
        store.close()
