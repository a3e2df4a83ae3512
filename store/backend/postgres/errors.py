"""PostgreSQL's complaints, as the typed errors of :mod:`store.errors`.

Messages name the server, database and role (``address``, never with its password) and what
failed; a raw psycopg or SQLAlchemy error never reaches a caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import exc

from ...errors import (
    MemlensError,
    ModelMismatchError,
    ReadOnlyStoreError,
    StoreBusyError,
    StoreDatabaseError,
    StoreFullError,
    StoreNotFoundError,
    StoreOpenError,
    StoreUnavailableError,
)

LOCK_TIMEOUT_S = 10  # as SQLite's busy timeout: a writer waits this long for another, then gives up

# SQLSTATEs (PostgreSQL appendix A) by what a caller can do about them.
_BUSY = {"40001": "a serialization failure", "40P01": "a deadlock", "55P03": "a lock it waited for too long"}
_READ_ONLY = {"25006"}  # read_only_sql_transaction
_FULL = {"53100"}  # disk_full
_PRIVILEGE = {"42501"}  # insufficient_privilege
_DIMENSION = "22000"  # pgvector: "expected N dimensions, not M"


def _message(orig: BaseException) -> str:
    diag = getattr(orig, "diag", None)
    primary = getattr(diag, "message_primary", None)
    lines = str(orig).strip().splitlines()
    return primary or (lines[0] if lines else type(orig).__name__)


def connection_error(orig: BaseException, address: str) -> MemlensError:
    """An error while connecting: which of server, database or role failed (no password shown)."""
    message = str(orig).strip()
    lowered = message.lower()
    # libpq's messages name host, port, role and database, and never the password.
    summary = message.splitlines()[-1] if message else type(orig).__name__
    for line in message.splitlines():
        if "fatal:" in line.lower() or "failed:" in line.lower():
            summary = line.strip()
    if "database" in lowered and "does not exist" in lowered:
        return StoreNotFoundError(
            f"cannot open {address}: the database does not exist ({summary}); "
            "memlens creates a store inside an existing database: CREATE DATABASE first"
        )
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return StoreOpenError(f"cannot open {address}: the server refused the role's password ({summary})")
    if "role" in lowered and "does not exist" in lowered:
        return StoreOpenError(f"cannot open {address}: no such role on the server ({summary})")
    if "permission denied" in lowered:
        return StoreOpenError(f"cannot open {address}: the role may not connect to this database ({summary})")
    return StoreOpenError(f"cannot reach the PostgreSQL server of {address} ({summary}); check the host, port and that it is running")


def translate(error: BaseException, address: str, *, connecting: bool = False) -> MemlensError:
    """The typed error for a driver error raised while using the store at ``address``."""
    orig = getattr(error, "orig", None) or error
    state = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)
    text = _message(orig)
    if state in _BUSY:
        return StoreBusyError(
            f"{address} is busy: the write met {_BUSY[state]} with another connection "
            f"(lock timeout {LOCK_TIMEOUT_S} s); nothing was changed, try again ({text})"
        )
    if state in _READ_ONLY:
        return ReadOnlyStoreError(f"{address} is open read-only; reopen it with read_only=False to change it")
    if state in _PRIVILEGE:
        return ReadOnlyStoreError(
            f"{address}: the database role may not do this ({text}); "
            "grant it the privilege, or open the store with read_only=True to look at it"
        )
    if state in _FULL:
        return StoreFullError(f"{address}: the server's disk is full ({text}); nothing was changed. Free space and try again")
    if state == _DIMENSION and "dimensions" in text:
        return ModelMismatchError(
            f"{address} keeps vectors of another width than this embedder makes ({text}); open it with the model that made them"
        )
    if state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        if connecting:
            return connection_error(orig, address)
        return StoreUnavailableError(
            f"lost the connection to the PostgreSQL server of {address} ({text}); "
            "if this was a write, it may or may not have committed: read before retrying"
        )
    return StoreDatabaseError(f"{address}: the server refused a statement ({state}: {text}); nothing was changed")


@contextmanager
def translated(address: str) -> Iterator[None]:
    """Driver errors raised inside, re-raised as the typed error :func:`translate` gives."""
    try:
        yield
    except exc.DBAPIError as error:
        raise translate(error, address) from error
