"""Recall on public data: memlens's three modes beside plain baselines, on sets written elsewhere.

    python bench/public_recall.py                       # every set (bench/public_data.py says where each comes from)
    python bench/public_recall.py --sets cisi,cranfield # some of them
    python bench/public_recall.py --json out.json       # also the figures and every question's ranks as JSON

Per set, per question class and overall, per system: evidence recall at 1, 5 and 10 (the share
of the question's evidence among the first k hits, out of at most k: a set judging 40 documents
relevant to a query can still score 1), "any@5" (some evidence among the first five) and MRR@10
(one over the first evidence's rank). The systems, all on the same vectors (the project's model,
computed once and cached in bench/.cache/public/):

- memlens hybrid / keyword / vector: ``MemoryStore.recall(question, user_id=tenant, mode=..., limit=10)``;
- exact cosine: every memory of the tenant against the question, in numpy;
- Okapi BM25: rank_bm25's BM25Okapi over the tenant's memories, lower-cased word tokens;
- RRF: reciprocal-rank fusion (k=60) of those two lists' first 100;
- chromadb: its default query (HNSW, its default l2 space) over one collection per set, filtered
  to the tenant, with the same vectors.

The first run embeds every memory and question with the real model (LongMemEval's 30,000 turns:
several minutes on two cores) and builds the stores; later runs read both from the cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from public_data import LOADERS, SOURCES_DIR, PublicSet, load  # noqa: E402
from recall_ab import Lookup  # noqa: E402

from store import MemoryStore  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache" / "public"
DEPTH = 10
MODES = ("hybrid", "keyword", "vector")
BASELINES = ("exact cosine", "Okapi BM25", "RRF cosine+BM25", "chromadb")
SYSTEMS = tuple(f"memlens {m}" for m in MODES) + BASELINES
_TOKEN = re.compile(r"\w+")


def digest(texts: Sequence[str]) -> str:
    h = hashlib.sha1()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode()).digest()


def vectors(name: str, texts: list[str]) -> np.ndarray:
    """The real model's vectors of ``texts``. Each text's vector is kept in the set's cache
    (bench/.cache/public/<name>.npz, by the text's SHA-1) and computed only once."""
    path = CACHE / f"{name}.npz"
    known: dict[bytes, np.ndarray] = {}
    if path.exists():
        with np.load(path) as cached:
            known = dict(zip((bytes(k) for k in cached["keys"]), cached["vectors"], strict=True))
    keys = [text_key(t) for t in texts]
    missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    if missing:
        from store.embedding import LocalModelEmbedder

        model = LocalModelEmbedder()
        print(
            f"{name}: embedding {len(missing):,} texts with the real model (about {len(missing) / 25 / 60:.0f} min on two cores)...",
            flush=True,
        )
        # Texts of like length batched together: a batch is padded to its longest text.
        missing.sort(key=lambda item: len(item[1]))
        started = time.perf_counter()
        for start in range(0, len(missing), 64):
            batch = missing[start : start + 64]
            known.update(zip((k for k, _ in batch), model.embed([t for _, t in batch]), strict=True))
            print(f"  {start + len(batch):,}/{len(missing):,} ({time.perf_counter() - started:.0f} s)", end="\r", flush=True)
        print()
        CACHE.mkdir(parents=True, exist_ok=True)
        stored = list(known)
        np.savez(path, keys=np.array(stored, dtype="S20"), vectors=np.vstack([known[k] for k in stored]).astype(np.float32))
    return np.vstack([known[k] for k in keys]).astype(np.float32)


def build_store(data: PublicSet, embedder: Lookup, rebuild: bool) -> MemoryStore:
    path = CACHE / f"{data.name}-{digest([m.id + m.tenant + m.text for m in data.memories])}.db"
    if path.exists() and not rebuild:
        return MemoryStore.open(path, embedder=embedder)
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    started = time.perf_counter()
    store = MemoryStore.open(path, embedder=embedder)
    by_tenant = defaultdict(list)
    for m in data.memories:
        by_tenant[m.tenant].append(
            {"id": m.id, "input": m.input, "output": m.output, "session_id": m.session_id, "occurred_at": m.occurred_at}
        )
    for tenant, items in by_tenant.items():
        store.remember_many(items, user_id=tenant)
    print(f"{data.name}: store built in {time.perf_counter() - started:.0f} s", flush=True)
    return store


class Baselines:
    """The plain systems over one set, each answering (tenant, question, its vector) with ids best first."""

    def __init__(self, data: PublicSet, memory_vectors: np.ndarray):
        from rank_bm25 import BM25Okapi

        self.ids: dict[str, list[str]] = defaultdict(list)
        rows: dict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(data.memories):
            self.ids[m.tenant].append(m.id)
            rows[m.tenant].append(i)
        self.matrix = {t: memory_vectors[r] for t, r in rows.items()}
        self.bm25 = {t: BM25Okapi([tokens(data.memories[i].text) for i in r]) for t, r in rows.items()}
        self.chroma = self._chroma(data, memory_vectors)

    @staticmethod
    def _chroma(data: PublicSet, memory_vectors: np.ndarray):  # type: ignore[no-untyped-def]
        import chromadb

        client = chromadb.EphemeralClient()
        collection = client.create_collection(f"public-{data.name}-{time.time_ns()}")
        for i in range(0, len(data.memories), 4000):
            part = data.memories[i : i + 4000]
            collection.add(
                ids=[f"{m.tenant}\x1f{m.id}" for m in part],
                embeddings=memory_vectors[i : i + len(part)].tolist(),
                metadatas=[{"tenant": m.tenant} for m in part],
            )
        return collection

    def cosine(self, tenant: str, vector: np.ndarray, depth: int = DEPTH) -> list[str]:
        scores = self.matrix[tenant] @ vector
        return [self.ids[tenant][i] for i in np.argsort(-scores, kind="stable")[:depth]]

    def okapi(self, tenant: str, question: str, depth: int = DEPTH) -> list[str]:
        scores = self.bm25[tenant].get_scores(tokens(question))
        return [self.ids[tenant][i] for i in np.argsort(-scores, kind="stable")[:depth]]

    def rrf(self, tenant: str, question: str, vector: np.ndarray) -> list[str]:
        fused: dict[str, float] = defaultdict(float)
        for ranked in (self.cosine(tenant, vector, 100), self.okapi(tenant, question, 100)):
            for rank, mid in enumerate(ranked, start=1):
                fused[mid] += 1.0 / (60 + rank)
        return sorted(fused, key=lambda mid: -fused[mid])[:DEPTH]

    def chromadb(self, tenant: str, vector: np.ndarray) -> list[str]:
        found = self.chroma.query(query_embeddings=[vector.tolist()], n_results=DEPTH, where={"tenant": tenant})
        return [i.split("\x1f", 1)[1] for i in found["ids"][0]]


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def score(ranked: list[str], relevant: frozenset[str]) -> dict[str, float]:
    first = next((i for i, mid in enumerate(ranked[:DEPTH], start=1) if mid in relevant), None)
    out = {f"R@{k}": len(relevant & set(ranked[:k])) / min(k, len(relevant)) for k in (1, 5, 10)}
    out["any@5"] = float(first is not None and first <= 5)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


METRICS = ("R@1", "R@5", "R@10", "any@5", "MRR")


def open_set(data: PublicSet, rebuild: bool = False) -> tuple[MemoryStore, np.ndarray, np.ndarray]:
    """The set's store (built on first use, its vectors looked up, not computed) and the vectors
    of its memories and of its questions, in their order."""
    memory_vectors = vectors(data.name, [m.text for m in data.memories])
    question_vectors = vectors(data.name + "-questions", [q.text for q in data.questions])
    embedder = Lookup([m.text for m in data.memories] + [q.text for q in data.questions], list(memory_vectors) + list(question_vectors))
    return build_store(data, embedder, rebuild), memory_vectors, question_vectors


def run_set(data: PublicSet, rebuild: bool) -> list[dict]:
    store, memory_vectors, question_vectors = open_set(data, rebuild)
    baselines = Baselines(data, memory_vectors)
    answers: dict[str, Callable[..., list[str]]] = {
        "exact cosine": lambda q, v: baselines.cosine(q.tenant, v),
        "Okapi BM25": lambda q, v: baselines.okapi(q.tenant, q.text),
        "RRF cosine+BM25": lambda q, v: baselines.rrf(q.tenant, q.text, v),
        "chromadb": lambda q, v: baselines.chromadb(q.tenant, v),
    }
    rows = []
    try:
        for q, v in zip(data.questions, question_vectors, strict=True):
            for mode in MODES:
                hits = store.recall(q.text, user_id=q.tenant, mode=mode, limit=DEPTH)
                ranked = [h.id for h in hits]
                rows.append(
                    {
                        "set": data.name,
                        "question": q.id,
                        "class": q.cls,
                        "system": f"memlens {mode}",
                        "ranked": ranked,
                        **score(ranked, q.relevant),
                    }
                )
            for system, answer in answers.items():
                ranked = answer(q, v)
                rows.append(
                    {"set": data.name, "question": q.id, "class": q.cls, "system": system, "ranked": ranked, **score(ranked, q.relevant)}
                )
    finally:
        store.close()
    return rows


def table(rows: list[dict], name: str) -> str:
    """One markdown table for the set: a row per system, a column group per class plus "all"."""
    mine = [r for r in rows if r["set"] == name]
    classes = sorted({r["class"] for r in mine}) + ["all"]
    lines = []
    for cls in classes:
        chosen = [r for r in mine if cls == "all" or r["class"] == cls]
        n = len({r["question"] for r in chosen})
        lines.append(f"\n**{name}, {cls}** ({n} questions)\n")
        lines.append("| system | " + " | ".join(METRICS) + " |")
        lines.append("|---|" + "---:|" * len(METRICS))
        for system in SYSTEMS:
            got = [r for r in chosen if r["system"] == system]
            means = [sum(r[m] for r in got) / len(got) for m in METRICS]
            lines.append(f"| {system} | " + " | ".join(f"{x:.3f}" for x in means) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(LOADERS), help="comma-separated: " + ", ".join(LOADERS))
    parser.add_argument("--sources", type=Path, default=SOURCES_DIR, help="where the repositories are cloned")
    parser.add_argument("--per-class", type=int, default=10, help="LongMemEval questions per question type")
    parser.add_argument("--rebuild", action="store_true", help="build the stores again (after a change to what is indexed)")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args()
    rows: list[dict] = []
    for name in args.sets.split(","):
        data = load(name, args.sources, args.per_class)
        print(
            f"{data.name}: {len(data.memories):,} memories, {len(data.questions)} questions; from github.com/{data.repository} ({data.licence})",
            flush=True,
        )
        started = time.perf_counter()
        rows += run_set(data, args.rebuild)
        print(table(rows, data.name))
        print(f"\n({time.perf_counter() - started:.0f} s)\n", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
