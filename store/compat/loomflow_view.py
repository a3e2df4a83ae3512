"""A loomflow agent's memory, looked at where it lives: ``store.open("loomflow-sqlite:FILE")``
or ``store.open("chroma:DIR")`` (and ``memlens loomflow-sqlite:FILE``, ``memlens chroma:DIR``)
shows a loomflow ``SqliteMemory`` file or ``ChromaMemory`` directory, read-only and live.

The source is loomflow's, so memlens never opens it for writing: each reading goes through the
importer's reader (:func:`.loomflow_sqlite.read_loomflow_sqlite`: ``immutable=1``, or a private
copy while loomflow's WAL holds pending content; :func:`.chroma_source.read_chroma`: a private
copy read with chromadb's client), which compares the sizes and mtimes of the source's files
before and after. What it reads is held in a private memlens store, a *mirror*, in a folder only
this user can read (0700), deleted on :meth:`LoomflowView.close`; every read of the view is a read
of that mirror, so search and every tier behave as on any memlens store, with the store's own
tenant partition. (Time travel reaches back to the view's first reading only; facts keep the
times loomflow gave them.)

Live: :meth:`LoomflowView.data_version` (which the inspector polls) first compares the source's
stamp with the one last read; when it moved, the source is read again and imported into the
mirror, which writes only what is new. When the import cannot express the change (a record that
changed, or records loomflow deleted: the mirror would hold more than the source), the mirror is
built again from the source and replaces the old one, which is deleted once the calls under way
on it return. A reading that meets loomflow writing keeps the mirror as it was and tries again at
the next poll.

Writes raise :class:`~store.errors.ReadOnlyStoreError` naming the source, but for one: on a
loomflow file, :meth:`LoomflowView.forget` erases a user, or one session, from the file itself,
through loomflow's own forget, then scrubs and checks it (:mod:`.loomflow_erase`). A Chroma
directory is not erased in place (its kind says why). loomflow does not record which model made
its vectors, so the mirror embeds with the embedder it is given (none by default: keyword
search only, and the inspector says so).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import SessionMemory
from ..errors import ImportMismatchError, InvalidInputError, MemlensError, ReadOnlyStoreError, SourceChangedError
from ..locations import shown_url
from ..memory import MemoryStore
from ..models import ForgetReceipt
from .chroma_source import directory_stamp, read_chroma
from .erasure_journal import Interrupted, finish_interrupted
from .knowledge_graph import read_mcp_memory
from .langgraph_erase import LANGGRAPH
from .langgraph_postgres import langgraph_postgres_stamp, read_langgraph_postgres
from .langgraph_sqlite import read_langgraph_sqlite
from .loomflow_erase import LOOMFLOW, ErasableFormat, forget_in_place, scrub_in_place
from .loomflow_sqlite import LoomflowSource, import_loomflow_sqlite, read_loomflow_sqlite, source_stamp
from .mem0_source import mem0_stamp, read_mem0
from .private_copies import make_private_folder, remove_private_folder

__all__ = ["LoomflowView", "SourceKind", "KINDS", "finish_interrupted_erasures", "open_view", "open_loomflow_view"]


@dataclass(frozen=True)
class SourceKind:
    """How a view reads one kind of source, and what it may do to it."""

    scheme: str
    # A file's or folder's path; a server database's URL (``server``).
    read: Callable[[Any], LoomflowSource]
    stamp: Callable[[Any], Any]
    # Erasable in place (through the library that owns the source), or why not.
    erasable: bool
    read_only_reason: str
    # How it is erased in place (when erasable).
    form: ErasableFormat | None = None
    # A database on a server (its address a URL, shown without its password), not a file.
    server: bool = False


KINDS = {
    "loomflow-sqlite": SourceKind(
        "loomflow-sqlite",
        lambda path: read_loomflow_sqlite(path),  # looked up at each reading, so tests can make one fail
        source_stamp,
        True,
        "another library's memory, shown where it lives: memlens only erases from it, through that library",
        LOOMFLOW,
    ),
    "langgraph-sqlite": SourceKind(
        "langgraph-sqlite",
        lambda path: read_langgraph_sqlite(path),
        source_stamp,
        True,
        "another library's memory, shown where it lives: memlens only erases from it, through that library",
        LANGGRAPH,
    ),
    "langgraph-postgres": SourceKind(
        "langgraph-postgres",
        lambda url: read_langgraph_postgres(str(url)),
        langgraph_postgres_stamp,
        False,
        "a LangGraph PostgresStore database, shown where it lives: memlens does not erase from it in place, since "
        "a deleted row stays in the table's heap and the server's write-ahead log until vacuum and checkpoints run, "
        "which memlens can neither force nor check for another application's database; erase with LangGraph's "
        "store.delete, or import it into a memlens store",
        server=True,
    ),
    "mem0": SourceKind(
        "mem0",
        lambda path: read_mem0(path),
        mem0_stamp,
        False,
        "a mem0 agent's memory, shown where it lives: memlens does not erase from it in place, since mem0 keeps a "
        "deleted memory's text in its history database and Qdrant's local files are not SQLite memlens can scrub; "
        "erase with mem0's delete_all(user_id=...) and delete the history rows, or import it into a memlens store",
    ),
    "mcp-memory": SourceKind(
        "mcp-memory",
        lambda path: read_mcp_memory(path),
        source_stamp,
        False,
        "the JSONL file of an MCP memory server, shown where it lives (as the anonymous tenant: the file names no "
        "user): memlens does not erase from it in place, since the server rewrites the whole file at each change "
        "and only the filesystem knows where the old bytes went; erase with the server's delete_entities, or "
        "import it into a memlens store (`memlens import --from mcp-memory`)",
    ),
    "chroma": SourceKind(
        "chroma",
        lambda path: read_chroma(path),
        directory_stamp,
        False,
        "a Chroma directory, shown where it lives: memlens does not erase from it in place, since Chroma keeps "
        "vectors in segment files memlens can neither scrub nor check byte for byte; erase with loomflow's "
        "ChromaMemory.forget, or import it into a memlens store",
    ),
}
# The export section each kind of record a reading holds is counted under (in TierCounts).
_SECTION = {"episode": "episodes", "fact": "facts", "block": "blocks", "session": "sessions", "kv": "kv_entries"}
_UNSET: Any = object()


def finish_interrupted_erasures() -> list[tuple[Interrupted, bool, str | None]]:
    """Scrub every file whose in-place erasure was cut short before its scrub (see
    :mod:`.erasure_journal`); (erasure, scrubbed, why not) for each."""

    def scrub(cut: Interrupted) -> tuple[bool, str | None]:
        kind = KINDS.get(cut.scheme)
        if kind is None or kind.form is None:
            return False, f"memlens does not erase {cut.scheme} files in place"
        try:
            return scrub_in_place(cut.source, kind.form)
        except MemlensError as error:
            return False, str(error)

    return finish_interrupted(scrub)


def open_view(address: str | Path, *, embedder: Any = None) -> LoomflowView:
    """A read-only, live view of the loomflow memory ``address`` names (``loomflow-sqlite:FILE``
    or ``chroma:DIR``); a source that is missing, not loomflow's or of a newer schema raises the
    importer's typed errors."""
    scheme, _, rest = str(address).partition(":")
    if scheme not in KINDS:
        raise InvalidInputError(f"{address}: not a source memlens can show ({', '.join(k + ':PATH' for k in KINDS)})")
    kind = KINDS[scheme]
    return LoomflowView(rest if kind.server else Path(rest), embedder, kind)


