"""How hybrid recall should combine its two halves: every candidate fusion scored on the public
sets and the project's hard set, with weights chosen by cross-validation across sets.

    python bench/fusion_fit.py                  # the table of what was tried, fitted leaving each set out
    python bench/fusion_fit.py --sets cisi,hard # some sets only

Each question's candidates are what hybrid recall fuses: the keyword half's first 50 (BM25 over
the tenant's own statistics) and the vector half's first 50 (cosine), read through
``MemoryStore.recall`` in each mode, with every candidate's cosine computed from the same
vectors. A fusion is a score over those candidates; each is judged, per set and class, by
evidence recall@10, any@5 and MRR, and by whether it stays at or above the better half.
Weights are fitted on all sets but one and reported on the one left out.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from public_data import LOADERS, SOURCES_DIR, Memory, PublicSet, Question, load  # noqa: E402
from public_recall import DEPTH, open_set, score  # noqa: E402
from recall_quality import DATA as HARD_DATA  # noqa: E402
from recall_quality import load as load_hard  # noqa: E402

from store.recall import fusion  # noqa: E402

LISTS = 50  # what hybrid recall fuses at limit=10 (store.recall.hits.candidate_depth)


@dataclass
class Candidate:
    id: str
    text: str
    cos: float
    bm25: float | None
    kw_rank: int | None
    vec_rank: int | None


@dataclass
class Case:
    set: str
    cls: str
    question: str
    relevant: frozenset[str]
    candidates: list[Candidate]
    query: fusion.Query
    idf: dict[str, float]  # the tenant's inverse document frequency of each (folded) query word

    def __post_init__(self) -> None:
        """Every channel a fusion may use, one array entry per candidate."""
        c = self.candidates
        self.cos = np.array([x.cos for x in c])
        bm25 = np.array([x.bm25 or 0.0 for x in c])
        self.bm25_share = bm25 / (bm25.max() or 1.0)
        self.bm25_minmax = _minmax(bm25)
        self.cos_minmax = _minmax(self.cos)
        held = [fusion.held_words(x.text) for x in c]
        words = self.query.words
        self.coverage = np.array([sum(w in h for w in words) / len(words) if words else 0.0 for h in held])
        total = sum(self.idf.values()) or 1.0
        self.idf_coverage = np.array([sum(v for w, v in self.idf.items() if w in h) / total for h in held])
        self.exact = np.array([fusion.EXACT_BONUS if self.query.exact(x.text) else 0.0 for x in c])
        have = bm25 > 0
        # Over the keyword list only: a short list (a small tenant, a rare word) does not make its
        # few hits stand out against every vector-only candidate's missing score.
        listed = np.zeros_like(bm25)
        if have.sum() > 1:
            listed[have] = _z(bm25[have])
            listed[~have] = listed[have].min()
        self.bm25_z = listed
        self.cos_z = _z(self.cos)
        self.kw_rank = np.array([x.kw_rank or 10**6 for x in c], dtype=float)
        self.vec_rank = np.array([x.vec_rank or 10**6 for x in c], dtype=float)


def _z(values: np.ndarray) -> np.ndarray:
    sd = values.std() if len(values) > 1 else 0.0
    return np.zeros_like(values) if sd <= 1e-9 else (values - values.mean()) / sd


def _minmax(values: np.ndarray) -> np.ndarray:
    lo, hi = (values.min(), values.max()) if len(values) else (0.0, 0.0)
    return np.zeros_like(values) if hi <= lo else (values - lo) / (hi - lo)


def hard_set() -> PublicSet:
    data = load_hard(HARD_DATA)
    memories = [
        Memory(m["id"], m["tenant"], m["input"], m["output"], None, datetime.fromisoformat(m["occurred_at"].replace("Z", "+00:00")))
        for m in data["memories"]
    ]
    questions = [Question(q["id"], q["tenant"], q["q"], q["class"], frozenset(q["expected"][:1])) for q in data["queries"]]
    return PublicSet("hard", "this project (tests/data)", "the project's own", memories, questions)


def collect(data: PublicSet) -> list[Case]:
    store, memory_vectors, question_vectors = open_set(data)
    row = {(m.tenant, m.id): i for i, m in enumerate(data.memories)}
    df: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    size: dict[str, int] = defaultdict(int)
    for m in data.memories:
        size[m.tenant] += 1
        for w in fusion.held_words(m.text):
            df[m.tenant][w] += 1
    cases = []
    try:
        for q, qv in zip(data.questions, question_vectors, strict=True):
            found: dict[str, Candidate] = {}
            for rank, h in enumerate(store.recall(q.text, user_id=q.tenant, mode="keyword", limit=LISTS), start=1):
                found[h.id] = Candidate(h.id, h.text, 0.0, h.scores.keyword, rank, None)
            for rank, h in enumerate(store.recall(q.text, user_id=q.tenant, mode="vector", limit=LISTS), start=1):
                c = found.setdefault(h.id, Candidate(h.id, h.text, 0.0, None, None, None))
                c.vec_rank = rank
            for c in found.values():
                c.cos = float(memory_vectors[row[(q.tenant, c.id)]] @ qv)
            query = fusion.Query.of(q.text)
            n = size[q.tenant]
            idf = {w: math.log(1 + (n - df[q.tenant].get(w, 0) + 0.5) / (df[q.tenant].get(w, 0) + 0.5)) for w in query.words}
            cases.append(Case(data.name, q.cls, q.id, q.relevant, list(found.values()), query, idf))
    finally:
        store.close()
    return cases


# --- fusions: each returns the candidates' scores ------------------------------------------

Fusion = Callable[[Case], np.ndarray]


def today(case: Case) -> np.ndarray:
    return case.exact + case.cos + fusion.COVERAGE_WEIGHT * case.coverage**fusion.COVERAGE_POWER


def normalised(keyword_weight: float) -> Fusion:
    """Min-max normalised BM25 and cosine over the candidates, mixed; no BM25 counts as 0."""
    return lambda c: c.exact + keyword_weight * c.bm25_minmax + (1 - keyword_weight) * c.cos_minmax


def mixed(idf_weight: float, idf_power: float, bm25_weight: float, coverage_weight: float) -> Fusion:
    """Cosine, plus IDF-weighted coverage, plus BM25 as a share of the best candidate's, plus plain coverage ** 4."""
    return lambda c: c.exact + c.cos + idf_weight * c.idf_coverage**idf_power + bm25_weight * c.bm25_share + coverage_weight * c.coverage**4


