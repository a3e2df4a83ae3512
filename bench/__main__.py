"""Run the benchmarks of docs/benchmarks.md, in order, each under a header that says how it ran.

    python -m bench all                      # every benchmark at its documented size (hours)
    python -m bench all --quick              # every one at a small size: minutes, to see they run
    python -m bench all --only opening,ann   # some of them
    python -m bench list                     # what would run, with its command and rough time

Each benchmark's output is written to ``OUT/<name>.md`` (default ``bench/results/<UTC time>/``)
under a header naming its command, the date, the commit (with ``+changes`` when the tree differs
from it), the load before and after and how long it took; ``OUT/index.md`` lists every one with
its outcome. The tables of docs/benchmarks.md are taken from two such runs. A benchmark that
fails is reported and the others still run; the command exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from .suite import BENCHMARKS, BY_NAME, Benchmark

ROOT = Path(__file__).resolve().parent.parent


def commit() -> str:
    """The checkout's commit, ``+changes`` when its tracked files differ from it; or why there is none."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    return head.stdout.strip() + (" +changes" if dirty.stdout.strip() else "")


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def chosen(names: str | None) -> list[Benchmark]:
    if not names:
        return list(BENCHMARKS)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"no benchmark named {', '.join(unknown)}; `python -m bench list` names them")
    return [b for b in BENCHMARKS if b.name in wanted]


def why_not(benchmark: Benchmark) -> str | None:
    if benchmark.postgres and importlib.util.find_spec("pgserver") is None:
        return "needs the embedded PostgreSQL: pip install -e '.[test]'"
    if benchmark.pg_vectors:
        return pg_vector_ops_failure()
    if benchmark.public_data:
        from .public_data import missing_sources

        missing = missing_sources()
        if missing:
            return "needs clones of " + ", ".join(missing) + " (bench/public_data.py says where)"
    return None


@functools.cache  # probed once a run: it starts and stops a server
def pg_vector_ops_failure() -> str | None:
    """Why the embedded PostgreSQL's pgvector cannot rank vectors on this machine, or None: its
    prebuilt binary dies with SIGILL on CPUs without the instructions it was built for, and every
    benchmark of PostgreSQL's vector search would fail on the first query."""
    sys.path.insert(0, str(ROOT))
    from tests import pg_support

    server, handle = pg_support.start()
    try:
        return server.vector_ops_unavailable
    finally:
        pg_support.stop(server, handle)


def run(benchmark: Benchmark, quick: bool, out: Path, revision: str) -> tuple[str, float]:
    """Run one benchmark, its output shown as it comes and written under its header; returns its outcome and seconds."""
    arguments = benchmark.quick if quick else benchmark.arguments
    command = benchmark.command(quick)
    before, started, at = load(), time.monotonic(), datetime.now(UTC)
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / benchmark.script), *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    seconds = time.monotonic() - started
    outcome = "ran" if process.returncode == 0 else f"FAILED (exit {process.returncode})"
    header = (
        f"`{command}`, {at:%Y-%m-%d %H:%M} UTC, commit {revision}, load {before} before and {load()} after, "
        f"{seconds / 60:.1f} min: {outcome}"
    )
    (out / f"{benchmark.name}.md").write_text(f"# {benchmark.name} (`bench/{benchmark.script}`)\n\n{header}\n\n{''.join(lines)}")
    return outcome, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["all", "list"])
    parser.add_argument("--quick", action="store_true", help="each at a small size, to see that it runs (figures mean little)")
    parser.add_argument("--only", help="comma-separated names (see `list`)")
    parser.add_argument("--out", type=Path, help="where the results go (default bench/results/<UTC time>/)")
    args = parser.parse_args(argv)
    benchmarks = chosen(args.only)
    if args.what == "list":
        for b in benchmarks:
            print(f"{b.name:18} ~{b.minutes:>4g} min  {b.command()}{'  (PostgreSQL)' if b.postgres else ''}")
        return 0
    out = args.out or ROOT / "bench" / "results" / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    revision = commit()
    total = sum(b.minutes for b in benchmarks)
    size = "small sizes (a few minutes)" if args.quick else f"documented sizes, about {total:g} min on two cores"
    print(f"running {len(benchmarks)} benchmarks at {size}, commit {revision}; results in {out}", flush=True)
    outcomes: list[tuple[Benchmark, str, float]] = []
    for benchmark in benchmarks:
        reason = why_not(benchmark)
        if reason is not None:
            print(f"\n== {benchmark.name}: skipped, {reason}", flush=True)
            outcomes.append((benchmark, f"skipped: {reason}", 0.0))
            continue
        guess = "" if args.quick else f" (about {benchmark.minutes:g} min)"
        print(f"\n== {benchmark.name}{guess}", flush=True)
        outcome, seconds = run(benchmark, args.quick, out, revision)
        outcomes.append((benchmark, outcome, seconds))
    rows = "\n".join(
        f"| {b.name if outcome.startswith('skipped') else f'[{b.name}]({b.name}.md)'} | `bench/{b.script}` | {outcome} "
        f"| {seconds / 60:.1f} min |"
        for b, outcome, seconds in outcomes
    )
    (out / "index.md").write_text(
        f"# Benchmark run, commit {revision}{' (quick sizes)' if args.quick else ''}\n\n"
        f"| benchmark | script | outcome | time |\n|---|---|---|---|\n{rows}\n"
    )
    failed = [b.name for b, outcome, _ in outcomes if outcome.startswith("FAILED")]
    print(
        f"\n{len(outcomes) - len(failed)} of {len(outcomes)} ran or were skipped; failed: {', '.join(failed) or 'none'}; results in {out}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
