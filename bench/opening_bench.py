"""A new process opening a 100k-vector tenant: how soon its first semantic search answers, and
whether its searches run on an approximate index from the start.

    python bench/opening_bench.py                 # 100k, 5 rounds
    python bench/opening_bench.py --rows 20000 --rounds 3

Each round starts one fresh process per system, in a new random order: memlens with its saved
index (today), memlens without one (the baseline: it builds the index in the background and
scans exactly meanwhile, as every process did before the index was saved), chromadb's
PersistentClient and LanceDB (IVF_HNSW_SQ), all over the same real MiniLM vectors. A process
imports its library, opens the store, answers one query, then 50 more. Times are taken inside
the process from just before the open (the imports are reported apart); memory is the growth of
the resident set from after the imports to after the 51 queries, against the raw float32 bytes.
chromadb and LanceDB come with ``pip install -e '.[bench]'``; a system that is not installed
gets a line saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import embeddings, memories, queries  # noqa: E402
from recall_ab import Lookup  # noqa: E402
from recall_bench import table  # noqa: E402

from store import MemoryStore, testing  # noqa: E402
from store.embedding import cache_dir  # noqa: E402

TENANT = "bench"
SEARCHES = 50

PRELUDE = r"""
import json, os, sys, time
import numpy as np
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024
work = sys.argv[1]
queries = np.load(work + "/queries.npy")
"""

CHILDREN = {
    "memlens": r"""
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[2]); sys.path.insert(0, sys.argv[2] + "/bench")
from recall_ab import Lookup
from store import MemoryStore, testing
texts = json.load(open(work + "/queries.json"))
lookup = Lookup(texts, queries)
imported = time.perf_counter() - t0
base = rss()
start = time.perf_counter()
s = MemoryStore.open(sys.argv[3], embedder=lookup, read_only=True)
first = s.recall(texts[0], user_id="bench", mode="vector", limit=10)
first_s = time.perf_counter() - start
times = []
for text in texts[1:SEARCHES + 1]:
    t = time.perf_counter(); s.recall(text, user_id="bench", mode="vector", limit=10); times.append(time.perf_counter() - t)
with testing.backend(s).read() as conn:
    index = testing.vector_cache(s).searchable(conn, testing.tenant(s, "bench"), "episode", 384).approximate
on_index = "mapped" if index is not None and index.mapped else ("built" if index is not None else "no (exact scan)")
print(json.dumps({"imported": imported, "first": first_s, "times": times, "rss": rss() - base, "on_index": on_index}))
""",
    "chromadb": r"""
t0 = time.perf_counter()
import chromadb
imported = time.perf_counter() - t0
base = rss()
start = time.perf_counter()
client = chromadb.PersistentClient(path=work + "/chroma")
collection = client.get_collection("bench")
collection.query(query_embeddings=[queries[0].tolist()], n_results=10)
first_s = time.perf_counter() - start
times = []
for q in queries[1:SEARCHES + 1]:
    t = time.perf_counter(); collection.query(query_embeddings=[q.tolist()], n_results=10); times.append(time.perf_counter() - t)
print(json.dumps({"imported": imported, "first": first_s, "times": times, "rss": rss() - base, "on_index": "HNSW"}))
""",
    "lancedb": r"""
os.environ["LANCEDB_LOG"] = "error"
t0 = time.perf_counter()
import lancedb
imported = time.perf_counter() - t0
base = rss()
start = time.perf_counter()
db = lancedb.connect(work + "/lance")
tbl = db.open_table("bench")
tbl.search(queries[0]).limit(10).to_list()
first_s = time.perf_counter() - start
times = []
for q in queries[1:SEARCHES + 1]:
    t = time.perf_counter(); tbl.search(q).limit(10).to_list(); times.append(time.perf_counter() - t)
print(json.dumps({"imported": imported, "first": first_s, "times": times, "rss": rss() - base, "on_index": "IVF_HNSW_SQ"}))
""",
}


def installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def build_memlens(work: Path, texts: list[str], vectors: np.ndarray) -> Path:
    db = work / "memlens.db"
    with MemoryStore.open(db, embedder=Lookup(texts, vectors)) as s:
        for start in range(0, len(texts), 10_000):
            s.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id=TENANT)
        s.warm_vectors(user_id=TENANT)
        assert testing.vector_cache(s).settle(timeout=3600) and testing.vector_cache(s).index_failure is None
    assert Path(f"{db}-vectors").is_dir(), "the index was not saved"
    return db


def build_chroma(work: Path, vectors: np.ndarray, texts: list[str] | None = None) -> None:
    """A chromadb collection of the vectors; with ``texts``, each stored as its document, as an
    agent's memory would be (a query then returns them, as memlens's and LanceDB's do)."""
    import chromadb

    client = chromadb.PersistentClient(path=str(work / "chroma"))
    collection = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    for i in range(0, len(vectors), 5000):
        end = min(len(vectors), i + 5000)
        documents = None if texts is None else texts[i:end]
        collection.add(ids=[str(j) for j in range(i, end)], embeddings=vectors[i:end], documents=documents)