def open_loomflow_view(path: str | Path, *, embedder: Any = None) -> LoomflowView:
    """A read-only, live view of the loomflow ``SqliteMemory`` database at ``path``."""
    return open_view(f"loomflow-sqlite:{str(path).removeprefix('loomflow-sqlite:')}", embedder=embedder)


class _Mirror:
    """A private memlens store holding what was read of the source: a writer for the syncing,
    and the read-only store every read of the view goes to, with the calls under way on it."""

    def __init__(self, read: LoomflowSource, embedder: Any):
        self.folder = make_private_folder("memlens-view-", read.path)
        self._calls = 0
        self._idle = threading.Condition()
        try:
            self.writer = MemoryStore.open(self.folder / "mirror.db", embedder=embedder)
            import_loomflow_sqlite(self.writer, read, actor="loomflow-view")
            self.reader = MemoryStore.open(self.folder / "mirror.db", embedder=embedder, read_only=True)
        except BaseException:
            self.close()
            raise

    def holds_exactly(self, read: LoomflowSource) -> bool:
        """Whether every tenant holds as many records of each tier the source has as the source
        (more: deleted there)."""
        wanted: Counter[tuple[str | None, str]] = Counter((r["user_id"], _SECTION[r["type"]]) for r in read.document["records"])
        held: Counter[tuple[str | None, str]] = Counter()
        for tenant in self.writer.tenants():
            for tier in read.document["manifest"]["counts"]:
                held[(tenant.user_id, tier)] = getattr(tenant.counts, tier)
        return +held == +wanted

    def enter(self) -> None:
        with self._idle:
            self._calls += 1

    def leave(self) -> None:
        with self._idle:
            self._calls -= 1
            self._idle.notify_all()

    def close(self) -> None:
        """Once the calls under way on it have returned: closed, and its folder deleted (it may
        hold what loomflow has since erased)."""
        with self._idle:
            self._idle.wait_for(lambda: self._calls == 0)
        for store in (getattr(self, "reader", None), getattr(self, "writer", None)):
            if store is not None:
                store.close()
        remove_private_folder(self.folder)


