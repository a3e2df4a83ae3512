"""Integration tests with the real all-MiniLM-L6-v2 model (no fake embedder here)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from store import MemoryStore
from store.embedding import LocalModelEmbedder, default_model_dir
from store.errors import ModelNotAvailableError

pytestmark = pytest.mark.model

QUALITY = json.loads((Path(__file__).parent / "data" / "recall_quality.json").read_text())
FLOOR_RECALL_AT_5 = 0.75
FLOOR_MRR = 0.6


@pytest.fixture(scope="module")
def quality_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("quality") / "q.db"
    store = MemoryStore.open(path)
    ids = {}
    for key, text in QUALITY["memories"].items():
        ids[store.remember(text, user_id="u").id] = key
    yield store, ids
    store.close()


def evaluate(store, ids, mode):
    hits_at_5, reciprocal = 0, 0.0
    for case in QUALITY["queries"]:
        ranked = [ids[h.episode.id] for h in store.recall(case["q"], user_id="u", limit=5, mode=mode)]
        if case["expected"] in ranked:
            hits_at_5 += 1
            reciprocal += 1.0 / (ranked.index(case["expected"]) + 1)
    n = len(QUALITY["queries"])
    return hits_at_5 / n, reciprocal / n


def test_hybrid_recall_meets_the_floor_that_keyword_search_misses(quality_store):
    store, ids = quality_store
    assert store.embedder.active_backend == "onnx"
    results = {mode: evaluate(store, ids, mode) for mode in ("hybrid", "vector", "keyword")}
    print("\nrecall quality (recall@5, MRR):", {m: (round(r, 3), round(q, 3)) for m, (r, q) in results.items()})
    hybrid_recall, hybrid_mrr = results["hybrid"]
    keyword_recall, keyword_mrr = results["keyword"]
    assert hybrid_recall >= FLOOR_RECALL_AT_5 and hybrid_mrr >= FLOOR_MRR
    assert keyword_recall < FLOOR_RECALL_AT_5


def test_onnx_vectors_match_the_sentence_transformers_reference():
    from sentence_transformers import SentenceTransformer

    texts = ["User is allergic to cats.", "Quel temps fait-il à Lisbonne ?", "x", "long " * 400]
    fast = LocalModelEmbedder(backend="onnx").embed(texts)
    reference = SentenceTransformer(str(default_model_dir()), device="cpu").encode(texts, normalize_embeddings=True)
    assert fast.dtype == np.float32 and fast.shape == (4, 384)
    assert np.min(np.sum(fast * reference, axis=1)) >= 0.9999


def test_loading_never_reaches_for_a_hub():
    LocalModelEmbedder().warm()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


def test_a_missing_model_says_what_to_do(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="config.json"):
        LocalModelEmbedder(tmp_path / "no-model").warm()


def test_a_model_directory_can_be_configured(tmp_path):
    embedder = LocalModelEmbedder(default_model_dir(), name="my-minilm")
    with MemoryStore.open(tmp_path / "m.db", embedder=embedder) as store:
        store.remember("the cat sat on the mat", user_id="u")
        assert store.stats().embedding_model == "my-minilm"
        assert store.recall("a kitten resting on a rug", user_id="u", mode="vector")[0].scores.vector > 0.4
