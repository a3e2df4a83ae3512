"""Writing an export to a file without destroying or leaking anything.

An export never lands on the store it reads (the file, its side files, or any name or link
that leads to them) nor on an existing file unless the caller says ``overwrite``. It is written
to an owner-only (0600) partial file created exclusively beside the target, then renamed into
place, so the target holds a whole export or nothing.

A SIGKILL cannot clean up after itself, so the store keeps the partial's path in
``memlens_meta`` from before the file exists until after the rename. :func:`remove_leftover_exports`
deletes the partials of writers that are gone: every export to a file and every scrub (which
every forget runs) call it. A store opened ``read_only`` cannot record anything; its exports
remove their partial on any error but not after a SIGKILL.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from sqlalchemy import delete, insert, select

from ..backend import Backend
from ..errors import MemlensError, OutputExistsError, OutputPathError
from ..schema import meta_t

PARTIAL_SUFFIX = ".memlens-partial"
RECORD_PREFIX = "export_partial:"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def check_target(target: str | Path, store_files: list[Path], *, overwrite: bool) -> Path:
    """The absolute output path, or a typed error if writing there would destroy something
    (``store_files``: the store's own files, from :meth:`Backend.files`)."""
    given = Path(target)
    path = Path(os.path.abspath(given.expanduser()))
    real = os.path.realpath(path)
    if any(real == os.path.realpath(f) for f in store_files) or _same_file_as_any(path, store_files):
        raise OutputPathError(f"{given} is the store being exported (or one of its side files); nothing was written")
    if os.path.lexists(path):
        if path.is_dir():
            raise OutputPathError(f"{given} is a directory; name a file to write the export to")
        if not overwrite:
            raise OutputExistsError(f"{given} already exists; nothing was written (--force or overwrite=True replaces it)")
    if not path.parent.is_dir():
        raise OutputPathError(f"cannot write {given}: folder {path.parent} does not exist")
    return path


def _same_file_as_any(path: Path, others: list[Path]) -> bool:
    """Hard links and bind mounts reach the same file under another name: compare device and inode."""
    try:
        mine = os.stat(path)
    except OSError:
        return False
    for other in others:
        try:
            theirs = os.stat(other)
        except OSError:
            continue
        if (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino):
            return True
    return False


@contextmanager
def writing(db: Backend, path: Path, *, overwrite: bool) -> Iterator[IO[str]]:
    """A text stream into a recorded 0600 partial beside ``path``, renamed onto ``path`` when
    the block completes; on any error the partial is deleted and ``path`` is left as it was."""
    token = secrets.token_hex(8)
    # The name is kept under 255 bytes, the usual limit of one path component.
    partial = path.with_name(f".{path.name[:180]}.{token}{PARTIAL_SUFFIX}")
    key = RECORD_PREFIX + token
    recorded = False
    created = False
    try:
        if not db.read_only:
            with db.write(inserting=False, whole_store=False) as conn:  # its own record only
                conn.execute(
                    insert(meta_t).values(
                        key=key, value=json.dumps({"path": str(partial), "pid": os.getpid(), "process": _process_identity(os.getpid())})
                    )
                )
            recorded = True
        # Counted as created before the call: a Ctrl-C or SIGTERM raised the moment the file
        # exists, before the next line ran, left the partial behind (a test caught it under load).
        created = True
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        except OSError:
            created = False  # not made, or not ours (O_EXCL): never delete it
            raise
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as sink:
            yield sink
            sink.flush()
            os.fsync(sink.fileno())  # the rename must never publish a file whose data is not on disk
        _publish(partial, path, overwrite=overwrite)
    except OSError as error:
        raise OutputPathError(f"cannot write {path}: {error.strerror or error}; nothing was written") from error
    finally:
        if created:
            partial.unlink(missing_ok=True)
        if recorded:
            _drop_record(db, key)


def _publish(partial: Path, path: Path, *, overwrite: bool) -> None:
    if overwrite:
        os.replace(partial, path)
        return
    try:
        os.link(partial, path)  # unlike a rename, fails if a file appeared at ``path`` meanwhile
    except FileExistsError:
        raise OutputExistsError(f"{path} appeared while exporting; nothing was written (--force or overwrite=True replaces it)") from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if os.path.lexists(path):  # a filesystem without hard links: check, then rename
            raise OutputExistsError(f"{path} appeared while exporting; nothing was written") from None
        os.rename(partial, path)
        return
    partial.unlink()


def _drop_record(db: Backend, key: str) -> None:
    try:
        with db.write(inserting=False, whole_store=False) as conn:  # its own record only
            conn.execute(delete(meta_t).where(meta_t.c.key == key))
    except MemlensError:
        pass  # the partial is gone; a record left behind is cleared by the next cleanup


def remove_leftover_exports(db: Backend) -> int:
    """Delete the partial export files that writers killed mid-export left behind (those
    recorded in this store whose process is gone) and clear their records. Returns how many
    files were deleted. A partial that cannot be deleted keeps its record, so a later call retries."""
    with db.read() as conn:
        rows = conn.execute(select(meta_t.c.key, meta_t.c.value).where(meta_t.c.key.startswith(RECORD_PREFIX, autoescape=True))).all()
    removed = 0
    for key, value in rows:
        try:
            record = json.loads(value)
            path, pid, process = Path(record["path"]), int(record["pid"]), record["process"]
        except (ValueError, TypeError, KeyError):
            path, pid, process = None, 0, None
        if path is not None and process is not None and _process_identity(pid) == process:
            continue  # its writer is still running
        if path is not None and path.name.startswith(".") and path.name.endswith(PARTIAL_SUFFIX):
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                pass
            except OSError:
                continue
        if not db.read_only:
            _drop_record(db, key)
    return removed


def _process_identity(pid: int) -> str | None:
    """Something that tells this process apart from a later one with the same pid (its start
    time, on Linux), or None if no such process is running."""
    if pid <= 0:
        return None
    if os.path.exists("/proc/self/stat"):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            return None
        # fields[0] is the state (field 3 in proc(5)): a zombie has exited. fields[19] is field 22, starttime.
        return None if fields[0] in ("Z", "X") else fields[19]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return ""
