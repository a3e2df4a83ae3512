"""memlens's recall beside the stores a user would pick instead, at 100k episodes in one tenant.

    python bench/peers_bench.py                   # 100k episodes, 200 queries
    python bench/peers_bench.py --rows 20000 --queries 100

One process holds all of them, over the same real MiniLM vectors of the same texts (each system
stores the texts and returns them with its hits, as an agent's memory would), and asks each
the same never-searched queries. Every call that needs a query vector encodes the query with the
same model inside the timed call (memlens's ``recall()`` does it itself; for the others the
benchmark calls the model, then the store), so the figures are what a user waits for. Systems are
interleaved at random for each query, so load and cache warmth fall on all of them alike.

- memlens hybrid, against LanceDB's hybrid (vector + full-text, its RRF reranker);
- memlens vector, against chromadb's HNSW query and LanceDB's vector search (IVF_HNSW_SQ);
- memlens keyword, against LanceDB's full-text search (no encoding in either).

The ratio is the peer's figure over memlens's same-mode figure (above 1: memlens is faster).
memlens's hybrid target (p95 <= 15 ms, encoding included) is marked met or missed. chromadb and
LanceDB come with ``pip install -e '.[bench]'``; a system that is not installed gets a line saying so.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import embeddings, memories, queries  # noqa: E402
from opening_bench import TENANT, build_chroma, build_lance, build_memlens, installed  # noqa: E402
from recall_ab import Lookup, pct  # noqa: E402
from recall_bench import table  # noqa: E402

from store import MemoryStore, testing  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402

HYBRID_TARGET = 0.015
WARM = 10


def memlens_calls(store: MemoryStore) -> dict[str, Callable[[str], object]]:
    def recall(mode: str) -> Callable[[str], object]:
        def call(text: str) -> object:
            testing.forget_query_vectors(store)  # never a kept vector: every call encodes its query
            return store.recall(text, user_id=TENANT, mode=mode, limit=10)

        return call

    return {"memlens hybrid": recall("hybrid"), "memlens vector": recall("vector"), "memlens keyword": recall("keyword")}


def lance_calls(work: Path, encode: Callable[[str], np.ndarray]) -> dict[str, Callable[[str], object]]:
    import lancedb
    from lancedb.index import FTS
    from lancedb.rerankers import RRFReranker

    tbl = lancedb.connect(str(work / "lance")).open_table("bench")
    tbl.create_index("text", config=FTS(), replace=True)
    rrf = RRFReranker()
    return {
        "LanceDB hybrid (RRF)": lambda t: tbl.search(query_type="hybrid").vector(encode(t)).text(t).limit(10).rerank(rrf).to_list(),
        "LanceDB vector": lambda t: tbl.search(encode(t)).limit(10).to_list(),
        "LanceDB full-text": lambda t: tbl.search(t, query_type="fts").limit(10).to_list(),
    }


def chroma_calls(work: Path, encode: Callable[[str], np.ndarray]) -> dict[str, Callable[[str], object]]:
    import chromadb

    collection = chromadb.PersistentClient(path=str(work / "chroma")).get_collection("bench")
    return {"chromadb vector (HNSW)": lambda t: collection.query(query_embeddings=[encode(t).tolist()], n_results=10)}


# Which memlens mode each system is read against.
PEER_OF = {
    "LanceDB hybrid (RRF)": "memlens hybrid",
    "LanceDB vector": "memlens vector",
    "chromadb vector (HNSW)": "memlens vector",
    "LanceDB full-text": "memlens keyword",
}


def side_by_side(calls: dict[str, Callable[[str], object]], asked: list[str], seed: int) -> tuple[dict[str, list[float]], list[float]]:
    """Each text asked of every system, in a new random order per text; the first WARM texts warm
    them and are not timed. The times per system, and the load average every 50 texts."""
    rng = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in calls}
    loads = []
    for i, text in enumerate(asked):
        for name in rng.sample(list(calls), len(calls)):
            started = time.perf_counter()
            calls[name](text)
            if i >= WARM:
                times[name].append(time.perf_counter() - started)
        if i % 50 == 0:
            loads.append(os.getloadavg()[0])
    return times, loads


def peer_calls(
    work: Path, texts: list[str], vectors: np.ndarray, model: LocalModelEmbedder
) -> tuple[dict[str, Callable[[str], object]], list[str]]:
    """chromadb's and LanceDB's calls over ``texts`` and ``vectors``, built in ``work``, each
    encoding its query with ``model``; and the names of the systems not installed."""

    def encode(text: str) -> np.ndarray:
        return np.asarray(model.embed([text])[0], dtype=np.float32)

    calls: dict[str, Callable[[str], object]] = {}
    missing = [name for name in ("chromadb", "lancedb") if not installed(name)]
    if "chromadb" not in missing:
        start = time.perf_counter()
        build_chroma(work, vectors, texts)
        calls |= chroma_calls(work, encode)
        print(f"chromadb: built in {time.perf_counter() - start:.0f} s", flush=True)
    if "lancedb" not in missing:
        start = time.perf_counter()
        build_lance(work, texts, vectors)
        calls |= lance_calls(work, encode)
        print(f"LanceDB: built (vector and full-text indexes) in {time.perf_counter() - start:.0f} s", flush=True)
    return calls, missing


def peers_side_by_side(
    work: Path, store: MemoryStore, model: LocalModelEmbedder, texts: list[str], vectors: np.ndarray, asked: list[str], seed: int = 3
) -> tuple[dict[str, list[float]], list[float], list[str]]:
    """memlens's three modes and the peers over the same texts, vectors and queries (what
    recall_targets.py prints beside its targets); the first WARM queries warm them, untimed."""
    peers, missing = peer_calls(work, texts, vectors, model)
    times, loads = side_by_side(memlens_calls(store) | peers, asked, seed)
    return times, loads, missing


def print_side_by_side(times: dict[str, list[float]], loads: list[float], missing: list[str]) -> None:
    rows = []
    for name, taken in times.items():
        p50, p95 = pct(taken, 50), pct(taken, 95)
        against = PEER_OF.get(name)
        ratio = "-" if against is None else f"{p50 / pct(times[against], 50):.2f}x / {p95 / pct(times[against], 95):.2f}x"
        target = ""
        if name == "memlens hybrid":
            target = f"p95 <= 15 ms: {'met' if p95 <= HYBRID_TARGET else 'missed'}"
        elif against is not None:
            target = f"memlens leads on p95: {'yes' if p95 > pct(times[against], 95) else 'no'}"
        encodes = "yes" if "keyword" not in name and "full-text" not in name else "no"
        rows.append([name, encodes, f"{p50 * 1000:.2f}", f"{p95 * 1000:.2f}", ratio, target])
    calls = len(next(iter(times.values())))
    table(
        f"{calls} never-searched queries each, systems interleaved at random per query (ratio: the peer over memlens in the same mode, "
        "p50 / p95; above 1, memlens is faster)",
        ["system", "encodes the query", "p50 ms", "p95 ms", "ratio to memlens", "target"],
        rows,
    )
    for name in missing:
        print(f"\n{name}: not installed (pip install -e '.[bench]')")
    print(f"\nload during the side-by-side run {min(loads):.1f}-{max(loads):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    corpus = memories(100_000)
    texts = corpus[: args.rows]
    vectors = embeddings(corpus, Lookup([], []), cache_dir() / "bench")[: args.rows]
    # Queries no system has seen: a seed of their own, after WARM queries that warm every system.
    asked = queries(args.queries + WARM, seed=101)
    model = LocalModelEmbedder()
    model.warm()
    print("# recall beside chromadb and LanceDB\n")
    print(f"machine: {os.cpu_count()} cores, load before {os.getloadavg()[0]:.1f}; {args.rows:,} episodes, one tenant, real MiniLM (384-d)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        db = build_memlens(work, texts, vectors)
        print(f"memlens: built, index saved, in {time.perf_counter() - start:.0f} s", flush=True)
        store = MemoryStore.open(db, embedder=model, read_only=True)
        peers, missing = peer_calls(work, texts, vectors, model)
        store.warm_vectors(user_id=TENANT)
        times, loads = side_by_side(memlens_calls(store) | peers, asked, args.seed)
        store.close()
    print_side_by_side(times, loads, missing)


if __name__ == "__main__":
    main()
