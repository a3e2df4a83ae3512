"""A deterministic corpus of agent memories and queries for the benchmarks, with its real
MiniLM embeddings cached on disk (embedding 100k texts takes minutes on 2 cores)."""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

import numpy as np

SUBJECTS = ["I", "my sister", "my manager", "our team", "my landlord", "the customer", "my doctor", "my son", "my partner", "the client"]
ACTIONS = [
    "wants to book",
    "is worried about",
    "asked me to compare",
    "keeps forgetting",
    "needs help with",
    "complained about",
    "is excited about",
    "wants a refund for",
    "is planning",
    "cannot find",
]
OBJECTS = [
    "a hotel in {city}",
    "the train to {city}",
    "flights to {city}",
    "a vegetarian restaurant in {city}",
    "the {thing} invoice",
    "the broken {thing}",
    "a birthday gift for {name}",
    "the {thing} subscription",
    "a dentist appointment",
    "the quarterly report",
    "the database migration",
    "a running plan for {month}",
    "the lease renewal",
    "the {thing} warranty",
    "a dinner with {name}",
]
CITIES = ["Lisbon", "Porto", "Berlin", "Paris", "Madrid", "Rome", "Oslo", "Vienna", "Prague", "Dublin", "Athens", "Warsaw"]
THINGS = ["laptop", "phone", "car", "heating", "printer", "internet", "gym", "insurance", "bike", "washing machine"]
NAMES = ["Maria", "Tom", "Aisha", "Kenji", "Lena", "Omar", "Priya", "Lucas", "Sofia", "Ivan"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
REPLIES = [
    "I found three options and saved them.",
    "I set a reminder for next week.",
    "Here is a short comparison.",
    "I drafted an email for you.",
    "I checked the prices and they went up slightly.",
    "Done, it is booked.",
]


def _fill(rng: random.Random, template: str) -> str:
    return template.format(city=rng.choice(CITIES), thing=rng.choice(THINGS), name=rng.choice(NAMES), month=rng.choice(MONTHS))


def memories(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = f"{rng.choice(SUBJECTS)} {rng.choice(ACTIONS)} {_fill(rng, rng.choice(OBJECTS))} ({rng.choice(REPLIES)} #{i})"
        out.append(text)
    return out


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = ["what did {s} say about {o}", "{o}", "any notes on {o}?", "remind me about {o}"]
    return [rng.choice(forms).format(s=rng.choice(SUBJECTS), o=_fill(rng, rng.choice(OBJECTS))) for _ in range(n)]


def embeddings(texts: list[str], embedder, cache: Path) -> np.ndarray:
    """Embeddings of ``texts``, computed once and cached by content."""
    key = hashlib.sha256((embedder.name + "\n" + "\n".join(texts)).encode()).hexdigest()[:16]
    path = cache / f"vectors-{len(texts)}-{key}.npy"
    if path.exists():
        return np.load(path)
    # 100k texts took 7.7 minutes with the packaged model on this kind of machine (2 cores).
    print(
        f"computing {len(texts):,} vectors with {embedder.name} (about {len(texts) / 215 / 60:.1f} min), cached in {path}",
        file=sys.stderr,
        flush=True,
    )
    vectors = np.vstack([embedder.embed(texts[i : i + 512]) for i in range(0, len(texts), 512)]).astype(np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


class PrecomputedEmbedder:
    """The real model, answering from precomputed vectors where it has them (same vectors, less waiting)."""

    def __init__(self, real, texts: list[str], vectors: np.ndarray):
        self.real, self.name = real, real.name
        self.known = {t: v for t, v in zip(texts, vectors, strict=True)}

    @property
    def dim(self) -> int:
        return self.real.dim

    @property
    def is_warm(self) -> bool:
        return self.real.is_warm

    def warm(self) -> None:
        self.real.warm()

    def embed(self, texts):
        missing = [t for t in texts if t not in self.known]
        if missing:
            self.known.update(zip(missing, self.real.embed(missing), strict=True))
        return np.vstack([self.known[t] for t in texts])
