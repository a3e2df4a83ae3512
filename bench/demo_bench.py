"""How long `memlens demo` takes to build the full demo with the real model (ONNX export
already cached), against the floor: a fresh process that loads the same model and embeds the
same episode and fact texts, nothing else. Fresh processes each, medians.

Two demo rows: the first build, with no demo vectors kept yet (each run gets an empty cache
folder whose ``onnx/`` links to the real one, so the model is not exported again), and a later
build, which finds the vectors the first one kept (``store/demo_vectors.py``).

    python bench/demo_bench.py            # 3 runs of each
    python bench/demo_bench.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FLOOR = """
import random
from store.demo import DEMO_NOW
from store.demo_data import full
from store.recall.indexing import make_embedder
from store.tiers import episodes, facts
rng = random.Random(full.SEED)
texts = []
for module in full.PERSONAS:
    who = module.persona(rng, DEMO_NOW)
    texts += [episodes.embed_text(e["input"], e["output"]) for e in who.episodes]
    texts += [facts.fact_text(f.subject, f.predicate, f.object) for f in who.facts]
make_embedder("default").embed(list(dict.fromkeys(texts)))
"""


def timed(command: list[str], **extra_env: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra_env}
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"failed: {result.stderr.strip().splitlines()[-1]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    timed([sys.executable, "-c", FLOOR])  # exports the model to ONNX once if it is not cached yet
    load_before = os.getloadavg()[0]
    rows = []
    from store.embedding import cache_dir

    with tempfile.TemporaryDirectory() as tmp:
        demo = [sys.executable, "-m", "inspector.cli", "demo", "--db", str(Path(tmp) / "demo.db"), "--no-open"]
        floor, first, later = [], [], []
        for run in range(runs):  # interleaved, so a change in the machine's load hits all alike
            cache = Path(tmp) / f"cache-{run}"
            cache.mkdir()
            (cache / "onnx").symlink_to(cache_dir() / "onnx")
            floor.append(timed([sys.executable, "-c", FLOOR]))
            first.append(timed(demo, MEMLENS_CACHE_DIR=str(cache)))
            later.append(timed(demo, MEMLENS_CACHE_DIR=str(cache)))
    base = statistics.median(floor)
    rows.append(("load the model, embed the demo's texts (baseline)", floor))
    rows.append(("`memlens demo --no-open`, first build (no demo vectors kept yet)", first))
    rows.append(("`memlens demo --no-open`, a later build (vectors kept)", later))
    print("| what | median | min | max | ratio |\n|---|---|---|---|---|")
    for what, times in rows:
        print(
            f"| {what} | {statistics.median(times):.1f} s | {min(times):.1f} s | {max(times):.1f} s | "
            f"{statistics.median(times) / base:.2f}x |"
        )
    print(
        f"\ntarget: the full demo in under 10 s; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, "
        f"on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