def standardised(keyword_weight: float, coverage_weight: float = 0.0) -> Fusion:
    """Each channel's scores as z-scores over the candidates (a channel whose best hits stand
    out from the rest weighs more), mixed; plus, optionally, coverage ** 4."""
    return lambda c: c.exact * 10 + keyword_weight * c.bm25_z + (1 - keyword_weight) * c.cos_z + coverage_weight * c.coverage**4


def rrf(k: int, keyword_weight: float = 1.0) -> Fusion:
    return lambda c: c.exact + keyword_weight / (k + c.kw_rank) + (2 - keyword_weight) / (k + c.vec_rank)


def standouts(keyword_weight: float, vector_weight: float) -> Fusion:
    """Today's score plus each channel's standout (its z-score over the candidates; the keyword
    one over the keyword list, at least 0): the family the store's fusion comes from."""
    return lambda c: today(c) + keyword_weight * np.clip(c.bm25_z, 0, None) + vector_weight * c.cos_z


def shipped(c: Case) -> np.ndarray:
    """The store's hybrid score (store.recall.fusion.order), from its own functions and weights."""
    keyword = np.array(fusion.standouts([x.bm25 for x in c.candidates], signed=False))
    vector = np.array(fusion.standouts(list(c.cos), signed=True))
    return today(c) + fusion.KEYWORD_WEIGHT * keyword + fusion.VECTOR_WEIGHT * vector


