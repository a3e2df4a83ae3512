"""The copies memlens makes of another library's memory (a view's mirror, the private copy a
reader opens), and how none of them outlives its owner.

Each copy is a folder of the system's temporary folder, owner-only (0700), holding an
``owner.json`` that names the process that made it (its pid and start time, so a reused pid is
not mistaken for it) and the source it copies. Three things take them away:

- the owner deletes its folder when it is done (and at the interpreter's exit, for any it left
  open: :func:`atexit` runs on a normal exit, an unhandled exception and the signals the
  inspector turns into an exit);
- :func:`sweep_stale` deletes every folder whose owner is gone (killed with SIGKILL, a closed
  terminal, a power cut); every ``memlens`` command runs it as it starts;
- an in-place erasure finds the copies of its source (:func:`copies_of`), deletes those whose
  owner is gone, and byte-scans the rest (:mod:`.loomflow_erase`).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PrivateCopy",
    "copies_of",
    "make_private_folder",
    "process_alive",
    "process_start_time",
    "remove_open_copies",
    "remove_private_folder",
    "sweep_stale",
]

PREFIXES = ("memlens-view-", "memlens-chroma-", "memlens-loomflow-", "memlens-mem0-")
OWNER_FILE = "owner.json"
# A folder without its owner file is a copy whose maker died between making the folder and
# naming itself in it (a few instructions); older than this, nobody is still writing it.
UNNAMED_GRACE_SECONDS = 60.0

_open_folders: set[Path] = set()
_open_lock = threading.Lock()


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), which a reused pid does not share."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command's name


def process_alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process of that number: not ours to judge, keep the folder
    return started is None or process_start_time(pid) in (None, started)


def make_private_folder(prefix: str, source: Path) -> Path:
    """A new owner-only folder for a copy of ``source``, named as this process's."""
    if prefix not in PREFIXES:
        raise ValueError(f"{prefix!r} is not a prefix memlens sweeps")
    folder = Path(tempfile.mkdtemp(prefix=prefix))  # 0700
    owner = {"pid": os.getpid(), "started": process_start_time(os.getpid()), "source": str(os.path.realpath(source))}
    (folder / OWNER_FILE).write_text(json.dumps(owner))
    with _open_lock:
        _open_folders.add(folder)
    return folder


def remove_private_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    with _open_lock:
        _open_folders.discard(folder)


@atexit.register
def remove_open_copies() -> None:
    """Delete every copy this process still has open: at the interpreter's exit, or by a process
    about to end without one (``os._exit``)."""
    with _open_lock:
        folders = list(_open_folders)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class PrivateCopy:
    folder: Path
    pid: int | None
    source: str | None
    owner_alive: bool

    @property
    def mine(self) -> bool:
        return self.pid == os.getpid()

    def files(self) -> list[Path]:
        """The files in the copy now; none if its owner removes it meanwhile (os.walk passes over
        a folder that vanishes under it, where Path.rglob raises)."""
        return [Path(top, name) for top, _dirs, names in os.walk(self.folder) for name in names]


def _all_copies() -> list[PrivateCopy]:
    found = []
    root = Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            owner = json.loads((Path(entry.path) / OWNER_FILE).read_text())
            pid, started, source = int(owner["pid"]), owner.get("started"), str(owner["source"])
        except (OSError, ValueError, KeyError, TypeError):
            try:
                young = time.time() - entry.stat(follow_symlinks=False).st_mtime < UNNAMED_GRACE_SECONDS
            except OSError:
                continue
            found.append(PrivateCopy(Path(entry.path), None, None, young))
            continue
        found.append(PrivateCopy(Path(entry.path), pid, source, process_alive(pid, started)))
    return found


def sweep_stale() -> list[Path]:
    """Delete every copy whose owner is gone; the folders deleted."""
    swept = []
    for copy in _all_copies():
        if not copy.owner_alive:
            shutil.rmtree(copy.folder, ignore_errors=True)
            if not copy.folder.exists():
                swept.append(copy.folder)
    return swept


def copies_of(source: Path) -> list[PrivateCopy]:
    """The copies of ``source`` that exist now, whoever owns them."""
    wanted = os.path.realpath(source)
    return [copy for copy in _all_copies() if copy.source == wanted]
