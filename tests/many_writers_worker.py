"""One agent process for tests/test_many_writers.py: waits for the start file, then writes
episodes, facts and session keys as fast as it can, retrying only what memlens says to retry
(StoreBusyError). Prints a JSON line: how many writes, how many retries, the first error.

Usage: python -m tests.many_writers_worker STORE NAME COUNT START_FILE TENANT"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import StoreBusyError


def main(store: str, name: str, count: int, start: Path, tenant: str) -> dict:
    retries = 0

    def attempt(write):
        nonlocal retries
        while True:
            try:
                return write()
            except StoreBusyError:
                retries += 1  # what the error tells an agent to do
                time.sleep(0.01)

    with MemoryStore.open(store, embedder=FakeEmbedder()) as s:
        shared = s.session("shared", user_id=tenant)
        while not start.exists():
            time.sleep(0.005)
        for i in range(count):
            attempt(lambda: s.remember(f"{name} says {i}", "ok", user_id=tenant, id=f"{name}-{i}", session_id=name))
            # Every process supersedes the same subject and predicate: exactly one may stay open.
            attempt(lambda: s.add_fact("team", "status", f"{name} at {i}", user_id=tenant))
            attempt(lambda: shared.set(f"{name}-{i}", i))
    return {"writes": 3 * count, "retries": retries}


if __name__ == "__main__":
    try:
        result = main(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5])
    except BaseException as error:  # reported to the test, which fails on any of them
        result = {"error": f"{type(error).__module__}.{type(error).__name__}: {error}"}
    print(json.dumps(result), flush=True)