FAMILIES: dict[str, tuple[Callable[..., Fusion], list[tuple]]] = {
    "normalised BM25 + cosine (keyword weight)": (normalised, [(w,) for w in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7)]),
    "cosine + IDF coverage (weight, power)": (
        lambda w, p: mixed(w, p, 0.0, 0.0),
        [(w, p) for w in (0.1, 0.25, 0.5, 1.0, 1.5) for p in (1, 2, 3, 4)],
    ),
    "cosine + BM25 share (weight)": (lambda w: mixed(0.0, 1, w, 0.0), [(w,) for w in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3)]),
    "today + BM25 share (weight)": (lambda w: mixed(0.0, 1, w, 1.0), [(w,) for w in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3)]),
    "cosine + IDF coverage + BM25 share + coverage^4": (
        mixed,
        [(a, p, b, c) for a in (0.0, 0.25, 0.5, 1.0) for p in (2, 4) for b in (0.0, 0.05, 0.1, 0.2) for c in (0.0, 0.5, 1.0)],
    ),
    "z-scored BM25 + cosine (keyword weight)": (lambda w: standardised(w), [(w,) for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)]),
    "z-scored + coverage^4 (keyword weight, coverage weight)": (
        standardised,
        [(w, c) for w in (0.2, 0.3, 0.4, 0.5, 0.6) for c in (0.5, 1.0, 2.0, 3.0)],
    ),
    "RRF (k, keyword weight)": (rrf, [(k, w) for k in (10, 30, 60) for w in (0.6, 0.8, 1.0, 1.2, 1.4)]),
    "today + standouts (keyword weight, vector weight)": (
        standouts,
        [(k, v) for k in (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15) for v in (0.0, 0.05, 0.1, 0.15)],
    ),
}


def ranked(case: Case, f: Fusion) -> list[str]:
    order = np.argsort(-f(case), kind="stable")[:DEPTH]
    return [case.candidates[i].id for i in order]


def figures(cases: list[Case], f: Fusion) -> dict[tuple[str, str], dict[str, float]]:
    """{(set, class or "all"): mean figures}."""
    cells: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for case in cases:
        got = score(ranked(case, f), case.relevant)
        cells[(case.set, case.cls)].append(got)
        cells[(case.set, "all")].append(got)
    return {key: {m: sum(r[m] for r in rows) / len(rows) for m in rows[0]} for key, rows in cells.items()}


HALVES: dict[str, Fusion] = {"keyword": lambda c: -c.kw_rank, "vector": lambda c: -c.vec_rank}


def objective(cases: list[Case], f: Fusion, halves: list[dict]) -> float:
    """What a fit maximises: the mean over sets of (recall@10 + any@5 + MRR) / 3, less ten times
    how far any class of the hard set falls more than 0.02 under its better half at any@5 (the
    recall-quality tests' own rule). ``halves``: the two halves' figures on the same cases."""
    got = figures(cases, f)
    sets = {s for s, _ in got}
    mean = sum((got[(s, "all")]["R@10"] + got[(s, "all")]["any@5"] + got[(s, "all")]["MRR"]) / 3 for s in sets) / len(sets)
    hard = [k for k in got if k[0] == "hard" and k[1] != "all"]
    short = sum(max(0.0, max(h[k]["any@5"] for h in halves) - 0.02 - got[k]["any@5"]) for k in hard)
    return mean - 10 * short


# --- a linear score over every channel, fitted on pairs ------------------------------------

FEATURES = ("cos_z", "bm25_z", "coverage4", "both", "cos", "bm25_share")


def features(c: Case) -> np.ndarray:
    both = ((c.kw_rank < 10**6) & (c.vec_rank < 10**6)).astype(float)
    return np.column_stack([c.cos_z, c.bm25_z, c.coverage**4, both, c.cos, c.bm25_share])


