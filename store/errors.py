"""Every exception memlens raises, in one place.

Each message says what went wrong and what to do about it. A call that raises
one of these has changed nothing in the store.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable


class MemlensError(Exception):
    """Base class of every error raised by memlens."""


class IsolationWarning(UserWarning):
    """A call without ``user_id`` reached the anonymous bucket of a store that holds named users."""


# --- bad input -------------------------------------------------------------


class InvalidInputError(MemlensError, ValueError):
    """An argument was rejected before anything was written."""


class ContentTooLargeError(InvalidInputError):
    """A text field is larger than the store's configured limit."""


class InvalidTextError(InvalidInputError):
    """Text that SQLite cannot keep faithfully: NUL bytes or lone surrogates."""


class NaiveDatetimeError(InvalidInputError):
    """A datetime without a timezone; memlens only accepts timezone-aware datetimes."""


# --- things that are not there ---------------------------------------------


class NotFoundError(MemlensError, LookupError):
    """Something was asked for by id and is not in this tenant's part of the store."""


class UnknownSessionError(NotFoundError):
    pass


class UnknownCheckpointError(NotFoundError):
    pass


class UnknownEpisodeError(NotFoundError):
    pass


class UnknownFactError(NotFoundError):
    pass


class UnknownTraceError(NotFoundError):
    """No kept recall of that id for this tenant (:meth:`store.memory.MemoryStore.get_recall_trace`)."""


class UnknownTenantError(NotFoundError):
    """No tenant of that name holds anything in this store. ``close_matches`` lists tenants whose
    names differ only slightly (``Alice`` for ``alice``), so a typo is caught, not acted on."""

    def __init__(self, message: str, *, close_matches: list[str] | None = None):
        super().__init__(message)
        self.close_matches = list(close_matches or [])


class DuplicateIdError(InvalidInputError):
    """An id that this tenant already uses for another record of the same kind."""


# --- the database file itself ----------------------------------------------


class StoreOpenError(MemlensError):
    """The path could not be opened as a memlens store."""


class StoreNotFoundError(StoreOpenError):
    """No store at that path, and the caller asked not to create one."""


class UntrustedSchemaError(StoreOpenError):
    """The file holds schema objects (triggers, views, tables) that memlens did not create."""


class NotADatabaseError(StoreOpenError):
    """The file exists but is not an SQLite database."""


class DamagedStoreError(StoreOpenError):
    """SQLite reports the database file as malformed."""


class ForeignDatabaseError(StoreOpenError):
    """An SQLite database that belongs to another application."""


class SchemaTooNewError(StoreOpenError):
    """The store was written by a newer memlens; it is left untouched."""


