"""How a failure reads to the user: shared by the App's parts that run store calls."""

from __future__ import annotations


def describe(error: BaseException) -> str:
    """A store error's own message says what to do; anything else also needs its type to mean something."""
    from store.errors import MemlensError

    return str(error) if isinstance(error, MemlensError) else f"{type(error).__name__}: {error}"


def is_damage(error: BaseException) -> bool:
    from store.errors import DamagedStoreError

    return isinstance(error, DamagedStoreError)
