"""Recall benchmark: memlens against a plain numpy scan and chromadb, side by side in one run.

    python bench/recall_bench.py            # 10k and 100k (embeds 100k texts once, ~5 min, then cached)
    python bench/recall_bench.py --quick    # 10k only

Prints one table per section; ratios are against baselines measured in the same run.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import PrecomputedEmbedder, embeddings, memories, queries  # noqa: E402

from store import MemoryStore, testing  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402
from store.recall.vectors import top_k  # noqa: E402
from store.tenancy import Tenant  # noqa: E402

CACHE = cache_dir() / "bench"
QUERIES = 200


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print(f"\n## {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def build_store(path: Path, texts: list[str], embedder) -> MemoryStore:
    store = MemoryStore.open(path, embedder=embedder)
    for start in range(0, len(texts), 10_000):
        store.remember_many([{"input": t} for t in texts[start : start + 10_000]], user_id="bench")
    return store


def bench_ingest(real, workdir: Path) -> list[list[str]]:
    fresh = memories(2_000, seed=99)
    with MemoryStore.open(workdir / "ingest-embed.db", embedder=real) as store:
        start = time.perf_counter()
        for i in range(0, len(fresh), 500):
            store.remember_many([{"input": t} for t in fresh[i : i + 500]], user_id="bench")
        with_embeddings = len(fresh) / (time.perf_counter() - start)
    plain = memories(100_000, seed=5)
    with MemoryStore.open(workdir / "ingest-plain.db", embedder=None) as store:
        start = time.perf_counter()
        for i in range(0, len(plain), 10_000):
            store.remember_many([{"input": t} for t in plain[i : i + 10_000]], user_id="bench")
        without = len(plain) / (time.perf_counter() - start)
    return [
        [
            "with embeddings (2k episodes, batches of 500)",
            f"{with_embeddings:,.0f}/s",
            ">= 200/s",
            "yes" if with_embeddings >= 200 else "NO",
        ],
        ["without embeddings (100k episodes, batches of 10k)", f"{without:,.0f}/s", ">= 20,000/s", "yes" if without >= 20_000 else "NO"],
    ]


def bench_size(n: int, texts, vectors, query_texts, query_vectors, real, workdir: Path, chroma: bool):
    embedder = PrecomputedEmbedder(real, list(texts[:n]) + query_texts, np.vstack([vectors[:n], query_vectors]))
    store = build_store(workdir / f"recall-{n}.db", texts[:n], embedder)
    tenant = Tenant("bench")
    with testing.backend(store).read() as conn:
        pks, matrix = testing.vector_cache(store).get(conn, tenant, "episode", real.dim)
    baseline = np.ascontiguousarray(vectors[:n])

    def ours(q):
        with testing.backend(store).read() as conn:
            p, m = testing.vector_cache(store).get(conn, tenant, "episode", real.dim)
        return p[top_k(m, q, 10)[0]]

    def numpy_scan(q):
        scores = baseline @ q
        best = np.argpartition(-scores, 9)[:10]
        return best[np.argsort(-scores[best])]

    exact = [set(numpy_scan(q)) for q in query_vectors]
    for q in query_vectors[:20]:
        ours(q), numpy_scan(q)
    t_ours = [t for q in query_vectors for t in timed(lambda: ours(q), 1)]
    t_numpy = [t for q in query_vectors for t in timed(lambda: numpy_scan(q), 1)]
    pk_to_row = {int(pk): i for i, pk in enumerate(pks)}
    our_recall = statistics.mean(len({pk_to_row[int(p)] for p in ours(q)} & e) / 10 for q, e in zip(query_vectors, exact, strict=True))

    for q in query_texts[:10]:
        store.recall(q, user_id="bench", limit=10)
    t_recall = [t for q in query_texts for t in timed(lambda: store.recall(q, user_id="bench", limit=10), 1)]
    t_keyword = [t for q in query_texts for t in timed(lambda: store.recall(q, user_id="bench", limit=10, mode="keyword"), 1)]
    t_encode = [t for q in query_texts for t in timed(lambda: real.embed([q]), 1)]

    rows = [
        [f"{n:,}", "numpy float32 scan (baseline)", ms(pct(t_numpy, 50)), ms(pct(t_numpy, 95)), "1.000", "1.00x"],
        [
            f"{n:,}",
            "memlens vector search",
            ms(pct(t_ours, 50)),
            ms(pct(t_ours, 95)),
            f"{our_recall:.3f}",
            f"{pct(t_ours, 50) / pct(t_numpy, 50):.2f}x",
        ],
    ]
    if chroma:
        rows.append(bench_chroma(n, baseline, query_vectors, exact, pct(t_numpy, 50)))
    e2e = [
        [f"{n:,}", "query encode (onnx)", ms(pct(t_encode, 50)), ms(pct(t_encode, 95))],
        [f"{n:,}", "recall(), keyword only", ms(pct(t_keyword, 50)), ms(pct(t_keyword, 95))],
        [f"{n:,}", "recall(), hybrid, encode included", ms(pct(t_recall, 50)), ms(pct(t_recall, 95))],
    ]
    store.close()
    return rows, e2e


def bench_chroma(n, vectors, query_vectors, exact, numpy_p50):
    try:
        import chromadb
    except ImportError:
        return [f"{n:,}", "chromadb (not installed: pip install -e '.[bench]')", "-", "-", "-", "-"]
    client = chromadb.EphemeralClient()
    collection = client.create_collection(f"bench{n}", metadata={"hnsw:space": "cosine"})
    start = time.perf_counter()
    for i in range(0, n, 5000):
        collection.add(ids=[str(j) for j in range(i, min(n, i + 5000))], embeddings=vectors[i : i + 5000].tolist())
    ingest = time.perf_counter() - start
    for q in query_vectors[:10]:  # warm-up
        collection.query(query_embeddings=[q.tolist()], n_results=10)
    times = []
    answers = []
    for q in query_vectors:
        start = time.perf_counter()
        ids = collection.query(query_embeddings=[q.tolist()], n_results=10)["ids"][0]
        times.append(time.perf_counter() - start)
        answers.append({int(i) for i in ids})
    recall = statistics.mean(len(a & e) / 10 for a, e in zip(answers, exact, strict=True))
    client.delete_collection(f"bench{n}")
    return [
        f"{n:,}",
        f"chromadb HNSW (ingest {ingest:.0f} s)",
        ms(pct(times, 50)),
        ms(pct(times, 95)),
        f"{recall:.3f}",
        f"{pct(times, 50) / numpy_p50:.2f}x",
    ]


def rss_probe(db: str, load: bool) -> int:
    """Resident size of a fresh process with the model warm, with or without the vectors loaded."""
    code = (
        "import sys; sys.path.insert(0, {!r})\n"
        "from store import MemoryStore\n"
        "s = MemoryStore.open({!r})\n"
        "s.warm_model(); s.recall('warm up the model', user_id='nobody')\n"
        "{}\n"
        "print(int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) * 1024)\n"
    ).format(str(Path(__file__).resolve().parent.parent), db, "s.recall('hotel in Lisbon', user_id='bench')" if load else "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10k only, no 100k corpus")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [10_000, 100_000]
    print(f"# memlens recall benchmark\n\nmachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, numpy {np.__version__}")
    real = LocalModelEmbedder()
    start = time.perf_counter()
    real.warm()
    print(f"model: {real.name} via {real.active_backend}, warm in {time.perf_counter() - start:.2f} s")
    texts = memories(max(sizes))
    query_texts = queries(QUERIES)
    vectors = embeddings(texts, real, CACHE)
    query_vectors = embeddings(query_texts, real, CACHE)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        table("Ingest", ["what", "rate", "target", "met"], bench_ingest(real, workdir))
        search_rows, e2e_rows = [], []
        for n in sizes:
            rows, e2e = bench_size(n, texts, vectors, query_texts, query_vectors, real, workdir, chroma=True)
            search_rows += rows
            e2e_rows += e2e
            gc.collect()
        table(
            "Vector search, top-10, one query (ratio: p50 against the numpy scan)",
            ["episodes", "method", "p50", "p95", "recall@10", "ratio"],
            search_rows,
        )
        table("End to end, model warm (target at 100k: hybrid p95 <= 25 ms)", ["episodes", "what", "p50", "p95"], e2e_rows)
        n = max(sizes)
        db = str(workdir / f"recall-{n}.db")
        with_vectors, model_only = rss_probe(db, True), rss_probe(db, False)
        raw = n * real.dim * 4
        table(
            f"Memory, one process holding {n:,} vectors",
            ["what", "MiB"],
            [
                ["raw vector bytes", f"{raw / 2**20:.0f}"],
                ["process, model warm, no vectors loaded", f"{model_only / 2**20:.0f}"],
                ["process, model warm, vectors loaded", f"{with_vectors / 2**20:.0f}"],
                [
                    "growth from loading the vectors",
                    f"{(with_vectors - model_only) / 2**20:.0f} ({(with_vectors - model_only) / raw:.2f}x raw; target < 2x)",
                ],
            ],
        )


if __name__ == "__main__":
    main()
