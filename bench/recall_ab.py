"""Recall A/B across code versions: the same store, the same queries, each version in fresh processes.

    python bench/recall_ab.py e4d1642 1397d7c HEAD            # 10k and 100k, 3 rounds
    python bench/recall_ab.py --sizes 10000 --rounds 5 A B
    python bench/recall_ab.py --ingest e4d1642 HEAD             # also ingest 100k without embeddings

Builds one store per size once (with the code of this checkout; the versions compared must
share its schema), checks each version out with ``git worktree add --detach`` under a temporary
folder, then runs rounds in which every version, in turn, opens the store in a fresh process and
times ``recall()`` hybrid, keyword-only and vector-only over the same queries. Versions take turns
inside a round, so a load change on the machine hits them alike. Query vectors are precomputed
(the real model's, looked up), so the table compares the code around the model, not the model:
encoding one query costs the same in every version. Ratios are against the first version listed.
Mode ``typed`` is search as you type: keyword-only ``recall(prefix=True)`` at every keystroke of
the first TYPED queries. ``--ingest`` adds a rate: each version, in a fresh process per round,
stores 100k episodes without embeddings (batches of 10k) into a new file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import embeddings, memories, queries  # noqa: E402

QUERIES = 200
TYPED = 40
MODES = ("hybrid", "keyword", "vector", "typed")
MODEL = "all-MiniLM-L6-v2"


class Lookup:
    """The real model's vectors for known texts, without loading the model; texts no cache holds
    are encoded by the real model (what a fresh clone's first run does, once)."""

    name, dim, is_warm = MODEL, 384, True
    _model = None  # the real model, loaded only for texts no cache holds

    def __init__(self, texts, vectors):
        self.known = dict(zip(texts, vectors, strict=True))

    def warm(self) -> None:
        pass

    def embed(self, texts):
        missing = [t for t in texts if t not in self.known]
        if missing:  # not in any cache (a fresh clone): the real model computes them, loaded once
            from store.embedding import LocalModelEmbedder

            if Lookup._model is None:
                Lookup._model = LocalModelEmbedder()
            self.known.update(zip(missing, Lookup._model.embed(missing), strict=True))
        return np.vstack([self.known[t] for t in texts])


# Runs in a fresh process with one version's code first on sys.path.
CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
from recall_ab import Lookup, MODES, TYPED
from store import MemoryStore
texts = json.load(open(sys.argv[4]))
vectors = np.load(sys.argv[5])
store = MemoryStore.open(sys.argv[3], embedder=Lookup(texts, vectors))
out = {}
typed = [q[:i] for q in texts[:TYPED] for i in range(1, len(q) + 1)]
calls = {mode: [(q, mode, False) for q in texts] for mode in MODES if mode != "typed"}
calls["typed"] = [(q, "keyword", True) for q in typed]
for mode, todo in calls.items():
    for q, m, prefix in todo[:10]:
        store.recall(q, user_id="bench", limit=10, mode=m, prefix=prefix)
for mode, todo in calls.items():
    times = []
    for q, m, prefix in todo:
        start = time.perf_counter()
        store.recall(q, user_id="bench", limit=10, mode=m, prefix=prefix)
        times.append(time.perf_counter() - start)
    out[mode] = times
print(json.dumps(out))
"""

INGEST_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
from corpus import memories
from store import MemoryStore
plain = memories(100_000, seed=5)
with MemoryStore.open(sys.argv[3], embedder=None) as store:
    start = time.perf_counter()
    for i in range(0, len(plain), 10_000):
        store.remember_many([{"input": t} for t in plain[i : i + 10_000]], user_id="bench")
    print(json.dumps(len(plain) / (time.perf_counter() - start)))
"""


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def build(path: Path, n: int, texts, vectors) -> None:
    from store import MemoryStore

    with MemoryStore.open(path, embedder=Lookup(texts[:n], vectors[:n])) as store:
        for start in range(0, n, 10_000):
            store.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id="bench")


def checkout(commit: str, folder: Path) -> Path:
    target = folder / commit
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(target), commit], check=True)
    return target


