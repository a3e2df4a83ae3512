"""memlens store: an embedded agent-memory store on SQLite or PostgreSQL.

Public names load on first use, so ``import store`` stays cheap and never pulls in
the embedding model's dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "open",
    "StoreView",
    "MemoryStore",
    "AsyncMemoryStore",
    "SessionMemory",
    "UNSET",
    "errors",
    "models",
]

_LAZY = {
    "open": "store.opening",
    "StoreView": "store.views",
    "MemoryStore": "store.memory",
    "UNSET": "store.memory",
    "AsyncMemoryStore": "store.aio",
    "SessionMemory": "store.tiers.sessions",
    "errors": "store.errors",
    "models": "store.models",
}

if TYPE_CHECKING:
    from . import errors, models
    from .aio import AsyncMemoryStore
    from .memory import MemoryStore
    from .opening import open
    from .tenancy import UNSET
    from .tiers.sessions import SessionMemory
    from .views import StoreView


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'store' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