def build_lance(work: Path, texts: list[str], vectors: np.ndarray) -> None:
    os.environ["LANCEDB_LOG"] = "error"
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(work / "lance"))
    data = pa.table(
        {
            "id": pa.array(range(len(texts))),
            "text": pa.array(texts),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
        }
    )
    tbl = db.create_table("bench", data=data)
    from lancedb.index import HnswSq

    tbl.create_index("vector", config=HnswSq(distance_type="cosine"))


def run_child(system: str, work: Path, db: Path, saved: bool) -> dict:
    folder, aside = Path(f"{db}-vectors"), work / "vectors-aside"
    if system == "memlens" and not saved:
        folder.rename(aside)
    try:
        code = PRELUDE.replace("SEARCHES", str(SEARCHES)) + CHILDREN[system].replace("SEARCHES", str(SEARCHES))
        out = subprocess.run([sys.executable, "-c", code, str(work), str(ROOT), str(db)], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        if aside.exists():
            aside.rename(folder)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = memories(100_000)[: args.rows]
    vectors = embeddings(memories(100_000), Lookup([], []), cache_dir() / "bench")[: args.rows]
    query_texts = queries(SEARCHES + 1)
    query_vectors = embeddings(queries(200), Lookup([], []), cache_dir() / "bench")[: SEARCHES + 1]
    systems = ["memlens, saved index", "memlens, no saved index (baseline)"]
    systems += [s for s in ("chromadb", "lancedb") if installed(s)]
    missing = [s for s in ("chromadb", "lancedb") if not installed(s)]
    print("# a new process opening a tenant\n")
    print(f"machine: {os.cpu_count()} cores, load before {os.getloadavg()[0]:.1f}; {args.rows:,} real MiniLM vectors (384-d)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "queries.json").write_text(json.dumps(query_texts))
        np.save(work / "queries.npy", query_vectors)
        start = time.perf_counter()
        db = build_memlens(work, texts, vectors)
        print(f"memlens: built and saved in {time.perf_counter() - start:.0f} s", flush=True)
        if "chromadb" in systems:
            start = time.perf_counter()
            build_chroma(work, vectors)
            print(f"chromadb: built in {time.perf_counter() - start:.0f} s", flush=True)
        if "lancedb" in systems:
            start = time.perf_counter()
            build_lance(work, texts, vectors)
            print(f"lancedb: built in {time.perf_counter() - start:.0f} s", flush=True)
        results: dict[str, list[dict]] = {s: [] for s in systems}
        for r in range(args.rounds):
            order = random.sample(systems, len(systems))
            for system in order:
                engine = system.split(",")[0]
                results[system].append(run_child(engine, work, db, saved="no saved" not in system))
            print(f"round {r + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
    raw = args.rows * 384 * 4
    baseline = statistics.median(r["first"] for r in results["memlens, no saved index (baseline)"])
    rows = []
    for system in systems:
        runs = results[system]
        first = statistics.median(r["first"] for r in runs)
        later = sorted(t for r in runs for t in r["times"])
        on_index = sorted({r["on_index"] for r in runs})
        rows.append(
            [
                system,
                f"{statistics.median(r['imported'] for r in runs):.2f} s",
                f"{first:.2f} s",
                f"{first / baseline:.2f}x",
                ms(later[len(later) // 2]),
                ms(later[int(len(later) * 0.95)]),
                ", ".join(on_index),
                f"{statistics.median(r['rss'] for r in runs) / raw:.2f}x",
            ]
        )
    table(
        f"Open and first search, median of {args.rounds} fresh processes each (ratio: against memlens without a saved index); "
        f"then {SEARCHES} searches per process",
        ["system", "import", "open + first search", "ratio", "next p50", "next p95", "searched on", "RSS growth / raw vectors"],
        rows,
    )
    for system in missing:
        print(f"\n{system}: not installed (pip install -e '.[bench]')")
    print(f"\nload after the run {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