def ingest(args, trees: dict[str, Path], work: Path) -> None:
    rates = {v: [] for v in args.versions}
    for r in range(args.rounds):
        for v in args.versions:
            db = work / f"ingest-{r}-{v}.db"
            run = subprocess.run(
                [sys.executable, "-c", INGEST_CHILD, str(trees[v]), str(Path(__file__).parent), str(db)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(trees[v])},
            )
            rates[v].append(json.loads(run.stdout.strip().splitlines()[-1]))
            for side in db.parent.glob(db.name + "*"):
                side.unlink()
        print(f"ingest round {r + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
    base = args.versions[0]
    print(f"\n## ingest, 100,000 episodes without embeddings (episodes/s per round; ratio of medians against {base})\n")
    print("| version | rounds | median | ratio |")
    print("|---|---|---|---|")
    for v in args.versions:
        median, baseline = sorted(rates[v])[len(rates[v]) // 2], sorted(rates[base])[len(rates[base]) // 2]
        print(f"| {v} | {' / '.join(f'{x:,.0f}' for x in rates[v])} | {median:,.0f} | {median / baseline:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("versions", nargs="+", help="commits to compare; the first is the baseline")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ingest", action="store_true", help="also time ingest of 100k episodes without embeddings")
    args = parser.parse_args()
    texts = memories(max(args.sizes))
    sys.path.insert(0, str(ROOT))
    from store.embedding import cache_dir

    cache = cache_dir() / "bench"
    vectors = embeddings(texts, Lookup([], []), cache)
    query_texts = queries(QUERIES)
    query_vectors = embeddings(query_texts, Lookup([], []), cache)
    print(
        f"# recall A/B\n\nmachine: {os.cpu_count()} cores, load at start {os.getloadavg()[0]:.1f}; {QUERIES} queries, top 10, {args.rounds} rounds"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "queries.json").write_text(json.dumps(query_texts))
        np.save(work / "queries.npy", query_vectors)
        trees = {v: checkout(v, work / "trees") for v in args.versions}
        try:
            if args.ingest:
                ingest(args, trees, work)
            for n in args.sizes:
                db = work / f"ab-{n}.db"
                start = time.perf_counter()
                build(db, n, texts, vectors)
                print(f"\nbuilt {n:,} episodes in {time.perf_counter() - start:.0f} s")
                times = {(v, m): [] for v in args.versions for m in MODES}
                p50s = {(v, m): [] for v in args.versions for m in MODES}
                for r in range(args.rounds):
                    for v in args.versions:
                        run = subprocess.run(
                            [
                                sys.executable,
                                "-c",
                                CHILD,
                                str(trees[v]),
                                str(Path(__file__).parent),
                                str(db),
                                str(work / "queries.json"),
                                str(work / "queries.npy"),
                            ],
                            capture_output=True,
                            text=True,
                            check=True,
                            env={**os.environ, "PYTHONPATH": str(trees[v])},
                        )
                        for m, t in json.loads(run.stdout.strip().splitlines()[-1]).items():
                            times[(v, m)] += t
                            p50s[(v, m)].append(pct(t, 50))
                    print(f"round {r + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
                base = args.versions[0]
                print(f"\n## {n:,} episodes (ms; per-round p50s, then p50/p95 over all rounds; ratio against {base})\n")
                print("| mode | version | round p50s | p50 | p95 | p50 ratio | p95 ratio |")
                print("|---|---|---|---|---|---|---|")
                for m in MODES:
                    for v in args.versions:
                        t, b = times[(v, m)], times[(base, m)]
                        rounds = " / ".join(f"{x * 1000:.1f}" for x in p50s[(v, m)])
                        print(
                            f"| {m} | {v} | {rounds} | {pct(t, 50) * 1000:.2f} | {pct(t, 95) * 1000:.2f} | "
                            f"{pct(t, 50) / pct(b, 50):.2f}x | {pct(t, 95) / pct(b, 95):.2f}x |"
                        )
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


if __name__ == "__main__":
    main()
