"""Time travel: reading the past against reading the present, and writing with history against
writing without it.

    python bench/time_travel_bench.py                  # 100k episodes, 10k facts, 5 blocks x 1,000 versions
    python bench/time_travel_bench.py --episodes 10000 --facts 2000 --versions 200 --calls 100

1. Reads, in one store, each against the same run's present-time call as its baseline:
   ``facts()`` against ``facts(valid_at=V, known_at=K)`` at random V and K; ``working()``
   against ``working(as_of=t)``; ``snapshot(as_of=t)`` (against ``working()`` + ``facts()`` +
   ``sessions()``, what a caller would otherwise ask for the present).
2. Writes: ``update_block`` and a superseding ``add_fact`` with this tree's history against the
   same calls at a commit from before the history (``--before``, default 619abdb), each in a
   fresh process on a fresh store, rounds interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from recall_bench import table  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.validation import set_clock  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def pct(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


def timed(fn, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def build(path: Path, episodes: int, facts: int, versions: int) -> tuple[datetime, datetime]:
    """The store, written on a moving clock: returns the first and last moments of its history."""
    now = [T0]
    set_clock(lambda: now[0])
    rng = random.Random(3)
    with MemoryStore.open(path, embedder=None, block_versions_kept=versions) as s:
        for start in range(0, episodes, 10_000):
            batch = [
                {"input": f"episode {i} about topic {i % 97}", "occurred_at": T0 + timedelta(minutes=i)}
                for i in range(start, min(episodes, start + 10_000))
            ]
            s.remember_many(batch, user_id="bench")
        chains = max(1, facts // 10)
        for i in range(facts):
            now[0] += timedelta(seconds=30)
            chain = i % chains
            # Mostly forwards; one in ten a correction of the past.
            day = (i // chains) * 10 + (rng.randrange(-15, 0) if rng.random() < 0.1 else 0)
            s.add_fact(f"subject {chain}", "state", f"value {i}", user_id="bench", valid_from=T0 + timedelta(days=day))
        for v in range(versions):
            for name in ("persona", "human", "goals", "notes", "plan"):
                now[0] += timedelta(seconds=5)
                s.update_block(name, f"{name} version {v} " + "text " * 40, user_id="bench")
        memory = s.session("s1", user_id="bench")
        for k in range(50):
            now[0] += timedelta(seconds=5)
            memory.set(f"key {k % 10}", k)
            if k % 10 == 0:
                memory.create_checkpoint(f"at {k}")
        last = now[0]
    set_clock(None)
    return T0, last


WRITES = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from datetime import UTC, datetime, timedelta
from store import MemoryStore
calls = int(sys.argv[3])
with MemoryStore.open(sys.argv[2], embedder=None) as s:
    s.update_block("persona", "warm up", user_id="w"); s.add_fact("w", "p", "warm", user_id="w")
    blocks, facts = [], []
    for i in range(calls):
        t = time.perf_counter(); s.update_block("persona", f"version {i} " + "text " * 40, user_id="w"); blocks.append(time.perf_counter() - t)
        t = time.perf_counter(); s.add_fact("w", "p", f"value {i}", user_id="w"); facts.append(time.perf_counter() - t)
print(json.dumps({"update_block": blocks, "add_fact": facts}))
"""


def writes(before: str, calls: int, rounds: int, work: Path) -> list[list[str]]:
    tree = work / "before"
    # A clone in the temporary folder (sharing this checkout's objects, writing nothing into it),
    # not a worktree: that wrote into this checkout's .git, so a read-only tree could not run it.
    if not (ROOT / ".git").exists():
        raise SystemExit(f"the write comparison needs a git checkout of memlens (for its baseline commit {before}); {ROOT} is not one")
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--detach", before], check=True)
    results: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for label, code_root in random.sample([("before", tree), ("now", ROOT)], 2):
            db = work / f"w-{label}-{r}.db"
            out = subprocess.run(
                [sys.executable, "-c", WRITES, str(code_root), str(db), str(calls)], capture_output=True, text=True, check=True
            )
            for call, times in json.loads(out.stdout).items():
                results.setdefault((call, label), []).extend(times)
    rows = []
    for call in ("update_block", "add_fact"):
        base, now = results[(call, "before")], results[(call, "now")]
        ratio = pct(now, 50) / pct(base, 50)
        rows.append([f"{call}, before the history ({before}, the baseline)", ms(pct(base, 50)), ms(pct(base, 95)), "1.00x", "-", "-"])
        rows.append(
            [
                f"{call}, with the history",
                ms(pct(now, 50)),
                ms(pct(now, 95)),
                f"{ratio:.2f}x",
                "<= 1.2x",
                "met" if ratio <= 1.2 else "MISSED",
            ]
        )
    return rows


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=1_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--before", default="619abdb")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("# time travel\n")
    print(
        f"machine: {os.cpu_count()} cores, load before {os.getloadavg()[0]:.1f}; {args.episodes:,} episodes, {args.facts:,} facts, 5 blocks x {args.versions:,} versions"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        first, last = build(work / "t.db", args.episodes, args.facts, args.versions)
        print(f"built in {time.perf_counter() - start:.0f} s", flush=True)
        rng = random.Random(9)
        span = (last - first).total_seconds()

        def moment() -> datetime:
            return first + timedelta(seconds=rng.uniform(0, span))

        with MemoryStore.open(work / "t.db", embedder=None, read_only=True) as s:
            pairs = [
                ("facts() (the baseline)", lambda: s.facts(user_id="bench"), None, None),
                ("facts(valid_at=V, known_at=K)", lambda: s.facts(user_id="bench", valid_at=moment(), known_at=moment()), "facts", 20),
                ("working() (the baseline)", lambda: s.working(user_id="bench"), None, None),
                ("working(as_of=t)", lambda: s.working(user_id="bench", as_of=moment()), "working", None),
                (
                    "working() + facts() + sessions() (the baseline)",
                    lambda: (s.working(user_id="bench"), s.facts(user_id="bench"), s.sessions(user_id="bench")),
                    None,
                    None,
                ),
                ("snapshot(as_of=t)", lambda: s.snapshot(user_id="bench", as_of=moment()), "snapshot", 100),
            ]
            rows, baseline = [], 0.0
            for label, fn, _, target in pairs:
                fn()
                times = timed(fn, args.calls)
                if "baseline" in label:
                    baseline = pct(times, 50)
                p95 = pct(times, 95) * 1000
                met = "-" if target is None else ("met" if p95 <= target else f"MISSED ({p95 / target:.2f}x)")
                rows.append(
                    [
                        label,
                        ms(pct(times, 50)),
                        ms(pct(times, 95)),
                        f"{pct(times, 50) / baseline:.2f}x",
                        "-" if target is None else f"p95 <= {target} ms",
                        met,
                    ]
                )
        table(
            f"Reads, {args.calls} calls each (ratio: p50 against the baseline above it)",
            ["call", "p50", "p95", "ratio", "target", "met"],
            rows,
        )
        table(
            f"Writes, {args.calls} calls x {args.rounds} rounds each, fresh process and store per round (ratio: p50 against before the history)",
            ["call", "p50", "p95", "ratio", "target", "met"],
            writes(args.before, args.calls, args.rounds, work),
        )
    print(f"\nload after the run {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