def fit_linear(cases: list[Case], l2: float = 0.01, steps: int = 300) -> np.ndarray:
    """Pairwise logistic regression: for every question, each evidence candidate against each
    other candidate; every set weighs the same, and every question within its set."""
    diffs, weights = [], []
    per_set: dict[str, int] = defaultdict(int)
    for c in cases:
        per_set[c.set] += 1
    for c in cases:
        x = features(c)
        good = [i for i, cand in enumerate(c.candidates) if cand.id in c.relevant]
        bad = [i for i, cand in enumerate(c.candidates) if cand.id not in c.relevant]
        if not good or not bad:
            continue
        d = (x[good][:, None, :] - x[bad][None, :, :]).reshape(-1, x.shape[1])
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / (len(d) * per_set[c.set])))
    X, w = np.vstack(diffs), np.concatenate(weights)
    w = w / w.sum()
    theta = np.zeros(X.shape[1])
    for _ in range(steps):  # Newton's method: a few steps converge
        p = 1 / (1 + np.exp(-(X @ theta)))
        grad = X.T @ (w * (p - 1)) + l2 * theta
        hess = (X * (w * p * (1 - p))[:, None]).T @ X + l2 * np.eye(len(theta))
        theta -= np.linalg.solve(hess, grad)
        if np.abs(grad).max() < 1e-9:
            break
    return theta


def linear(theta: np.ndarray) -> Fusion:
    return lambda c: c.exact * 100 + features(c) @ theta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join([*LOADERS, "hard"]))
    parser.add_argument("--sources", type=Path, default=SOURCES_DIR)
    parser.add_argument("--per-class", type=int, default=10)
    args = parser.parse_args()
    cases: list[Case] = []
    for name in args.sets.split(","):
        cases += collect(hard_set() if name.strip() == "hard" else load(name, args.sources, args.per_class))
    sets = sorted({c.set for c in cases})
    report: dict[str, dict] = {name + " half": figures(cases, f) for name, f in HALVES.items()}
    report["before (cosine + coverage^4)"] = figures(cases, today)
    folds = {left_out: [c for c in cases if c.set != left_out] for left_out in sets}
    fold_halves = {left_out: [figures(fit, h) for h in HALVES.values()] for left_out, fit in folds.items()}
    all_halves = [report[name + " half"] for name in HALVES]
    for family, (make, grid) in FAMILIES.items():
        held_out: dict = {}
        chosen = []
        for left_out, fit in folds.items():
            params = max(grid, key=lambda p: objective(fit, make(*p), fold_halves[left_out]))
            chosen.append(f"{left_out}: {params}")
            held_out.update(figures([c for c in cases if c.set == left_out], make(*params)))
        best = max(grid, key=lambda p: objective(cases, make(*p), all_halves))
        report[f"{family}, held out"] = held_out
        print(f"{family}: fitted leaving each set out -> {'; '.join(chosen)}; on all sets {best}")
    held_out = {}
    for left_out in sets:
        theta = fit_linear([c for c in cases if c.set != left_out])
        held_out.update(figures([c for c in cases if c.set == left_out], linear(theta)))
    report["pairwise logistic regression over " + ", ".join(FEATURES) + ", held out"] = held_out
    print(f"pairwise logistic regression on all sets: {dict(zip(FEATURES, fit_linear(cases).round(3), strict=True))}")
    report["shipped"] = figures(cases, shipped)
    print()
    keys = sorted({k for fig in report.values() for k in fig})
    print("| set, class | " + " | ".join(report) + " |")
    print("|---|" + "---:|" * len(report))
    for key in keys:
        cells = []
        for fig in report.values():
            v = fig.get(key)
            cells.append("" if v is None else f"{v['R@10']:.3f} / {v['any@5']:.2f} / {v['MRR']:.2f}")
        print(f"| {key[0]}, {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