class ReadOnlyStoreError(MemlensError):
    """A write was attempted on a store opened with ``read_only=True`` (or on a read-only file).
    Open it with ``read_only=True`` to look at it; ``reason`` says why the file cannot be written
    (its filesystem, its mode, its folder or side files), or is None when it was opened read-only."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason


class StoreBusyError(MemlensError):
    """Another connection held the database longer than the busy timeout; nothing was changed, try again."""


class StoreUnavailableError(MemlensError):
    """The database server could not be reached, or dropped the connection while a call was using
    it. A read can simply be retried; a write cut off at its commit may or may not have been
    applied, so read before writing it again."""


class StoreDatabaseError(MemlensError):
    """The database refused a statement for a reason memlens does not expect (the message carries
    the database's own code and words); nothing was changed. Report it with the message."""


class StoreFullError(StoreDatabaseError):
    """The disk holding the store is full (or the store reached a size limit set for it): the
    write or erasure was rolled back whole and nothing was changed. Free space and run it again."""


# --- embeddings --------------------------------------------------------------


class ModelNotAvailableError(MemlensError):
    """The embedding model cannot be loaded from local files."""


class ModelMismatchError(MemlensError):
    """The store's vectors were made with a different embedding model."""


# --- export / import -----------------------------------------------------------


class ImportValidationError(InvalidInputError):
    """A record of an import file is not valid; nothing was imported."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        where = []
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field {field!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)
        self.line = line
        self.field = field


class InvalidMetadataError(DamagedStoreError):
    """``memlens_meta`` holds a value memlens never writes (a schema version that is not a whole
    number, an embedding model without its dimension); the file was changed outside memlens.
    Restore it from a backup."""


# --- files memlens writes --------------------------------------------------------


class OutputPathError(MemlensError):
    """memlens will not or cannot write an output file there (the store itself or one of its side
    files, a directory, a missing or unwritable folder, a full disk). Nothing was written; pick
    another path."""


class OutputExistsError(OutputPathError):
    """A file is already at the output path. memlens replaces an existing file only when told to
    (``--force`` on the command line, ``overwrite=True`` or ``force=True`` in the API)."""


# --- databases other libraries wrote (memlens import --from ...) -----------------------


class SourceError(MemlensError):
    """A database another library wrote could not be imported, shown or erased in place; the
    source and the store are both unchanged unless the message says otherwise."""


class SourceNotFoundError(SourceError):
    """No file at the source path; check the path (nothing was created there)."""


class UnrecognizedSourceError(SourceError):
    """The source is not a database of the library named by ``--from`` (not SQLite at all,
    damaged, or another application's tables); point it at the file that library writes."""


class SourceSchemaTooNewError(SourceError):
    """The source has tables or columns this memlens does not know (written by a newer version
    of the library, or changed by hand); nothing was read from it. Upgrade memlens, or export
    with the library's own tools."""


class SourceChangedError(SourceError):
    """The source changed while it was being read (its library was writing to it); nothing was
    imported. Stop the agent that writes it, or try again."""


class SourceBusyError(SourceError):
    """Another process holds the source's write lock (its agent is writing): nothing was erased.
    Stop the agent, or try again."""


class SourceToolMissingError(SourceError):
    """Changing another library's file in place goes through that library, which is not
    installed (``pip install 'memlens[compat]'``); nothing was changed."""


class ImportMismatchError(InvalidInputError):
    """After writing, the store would not hold every record read from the source (it already
    holds a different record under one of the ids, or a newer block of that name); the write
    was rolled back and nothing was imported. ``mismatches`` maps each section to (expected,
    held)."""

    def __init__(self, message: str, *, mismatches: dict[str, tuple[int, int]] | None = None):
        super().__init__(message)
        self.mismatches = dict(mismatches or {})


# --- moving a store (memlens migrate) --------------------------------------------------------


class MigrationError(MemlensError):
    """A migration between two stores did not happen; the destination is as it was before (the
    copy is one transaction) and the source is never changed."""


class MigrationTargetError(MigrationError):
    """The destination already holds tenants (or their audit history). memlens never merges a
    store into another silently: migrate into an empty store, or pass ``into_existing=True``
    (``--into-existing``) to add the source's tenants beside the destination's; a tenant held on
    both sides is refused even then (export and import it instead, which keeps the newer state)."""


class MigrationSourceError(MigrationError):
    """A record of the source store breaks the rules the API applies to the same data (text limits,
    times, JSON, vector sizes, ids), or cannot be read at all: the source file was changed outside
    memlens. Nothing was copied. Fix or erase the named record in the source, then run it again."""


class MigrationMismatchError(MigrationError):
    """After copying, the destination did not hold exactly what the source holds (counts or
    content digests of a tenant's section differ); the copy was rolled back. ``mismatches`` maps
    "tenant/section" to (source count, destination count). Report it: it is a memlens bug or a
    destination that changes what it stores (a column type that rounds)."""

    def __init__(self, message: str, *, mismatches: dict[str, tuple[int, int]] | None = None):
        super().__init__(message)
        self.mismatches = dict(mismatches or {})


class UnsupportedByBackendError(MemlensError):
    """The operation needs something this store's database does not have: building a server-side
    vector index needs PostgreSQL (a SQLite store indexes its large tenants in memory by itself).
    Nothing was changed."""


# --- naming what a slip was probably meant for, in the messages above ---------


def _fold(name: str) -> str:
    """What a reader sees: the same letters whatever their case or Unicode form."""
    return unicodedata.normalize("NFKC", name).casefold()


def close_matches(name: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that ``name`` is likely a slip for: the same but for case or Unicode form
    (a store read-only to this process may still hold a name in another form), then similar ones."""
    folded = _fold(name)
    names = list(names)
    same_but_case = [other for other in names if _fold(other) == folded]
    # On case-folded names, a ratio of 0.8 catches one swap or slip ("alcie": 0.80 to "alice",
    # "carl": 0.89 to "carol") and leaves different short names apart ("bob": 0.67 to "rob").
    by_fold = {_fold(other): other for other in names}
    similar = [by_fold[m] for m in difflib.get_close_matches(folded, list(by_fold), n=3, cutoff=0.8)]
    return list(dict.fromkeys(same_but_case + similar))


def did_you_mean(matches: list[str]) -> str:
    return f" (did you mean {' or '.join(repr(m) for m in matches)}?)" if matches else ""
