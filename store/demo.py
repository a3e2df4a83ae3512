"""Demo stores: three users and the anonymous bucket, every tier filled.

``size="full"`` (what `memlens demo` builds) has a few hundred episodes per user over weeks;
``size="compact"`` (37 episodes) is what the inspector's tests and snapshot baselines are built
on. Both are deterministic for a given ``now``, so screenshots and snapshot tests are stable.
Either engine takes one: a file (replaced when it is a demo store) or a server database that
holds no memlens store yet (memlens never empties a server database to make room).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, exists, func, insert, or_, type_coerce, update

from .backend import open_backend
from .backend.sqlite.database import SQLITE_HEADER, index_folder, sqlite_uri, wal_is_absent
from .demo_data import compact, full
from .demo_vectors import ReusedVectors
from .errors import InvalidInputError, OutputExistsError, OutputPathError, StoreNotFoundError
from .locations import foreign_scheme, is_server_url, shown_url
from .memory import MemoryStore
from .recall import indexing
from .schema import Base, UtcMicros, checkpoints_t, episodes_t, kv_t, meta_t, scratch_t, sessions_t, task_t, tenants_t, to_micros
from .tenancy import all_tenants
from .validation import utcnow

DEMO_NOW = datetime(2026, 11, 20, 17, 30, tzinfo=UTC)
DEMO_MARK = "demo_store"  # a memlens_meta key: only files carrying it are replaced without force


def is_demo_store(path: str | Path) -> bool:
    """Whether ``path`` is a store :func:`build_demo_store` made; reads it without changing or
    creating a file."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                return False
        conn = sqlite3.connect(sqlite_uri(path, read_only=True, immutable=wal_is_absent(path)), uri=True)
    except (OSError, sqlite3.Error):
        return False
    try:
        return conn.execute("SELECT 1 FROM memlens_meta WHERE key = ?", (DEMO_MARK,)).fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def check_demo_target(location: str | Path, *, force: bool = False) -> None:
    """Raise unless a demo store may be built at ``location``: a file path with nothing there, a
    demo store, or ``force``; a server database that holds no memlens store."""
    if foreign_scheme(location):
        raise InvalidInputError(
            f"a demo store is memlens's own: name a file or a postgresql:// URL, not {foreign_scheme(location)}: memory"
        )
    if is_server_url(location):
        shown = shown_url(str(location))
        if force:
            raise InvalidInputError(
                f"force replaces a file; memlens never empties a server database ({shown}): name one that holds no memlens store"
            )
        if _holds_a_store(str(location)):
            raise OutputExistsError(
                f"{shown} already holds a memlens store; a demo is built only in a database that holds none (nothing was changed)"
            )
        return
    path = Path(location)
    if os.path.lexists(path):
        if path.is_dir():
            raise OutputPathError(f"{path} is a directory; name a file for the demo store")
        if not force and not is_demo_store(path):
            raise OutputExistsError(f"{path} exists and is not a memlens demo store; nothing was changed (--force replaces it)")


def _holds_a_store(url: str) -> bool:
    try:
        backend = open_backend(url, read_only=True, create=False)
    except StoreNotFoundError:
        return False
    backend.close()
    return True


DEMO_SIZES = {"full": full.fill, "compact": compact.fill}


