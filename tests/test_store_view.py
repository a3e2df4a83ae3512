"""store.open chooses by the address, and what it returns is a StoreView: every member the
inspector and the command line use, taking what MemoryStore's own takes. (The views of another
library's memory are held to the same in tests/compat.)"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import store
from store import MemoryStore, StoreView
from store.errors import InvalidInputError
from store.views import StoreView as Declared

MEMBERS = sorted(name for name in vars(Declared) if not name.startswith("_"))


def declared_parameters(name: str) -> list[tuple[str, inspect._ParameterKind]]:
    member = inspect.getattr_static(Declared, name)
    if isinstance(member, property):
        return []
    return [(p.name, p.kind) for p in inspect.signature(member).parameters.values() if p.name != "self"]


def assert_a_view(view: object) -> None:
    """``view`` has every member of StoreView; each method takes every parameter StoreView names, in the same way."""
    assert isinstance(view, StoreView)
    for name in MEMBERS:
        value = getattr(view, name)
        wanted = declared_parameters(name)
        if not wanted and isinstance(inspect.getattr_static(Declared, name), property):
            continue
        assert callable(value), name
        taken = {p.name: p.kind for p in inspect.signature(value).parameters.values()}
        for parameter, kind in wanted:
            assert taken.get(parameter) == kind, (name, parameter, taken)


def test_the_declaration_names_what_the_inspector_reads_and_erases():
    assert {"recall", "episodes", "facts", "working", "snapshot", "memory_diff", "tenants", "export_to", "forget", "scrub", "path"} <= set(
        MEMBERS
    )


def test_a_memlens_store_opened_by_address_is_a_memory_store_and_a_view(tmp_path):
    with store.open(tmp_path / "m.db", embedder=None) as opened:
        assert type(opened) is MemoryStore
        assert_a_view(opened)
    with store.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None, create=False) as again:
        assert type(again) is MemoryStore


def test_the_check_sees_a_missing_member_and_a_parameter_taken_otherwise(tmp_path):
    with MemoryStore.open(tmp_path / "m.db", embedder=None) as real:

        class Lacking:
            def __getattr__(self, name: str):
                if name == "scrub":
                    raise AttributeError(name)
                return getattr(real, name)

        with pytest.raises(AssertionError):
            assert_a_view(Lacking())

        class Positional:
            def __getattr__(self, name: str):
                if name == "recall":
                    return lambda query, user_id=None: []
                return getattr(real, name)

        with pytest.raises(AssertionError):
            assert_a_view(Positional())


@pytest.mark.parametrize("address", ["loomflow-sqlite:{dir}/bot.db", "chroma:{dir}/vectors"])
def test_memory_store_open_opens_memlens_stores_only_and_changes_nothing(tmp_path, address):
    target = address.format(dir=tmp_path)
    before = sorted(Path(tmp_path).iterdir())
    with pytest.raises(InvalidInputError, match=r"another library's memory.*store\.open"):
        MemoryStore.open(target)
    assert sorted(Path(tmp_path).iterdir()) == before


def test_a_store_option_given_for_another_librarys_memory_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="max_content_bytes"):
        store.open(f"loomflow-sqlite:{tmp_path}/bot.db", max_content_bytes=10)
    assert list(tmp_path.iterdir()) == []
