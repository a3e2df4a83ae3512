"""The public API is pinned: every public name of ``store`` and every public member of
``MemoryStore``, ``AsyncMemoryStore`` and ``SessionMemory`` with its signature, compared with a
checked-in expectation. A restructuring that drops, renames or re-types one fails here; a
deliberate change updates ``tests/data/public_api.txt`` (run this file with ``MEMLENS_PIN=1``)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import store

EXPECTED = Path(__file__).parent / "data" / "public_api.txt"


def _member(cls: type, name: str) -> str:
    value = inspect.getattr_static(cls, name)
    if isinstance(value, property):
        return f"{cls.__name__}.{name}: property"
    if isinstance(value, (classmethod, staticmethod)):
        kind = type(value).__name__
        return f"{cls.__name__}.{name}{inspect.signature(value.__func__)} [{kind}]"
    if callable(value):
        prefix = "async " if inspect.iscoroutinefunction(value) else ""
        return f"{prefix}{cls.__name__}.{name}{inspect.signature(value)}"
    return f"{cls.__name__}.{name}: {type(value).__name__}"


def public_api() -> str:
    lines = [f"store.__all__ = {sorted(store.__all__)}"]
    for cls in (store.MemoryStore, store.AsyncMemoryStore, store.SessionMemory):
        names = sorted({n for klass in cls.__mro__[:-1] for n in vars(klass) if not n.startswith("_")})
        lines += [_member(cls, n) for n in names]
    return "\n".join(lines) + "\n"


def test_public_api_is_unchanged():
    actual = public_api()
    if os.environ.get("MEMLENS_PIN") == "1":
        EXPECTED.write_text(actual)
    assert actual == EXPECTED.read_text()
