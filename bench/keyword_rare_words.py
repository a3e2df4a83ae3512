"""Keyword search with a rare word behind a common one: is the rare word's episode found first,
and what does ranking every match of a rare word cost?

    python bench/keyword_rare_words.py            # 100k episodes in one tenant, SQLite
    python bench/keyword_rare_words.py --episodes 20000

One tenant; "find" is in 10% of its episodes and a tag ("tag02507") in one old episode every
2,500. The queries "find the note tagged <tag>" are timed (keyword mode, as while the model
warms); the baseline is the same queries with the tag replaced by a word of 0.5% of the
episodes, which is rare enough to be ranked in full too, and "find" alone, which is not.
Ratio: p50 against "find" alone, in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import MemoryStore  # noqa: E402


def build(path: Path, episodes: int) -> list[int]:
    rng = random.Random(3)
    vocabulary = [f"w{i}" for i in range(3000)]
    rows = []
    for i in range(episodes):
        words = [rng.choice(vocabulary) for _ in range(15)]
        if i % 10 == 0:
            words.append("find")
        if i % 2500 == 7:
            words.append(f"tag{i:05d}")
        rows.append({"input": " ".join(words), "output": "ok", "session_id": f"s{i % 30}"})
    with MemoryStore.open(path, embedder=None) as store:
        for start in range(0, len(rows), 10_000):
            store.remember_many(rows[start : start + 10_000], user_id="alice")
    return [i for i in range(episodes) if i % 2500 == 7]


def timed(store: MemoryStore, queries: list[str], rounds: int = 3) -> tuple[float, float, list[list[str]]]:
    times, firsts = [], []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            hits = store.recall(query, user_id="alice", mode="keyword", limit=10)
            times.append((time.perf_counter() - start) * 1000)
            firsts.append([h.episode.input for h in hits[:1]])
    times.sort()
    return times[len(times) // 2], times[round(0.95 * (len(times) - 1))], firsts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rare.db"
        tagged = build(path, args.episodes)
        with MemoryStore.open(path, embedder=None) as store:
            tags = [f"tag{i:05d}" for i in tagged]
            cases = {
                '"find" alone (baseline)': ["find" for _ in tags],
                '"find the note tagged" + a word of 0.5%': [f"find the note tagged w{i}" for i in range(len(tags))],
                '"find the note tagged" + a tag of one episode': [f"find the note tagged {tag}" for tag in tags],
            }
            results = {label: timed(store, queries) for label, queries in cases.items()}
    base = results['"find" alone (baseline)'][0]
    load = os.getloadavg()[0]
    print(f"# keyword search, a rare word behind a common one ({args.episodes:,} episodes, SQLite, load {load:.2f})\n")
    print("| queries | p50 ms | p95 ms | ratio (p50) | tagged episode first |")
    print("|---|---|---|---|---|")
    for label, (p50, p95, firsts) in results.items():
        found = ""
        if "tag of one" in label:
            hits = sum(1 for first, tag in zip(firsts, cases[label] * 3, strict=True) if first and tag.split()[-1] in first[0])
            found = f"{hits} of {len(firsts)}"
        print(f"| {label} | {p50:.2f} | {p95:.2f} | {p50 / base:.2f}x | {found} |")


if __name__ == "__main__":
    main()