class LoomflowView:
    """The read API of :class:`~store.memory.MemoryStore` over a loomflow file (see the module's
    docstring); every other method raises :class:`~store.errors.ReadOnlyStoreError`."""

    read_only = True

    def __init__(self, source: Path | str, embedder: Any, kind: SourceKind):
        self.source, self.kind = source, kind
        # The one write a loomflow file's view offers: forget (and scrub), erasing in place.
        self.erases_in_place = kind.erasable
        self.read_only_reason = kind.read_only_reason
        # What the inspector's title says of search when the view embeds nothing.
        self.search_note = None if embedder is not None else f"keyword search only: {kind.scheme} does not record its vectors' model"
        # SQLite keeps the -wal of a file opened through a symlink beside the file it points to.
        self._real: Any = source if kind.server else Path(os.path.realpath(source))
        self._embedder = embedder
        self._sync_lock = threading.Lock()  # one reading of the source at a time
        self._swap_lock = threading.Lock()  # a call takes the current mirror, or waits for the new one
        self._stamp = kind.stamp(self._real)
        self._mirror = _Mirror(kind.read(source), embedder)
        self._generation = 0

    @property
    def path(self) -> str:
        return f"{self.kind.scheme}:{shown_url(str(self.source)) if self.kind.server else self.source}"

    def __repr__(self) -> str:
        return f"LoomflowView({self.path!r})"

    def data_version(self) -> int:
        """Changes whenever the source did (read again first, if it moved since the last reading)."""
        self.sync()
        return self._generation

    def sync(self) -> bool:
        """Read the source again if it changed since the last reading; True if the view changed."""
        with self._sync_lock:
            stamp = self.kind.stamp(self._real)
            if stamp == self._stamp:
                return False
            try:
                read = self.kind.read(self.source)
            except SourceChangedError:
                return False  # loomflow is writing: the next poll reads it whole
            try:
                import_loomflow_sqlite(self._mirror.writer, read, actor="loomflow-view")
                current = self._mirror.holds_exactly(read)
            except (ImportMismatchError, SourceChangedError):  # a record loomflow changed in place
                current = False
            if not current:
                # Records loomflow deleted or changed: a new mirror from the source; the old one
                # goes (with what loomflow erased) as soon as the calls under way on it return.
                fresh = _Mirror(read, self._embedder)
                with self._swap_lock:
                    old, self._mirror = self._mirror, fresh
                old.close()
            self._stamp = stamp
            self._generation += 1
            return True

    def forget(
        self,
        *,
        user_id: Any = _UNSET,
        session_id: str | None = None,
        before: datetime | None = None,
        dry_run: bool = False,
        actor: str = "api",
        missing_ok: bool = False,
        facts_only: bool = False,
    ) -> ForgetReceipt:
        """Erase a user, or one session of it, from the loomflow file itself, through loomflow's
        own forget, then scrubbed and checked (:mod:`.loomflow_erase`); the view is read again,
        so what was erased leaves its mirror too. Only those two forms: ``before`` and
        ``facts_only`` raise :class:`~store.errors.InvalidInputError`."""
        self._refuse_unless_erasable()
        if user_id is _UNSET:
            raise InvalidInputError("forget needs user_id: name the user to erase, or pass user_id=None for the anonymous bucket")
        if before is not None or facts_only:
            raise InvalidInputError(
                f"{self.path}: in place, a whole user or one session of it is erased (as loomflow's forget does); "
                "to erase by date or facts alone, import the file into a memlens store"
            )
        if user_id is not None and not isinstance(user_id, str):
            raise InvalidInputError(f"user_id must be a string or None, not {type(user_id).__name__}")
        with self._sync_lock:
            own = self._mirror.folder
            receipt = forget_in_place(
                self._real,
                form=self.kind.form,
                user_id=user_id,
                session_id=session_id,
                dry_run=dry_run,
                actor=actor,
                missing_ok=missing_ok,
                own_copy=own,
            )
        if dry_run:
            return receipt
        try:
            self.sync()  # the mirror is built again from the erased file, and the old one deleted
        except MemlensError:
            pass  # the file changed into something the mirror cannot take: said below, as the copy stays
        if own.exists():
            reason = "this view's own copy is replaced at its next reading (the agent is writing to the file)"
            pending = "; ".join(filter(None, [receipt.scrub_pending_reason, reason]))
            receipt = receipt.model_copy(update={"disk_scrubbed": False, "scrub_pending_reason": pending})
        return receipt

    def scrub(self) -> bool:
        """VACUUM the loomflow file and truncate its -wal (refused while another process writes
        it); False if a reader of the agent kept the -wal from being truncated."""
        self._refuse_unless_erasable()
        with self._sync_lock:
            done, _ = scrub_in_place(self._real, self.kind.form)
        return done

    def _refuse_unless_erasable(self) -> None:
        if not self.erases_in_place:
            raise ReadOnlyStoreError(f"{self.path}: {self.read_only_reason}")

    def pending_scrub(self) -> None:
        """None: the file keeps no record of erasures (:meth:`forget`'s receipt says whether it was scrubbed)."""
        return None

    def close(self) -> None:
        with self._sync_lock:
            self._mirror.close()

    def __enter__(self) -> LoomflowView:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        # The store's public methods and properties, read from the mirror current at the call.
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._mirror.reader, name)
        if not callable(value):
            return value
        call = self._calling(lambda reader: getattr(reader, name), name)
        call.__wrapped__ = value  # type: ignore[attr-defined]  # its signature is the store's (inspect.signature)
        return call

    def _calling(self, method_of: Callable[[MemoryStore], Callable[..., Any]], name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._swap_lock:
                mirror = self._mirror
                mirror.enter()
            try:
                return self._read_only(method_of(mirror.reader)(*args, **kwargs))
            except ReadOnlyStoreError as error:
                # A write: the reader's refusal, said again in the source's terms.
                raise ReadOnlyStoreError(
                    f"{self.path} is a loomflow agent's memory, shown read-only ({self.read_only_reason}); "
                    f"import it into a memlens store with `memlens import --from {self.kind.scheme}` to work on a copy",
                    reason=error.reason,
                ) from None
            finally:
                mirror.leave()

        call.__name__ = name
        return call

    def _read_only(self, value: Any) -> Any:
        """A session a method returned, its writes refused as the view's are."""
        return _Session(value, self) if isinstance(value, SessionMemory) else value


class _Session:
    """A session of the view: its reads, and its writes refused in the source's terms."""

    def __init__(self, inner: SessionMemory, view: LoomflowView):
        self._inner, self._view = inner, view

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._inner, name)
        if not callable(value):
            return value
        inner = self._inner
        return self._view._calling(lambda _reader: getattr(inner, name), name)
