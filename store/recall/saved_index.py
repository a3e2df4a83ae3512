"""Approximate indexes saved beside the store, so that a new process maps one instead of building it.

Building the graph of a 100k-row tenant costs 12-13 s of a core in every process that opens it;
mapping a saved one costs its digest check (about 0.1 s at 100k). What is saved, per tenant and
kind of vector, in the store's index folder (``<store file>-vectors/``, owner-only):

- ``<tenant>.<kind>.<digest>.usearch``: the graph (int8 copies of the vectors, keyed by row
  position in the tenant's matrix, whose rows are ordered by key);
- ``<tenant>.<kind>.<digest>.f32``: the float32 rows the graph covers, in the same order: a process
  that maps the graph reads the rows it re-ranks from here, a row at a time, and never reads the
  saved rows into memory (see :mod:`store.recall.split_rows`);
- ``<tenant>.<kind>.json``: which graph and rows files are current, their sizes and digests, how many rows it
  covers and a digest of those rows' keys and row versions, and the newest erasure the store had
  recorded when its matrix was loaded. It is replaced atomically, so a reader sees one graph
  and the description of that graph, or none.

``<tenant>`` is a hash of the tenant key: file names say nothing about whom they hold.

A saved graph is used only if every check passes: the description parses and names this shape,
the graph and rows files have their recorded sizes and digests (a mapped file that is not what it claims could
crash the process; a hostile or damaged one is ignored), the matrix's first rows are the rows it
covers, and no erasure of the tenant was recorded after the one it names. Otherwise the store
builds a new one, as without a saved graph. Even a wrong graph could not return a wrong or erased
row: candidates are row positions in the matrix just loaded from the store, re-scored from it.

Erasure: every forget of a tenant deletes its files (graph, rows and description), after the erasure commits (and again when
the scrub runs, which also rolls a crashed erasure forward). A process that saves re-checks after
its save that no erasure of the tenant was recorded since its matrix was loaded, and deletes what
it saved if one was: whichever of the erasure and the save comes last, no erased vector is left in
a file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from .approximate import ApproximateIndex
from .split_rows import RowsFile

# 2: the float32 rows are saved beside the graph; 3: files are digested with SHA-256 (blake2b was
# half its speed on CPUs with SHA instructions, and a new process hashes 200 MB at 100k rows before
# its first search). An older save is rebuilt once.
FORMAT = 3
# Digests of graph files are computed in blocks, so a 55 MB file never needs a 55 MB buffer.
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Coverage:
    """The rows a saved graph covers: how many, and a digest of their keys and row versions."""

    rows: int
    rows_digest: str

    @classmethod
    def of(cls, pks: np.ndarray, versions: np.ndarray) -> Coverage:
        digest = hashlib.blake2b(np.ascontiguousarray(pks, dtype=np.int64).tobytes(), digest_size=16)
        digest.update(np.ascontiguousarray(versions, dtype=np.int64).tobytes())
        return cls(len(pks), digest.hexdigest())


def tenant_stem(tenant_key: str) -> str:
    return hashlib.sha256(tenant_key.encode()).hexdigest()[:32]


def file_digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return _digest_of(handle)


def _digest_of(handle: BinaryIO) -> str:
    digest = hashlib.sha256()
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    at = 0
    while block := os.preadv(handle.fileno(), [buffer], at):
        digest.update(view[:block])
        at += block
    return digest.hexdigest()


def _files_check_out(graph_path: Path, described: dict[str, Any], rows: RowsFile | None) -> bool:
    """Whether the graph file, and the rows file if opened, have their recorded sizes and digests
    (a mapped file that is not what it claims could crash the process). The rows are hashed
    through the handle they will be read from."""
    try:
        if graph_path.stat().st_size != described["graph_bytes"] or file_digest(graph_path) != described["graph_digest"]:
            return False
        return rows is None or _digest_of(rows.handle) == described["rows_file_digest"]
    except OSError:  # replaced by a newer save meanwhile, or unreadable: build instead
        return False


class _Refused(Exception):
    """A saved index that does not check out: the caller builds instead."""


class Saved(NamedTuple):
    """A saved index that checked out: its graph, the erasure mark it was saved with, and (when
    asked for) its float32 rows, read from their open file on demand."""

    approximate: ApproximateIndex
    erasure_mark: int
    rows: RowsFile | None = None


class SavedIndexes:
    """The index folder of one store. ``writable`` False (a read-only open) maps saved graphs but
    never writes the folder."""

    def __init__(self, folder: Path, *, writable: bool) -> None:
        self.folder = folder
        self.writable = writable

    def _description(self, tenant_key: str, kind: str) -> Path:
        return self.folder / f"{tenant_stem(tenant_key)}.{kind}.json"

    def open(self, tenant_key: str, kind: str, dim: int, coverage_of: Any, *, with_rows: bool = False) -> Saved | None:
        """The tenant's saved graph, mapped, and the erasure mark it was saved with, if every check
        passes; with ``with_rows``, its float32 rows too (read from their file, not mapped). ``coverage_of(rows)`` gives the
        :class:`Coverage` of the matrix's first ``rows`` rows, or None when the matrix has fewer.

        The files' digests are computed on another thread while ``coverage_of`` reads the store's
        keys: hashing gives up the GIL, and at 100k rows each takes about a tenth of a second of a
        new process's first search."""
        described = self._read_description(tenant_key, kind, dim)
        if described is None:
            return None
        graph_path = self.folder / described["graph"]
        rows = self._open_rows(described, dim) if with_rows else None
        if with_rows and rows is None:
            return None
        try:
            # One thread: a second one hashing beside it and the key read was slower on two cores.
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlens-digest") as pool:
                checked = pool.submit(_files_check_out, graph_path, described, rows)
                covered = coverage_of(described["rows"]) == Coverage(described["rows"], described["rows_digest"])
                if not (checked.result() and covered):
                    raise _Refused
            try:
                index = ApproximateIndex.opened(str(graph_path), dim)
            except (ValueError, RuntimeError, OSError):
                raise _Refused from None
            if index.covered != described["rows"]:
                raise _Refused
        except BaseException as error:
            if rows is not None:
                rows.handle.close()
            if isinstance(error, _Refused):
                return None
            raise
        return Saved(index, described["erasure_mark"], rows)

    def _open_rows(self, described: dict[str, Any], dim: int) -> RowsFile | None:
        """The saved rows' file, if it has the size described (:meth:`open` checks its digest). It is
        opened once, and checked and read through that one handle, so a file swapped in after the
        check is never the one read."""
        try:
            handle = open(self.folder / described["rows_file"], "rb")  # noqa: SIM115 (kept open: the rows are read from it)
        except OSError:
            return None
        try:
            size = os.fstat(handle.fileno()).st_size
        except OSError:
            handle.close()
            return None
        if size != described["rows"] * dim * 4 or size != described["rows_file_bytes"]:
            handle.close()
            return None
        return RowsFile(handle, described["rows"], dim)

    def _read_description(self, tenant_key: str, kind: str, dim: int) -> dict[str, Any] | None:
        try:
            raw = self._description(tenant_key, kind).read_bytes()
        except OSError:
            return None
        if len(raw) > 4096:
            return None
        try:
            described = json.loads(raw)
        except ValueError:
            return None
        expected = {"format": int, "dim": int, "kind": str, "graph": str, "graph_bytes": int, "graph_digest": str}
        expected |= {
            "rows": int,
            "rows_digest": str,
            "erasure_mark": int,
            "rows_file": str,
            "rows_file_bytes": int,
            "rows_file_digest": str,
        }
        if not isinstance(described, dict) or any(type(described.get(k)) is not t for k, t in expected.items()):
            return None
        stem = f"{tenant_stem(tenant_key)}.{kind}."
        # Only files of this tenant and kind, in this folder: never a path elsewhere.
        for name, suffix in ((described["graph"], ".usearch"), (described["rows_file"], ".f32")):
            if not (name.startswith(stem) and name.endswith(suffix) and "/" not in name and "\\" not in name):
                return None
        if described["format"] != FORMAT or described["dim"] != dim or described["kind"] != kind or described["rows"] <= 0:
            return None
        return described

    def save(
        self,
        tenant_key: str,
        kind: str,
        index: ApproximateIndex,
        coverage: Coverage,
        erasure_mark: int,
        write_rows: Callable[[BinaryIO], None],
    ) -> None:
        """Save ``index`` (covering ``coverage``) as the tenant's current graph, with the rows it
        covers (``write_rows(file)`` writes them as raw float32), then delete the files they
        replace. Raises OSError when the folder cannot be written."""
        if not self.writable:
            return
        self.folder.mkdir(mode=0o700, exist_ok=True)
        stem = f"{tenant_stem(tenant_key)}.{kind}"
        graph, graph_bytes, graph_digest = self._place(stem, ".usearch", lambda path: index.save(str(path)))

        def rows_to(path: Path) -> None:
            with open(path, "wb") as out:
                write_rows(out)

        rows, rows_bytes, rows_digest = self._place(stem, ".f32", rows_to)
        if rows_bytes != coverage.rows * index.dim * 4:
            raise OSError(f"wrote {rows_bytes} bytes of rows for {coverage.rows} rows")
        described = {
            "format": FORMAT,
            "dim": index.dim,
            "kind": kind,
            "graph": graph.name,
            "graph_bytes": graph_bytes,
            "graph_digest": graph_digest,
            "rows_file": rows.name,
            "rows_file_bytes": rows_bytes,
            "rows_file_digest": rows_digest,
            "rows": coverage.rows,
            "rows_digest": coverage.rows_digest,
            "erasure_mark": erasure_mark,
        }
        note = self.folder / f".{stem}.{uuid.uuid4().hex}.json.partial"
        note.write_text(json.dumps(described))
        os.chmod(note, 0o600)
        os.replace(note, self._description(tenant_key, kind))
        for older in [*self.folder.glob(f"{stem}.*.usearch"), *self.folder.glob(f"{stem}.*.f32")]:
            if older not in (graph, rows):
                with contextlib.suppress(FileNotFoundError):
                    older.unlink()  # a process that mapped it keeps its mapping until it lets go

    def _place(self, stem: str, suffix: str, write: Callable[[Path], None]) -> tuple[Path, int, str]:
        """Write a file through a partial name, owner-only (copies of a tenant's vectors, as the
        store file is), and move it to the name its digest gives; its path, size and digest."""
        partial = self.folder / f".{stem}.{uuid.uuid4().hex}.partial"
        try:
            write(partial)
            os.chmod(partial, 0o600)
            digest = file_digest(partial)
            placed = self.folder / f"{stem}.{digest}{suffix}"
            size = partial.stat().st_size
            os.replace(partial, placed)
        finally:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
        return placed, size, digest

    def erase(self, tenant_key: str) -> None:
        """Delete every saved file of the tenant (every kind), and any partial save."""
        if not self.folder.is_dir():
            return
        stem = tenant_stem(tenant_key)
        for path in [*self.folder.glob(f"{stem}.*"), *self.folder.glob(f".{stem}.*")]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