def date_the_build_at(location: str | Path, started: datetime, now: datetime) -> None:
    """Move every time the build stamped from the clock since ``started`` (a tenant's last
    activity, a session's update, a checkpoint, a fact's recording) back, as if the build had
    ended at the demo's ``now``: its content is dated relative to ``now``, and without this a
    tenant read as active days after its last episode. Times the content gives (an episode's
    occurrence, a fact's validity) come before ``started`` and stay. A key's expiry stays on the
    real clock: moved back, the demo's keys with a time to live would have expired before
    anyone looked (and the first open would delete them)."""
    shift, since = to_micros(utcnow()) - to_micros(now), to_micros(started)
    backend = open_backend(location, read_only=False, create=False)
    try:
        with backend.write() as conn:
            # A session starts with its first episode, which the story dates weeks back (the build
            # created them all at once): else the timeline opened on a wall of sessions "started"
            # at the build, and a moment weeks back showed their episodes but not the sessions.
            # And one the build last touched by writing its episodes was last updated by its newest
            # episode, not at the build's second (55 sessions read as updated in one second);
            # sessions whose working state the story dates keep those times. Both dates come before
            # ``started``, so the shift below leaves them.
            s, e = sessions_t, episodes_t
            for tenant in all_tenants(conn, tenants_t):
                first = tenant.select(e, func.min(e.c.occurred_at)).where(e.c.session_id == s.c.session_id).scalar_subquery()
                last = tenant.select(e, func.max(e.c.occurred_at)).where(e.c.session_id == s.c.session_id).scalar_subquery()
                conn.execute(tenant.update(s).where(first.is_not(None), first < s.c.created_at).values(created_at=first))
                stamped = type_coerce(s.c.updated_at, BigInteger) >= since
                conn.execute(tenant.update(s).where(stamped, last.is_not(None), ~_has_working_state(s)).values(updated_at=last))
            for table in Base.metadata.sorted_tables if shift > 0 else ():
                for column in table.columns:
                    if isinstance(column.type, UtcMicros) and column.name != "expires_at":
                        conn.execute(
                            update(table)
                            .where(type_coerce(column, BigInteger) >= since)
                            .values({column.name: type_coerce(column, BigInteger) - shift})
                        )
    finally:
        backend.close()


def _has_working_state(s: Any) -> Any:
    """The session holds keys, a task state, scratchpad notes or checkpoints: the build wrote it last."""
    tables = (kv_t, task_t, scratch_t, checkpoints_t)
    return or_(*(exists().where(t.c.session_pk == s.c.pk) for t in tables))


def build_demo_store(
    path: str | Path,
    *,
    size: str = "full",
    now: datetime = DEMO_NOW,
    force: bool = False,
    vector_cache: str | Path | None = None,
    **open_options: Any,
) -> MemoryStore:
    """Create a fresh demo store of ``size`` ("full" or "compact") at ``path`` (a file path or a
    server database's URL) and return it open. A demo store already in the file is replaced; any
    other file only with ``force=True`` (else OutputExistsError, nothing changed). A server
    database must hold no memlens store (OutputExistsError otherwise; ``force`` is refused there).
    With ``vector_cache`` (a folder), the texts' vectors are kept there and the next build with
    the same model embeds only texts it has not seen (`memlens demo` uses ``demo/`` in memlens's
    cache folder)."""
    if size not in DEMO_SIZES:
        raise InvalidInputError(f"size must be one of {', '.join(DEMO_SIZES)}, not {size!r}")
    path = str(path) if is_server_url(path) else Path(path)
    check_demo_target(path, force=force)
    if isinstance(path, Path):
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(index_folder(path), ignore_errors=True)  # saved vector indexes of the store replaced
        # The mark goes in first, through the backend the store itself opens files with, so a
        # build cut short still leaves a file `memlens demo` may replace without --force.
        _mark(path, now, create=True)
    embedder = open_options.pop("embedder", "default")
    started = utcnow()
    if vector_cache is None or embedder is None:
        store = _open_to_fill(path, now, embedder=embedder, **open_options)
        DEMO_SIZES[size](store, now)
        date_the_build_at(path, started, now)
        return store
    model = indexing.make_embedder(embedder)
    assert model is not None  # embedder=None took the branch above
    reused = ReusedVectors(model, vector_cache)
    store = _open_to_fill(path, now, embedder=reused, **open_options)
    try:
        DEMO_SIZES[size](store, now)
    finally:
        store.close()
    date_the_build_at(path, started, now)
    try:
        reused.save()
    except OSError:
        pass  # a cache that cannot be written costs the next build time, not this one its store
    # Reopened on the model itself: what the caller searches with must not grow the cache.
    return MemoryStore.open(path, embedder=model, **open_options)


def _open_to_fill(location: str | Path, now: datetime, **options: Any) -> MemoryStore:
    """The new store the build fills. A server store is made by this open (its vector column
    takes the embedder's width then), so its mark goes in here; a file was marked before."""
    store = MemoryStore.open(location, **options)
    if not isinstance(location, Path):
        try:
            _mark(location, now, create=False)
        except BaseException:
            store.close()
            raise
    return store


def _mark(location: str | Path, now: datetime, *, create: bool) -> None:
    backend = open_backend(location, read_only=False, create=create)
    try:
        with backend.write() as conn:
            conn.execute(insert(meta_t).values(key=DEMO_MARK, value=now.isoformat()))
    finally:
        backend.close()
