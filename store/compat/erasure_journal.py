"""An in-place erasure under way, noted where memlens keeps its state, so that one cut short
between the library's delete and memlens's scrub (a SIGKILL, a power cut, a closed terminal)
is finished, not forgotten.

The delete is the other library's and commits at once; the scrub that follows (``VACUUM`` and a
``TRUNCATE`` checkpoint) is what takes the erased rows' old page images out of the file and its
``-wal``. Cut short in between, the rows are gone from every read but their bytes may still be
on disk, and a second ``forget`` of the same user would find nobody to erase. So before the
delete a note is written naming the file (its path only: no user, no content) and the process
doing it; it is removed once the scrub is done. A note whose process is gone is finished by the
next in-place forget or scrub of that file, and by the next ``memlens`` command of any kind
(:func:`finish_interrupted`): the file scrubbed, then the note removed.

The notes are kept in ``$MEMLENS_STATE_DIR``, else ``$XDG_STATE_HOME/memlens``, else
``~/.local/state/memlens`` (a folder that survives a reboot, where a temporary one may not),
in ``in-place-erasures/``, owner-only.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .private_copies import process_alive, process_start_time

__all__ = ["Interrupted", "begin", "end", "finish_interrupted", "interrupted", "notes_folder", "under_way_elsewhere"]


@dataclass(frozen=True)
class Interrupted:
    """An in-place erasure whose process is gone before its scrub: the file and its format."""

    source: Path
    scheme: str
    note: Path


def notes_folder() -> Path:
    root = os.environ.get("MEMLENS_STATE_DIR")
    if not root:
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        root = os.path.join(state, "memlens")
    return Path(root) / "in-place-erasures"


def _note_of(source: Path) -> Path:
    return notes_folder() / f"{hashlib.sha256(str(source).encode()).hexdigest()}.json"


def begin(source: Path, scheme: str) -> None:
    """Note that this process is about to delete from ``source`` (a resolved path) in place.
    Raises OSError when the note cannot be written: then nothing must be deleted."""
    folder = notes_folder()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    note = {"source": str(source), "scheme": scheme, "pid": os.getpid(), "started": process_start_time(os.getpid())}
    note["at"] = datetime.now(UTC).isoformat()
    partial = folder / f".{uuid.uuid4().hex}.partial"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(note, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, _note_of(source))


def end(source: Path) -> None:
    """The erasure of ``source`` is scrubbed: its note goes."""
    try:
        _note_of(source).unlink()
    except FileNotFoundError:
        pass


def _read(note: Path) -> tuple[Interrupted, int, str | None] | None:
    """A note's erasure and the process (pid, start time) that wrote it; None if unreadable."""
    try:
        held = json.loads(note.read_text())
        pid, started = int(held["pid"]), held.get("started")
        return Interrupted(Path(held["source"]), str(held["scheme"]), note), pid, started
    except (OSError, ValueError, KeyError, TypeError):
        return None


def interrupted(source: Path | None = None) -> list[Interrupted]:
    """The notes whose process is gone (of ``source`` only, if given); a note another live
    process holds is an erasure under way, not one cut short."""
    if source is not None:
        notes = [_note_of(source)]
    else:
        folder = notes_folder()
        try:
            notes = [folder / name for name in sorted(os.listdir(folder)) if name.endswith(".json")]
        except OSError:
            return []
    found = []
    for note in notes:
        read = _read(note)
        if read is not None and (source is None or read[0].source == source) and not process_alive(read[1], read[2]):
            found.append(read[0])
    return found


def under_way_elsewhere(source: Path) -> bool:
    """Another live process is erasing from ``source`` in place right now."""
    read = _read(_note_of(source))
    return read is not None and read[1] != os.getpid() and process_alive(read[1], read[2])


def finish_interrupted(scrub: Callable[[Interrupted], tuple[bool, str | None]]) -> list[tuple[Interrupted, bool, str | None]]:
    """Scrub every file whose in-place erasure was cut short; a note goes once its file is
    scrubbed (or no longer exists). Returns (erasure, scrubbed, why not) for each."""
    results: list[tuple[Interrupted, bool, str | None]] = []
    for cut in interrupted():
        if not cut.source.exists():
            cut.note.unlink(missing_ok=True)
            results.append((cut, True, None))
            continue
        scrubbed, reason = scrub(cut)
        if scrubbed:
            cut.note.unlink(missing_ok=True)
        results.append((cut, scrubbed, reason))
    return results
