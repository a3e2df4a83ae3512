"""An FTS5 index's structure record, read: its levels, their segments and the merge in progress.

The record (row 10 of the index's ``_data`` table) is what FTS5 itself consults to choose a
merge, so reading it says exactly which segments a merge takes in and where its output goes,
which the keyword-index rewrite (:mod:`.keyword_rewrite`) needs in order to know that the segments
that held erased terms are gone and that no delete marker of theirs survived (FTS5 drops a
delete marker only in a merge whose output is the index's oldest segment). Layout, as written by
SQLite 3.40's ``fts5StructureWrite``: a 4-byte cookie, then varints: the number of levels, of
segments, the write counter, then per level the number of its segments being merged and of all
its segments, then per segment its id, first page and last page.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

STRUCTURE_ROWID = 10
# Later SQLite versions write a second layout (with per-segment origins and tombstones) that
# begins with these four bytes; it is not read here.
_LAYOUT_2 = b"\xff\x00\x00\x01"


@dataclass(frozen=True)
class Level:
    merging: int  # how many of its first segments are the input of a merge in progress
    segments: tuple[int, ...]  # segment ids, oldest first
    last_pages: tuple[int, ...] = ()  # each segment's last page: a merge's output grows by its steps


@dataclass(frozen=True)
class Merge:
    level: int  # the level its input comes from; its output is the last segment of the next one
    inputs: tuple[int, ...]


@dataclass(frozen=True)
class Structure:
    levels: tuple[Level, ...]

    @property
    def segments(self) -> frozenset[int]:
        return frozenset(s for level in self.levels for s in level.segments)

    def merges(self) -> list[Merge]:
        """The merges in progress (FTS5 resumes the first level holding one; a step that finds
        more segments on a lower level merges those, so two can be under way)."""
        return [Merge(n, level.segments[: level.merging]) for n, level in enumerate(self.levels) if level.merging]

    def in_progress(self, merge: Merge) -> bool:
        if merge.level >= len(self.levels):
            return False
        level = self.levels[merge.level]
        return level.segments[: level.merging] == merge.inputs and level.merging == len(merge.inputs)

    def writes_oldest(self, merge: Merge) -> bool:
        """Whether the merge's output is the index's oldest segment now: alone on the last level.
        FTS5 drops delete markers (and the terms they carry) only from such an output."""
        out = merge.level + 1
        return out == len(self.levels) - 1 and len(self.levels[out].segments) == 1

    def written(self, merge: Merge) -> int:
        """The pages the merge's output holds (its last segment of the next level), which grow
        with every step that goes on with it."""
        out = self.levels[merge.level + 1] if merge.level + 1 < len(self.levels) else None
        return out.last_pages[-1] if out is not None and out.last_pages else 0


# FTS5 keeps at most this many levels (FTS5_MAX_LEVEL).
MAX_LEVELS = 64


def merges_all_into_oldest(before: Structure) -> bool:
    """Whether a negative 'merge' on an index of this structure goes on with a merge of every
    segment whose output is the oldest segment, mirroring SQLite's fts5IndexOptimizeStruct: it
    gathers every segment on a new last level, unless they already share one level (that level
    is then merged into the next, the oldest only if that is the last) or all but one are the
    input of a merge under way (which it resumes: the other is that merge's output). While a
    merge is under way FTS5 starts no other at or above its level and moves no segment there,
    so an output alone on the last level has been the oldest segment at every step."""
    count = len(before.segments)
    if count < 2:
        return False
    for number, level in enumerate(before.levels):
        if len(level.segments) == count:
            return number >= len(before.levels) - 2
        if len(level.segments) == count - 1 and level.merging == len(level.segments):
            return before.writes_oldest(Merge(number, level.segments))
    return len(before.levels) < MAX_LEVELS


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint: big-endian groups of seven bits, the ninth byte whole."""
    value = 0
    for n in range(9):
        byte = data[at + n]
        if n == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + n + 1
    raise AssertionError("unreachable")


def parse(data: bytes) -> Structure | None:
    """The structure record's levels, or None for a layout this module does not read."""
    if data[4:8] == _LAYOUT_2:
        return None
    try:
        levels_count, at = _varint(data, 4)
        _segments_count, at = _varint(data, at)
        _write_counter, at = _varint(data, at)
        levels = []
        for _ in range(levels_count):
            merging, at = _varint(data, at)
            count, at = _varint(data, at)
            ids, lasts = [], []
            for _ in range(count):
                segment, at = _varint(data, at)
                _first, at = _varint(data, at)
                last, at = _varint(data, at)
                ids.append(segment)
                lasts.append(last)
            levels.append(Level(merging, tuple(ids), tuple(lasts)))
    except IndexError:
        return None
    return Structure(tuple(levels))


def read(conn: Connection, table: str) -> Structure | None:
    block = conn.exec_driver_sql(f"SELECT block FROM {table}_data WHERE id = {STRUCTURE_ROWID}").scalar()
    return parse(bytes(block)) if block is not None else None
