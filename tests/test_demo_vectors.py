"""`memlens demo` keeps the demo's vectors between builds (``build_demo_store(vector_cache=...)``):
a second build with the same model embeds nothing and writes the same store; another model, or
a damaged or hostile file, never gets a vector it did not compute."""

from __future__ import annotations

import numpy as np
import pytest

from store.demo import DEMO_NOW, build_demo_store
from store.demo_vectors import ReusedVectors
from store.embedding import FakeEmbedder
from store.tiers.common import set_id_source
from store.validation import set_clock

from .conftest import dump


class CountingFake(FakeEmbedder):
    """Counts the texts it embeds, one by one (the probe is one)."""


class OtherFake(FakeEmbedder):
    """Same name and dimension as the fake, other vectors: another version of "the same" model."""

    def embed(self, texts):
        return -super().embed(texts)


@pytest.fixture(autouse=True)
def stable():
    set_clock(lambda: DEMO_NOW)
    yield
    set_clock(None)
    set_id_source(None)


def build(path, embedder, cache=None) -> list[str]:
    counter = iter(range(1, 1 << 30))
    set_id_source(lambda: f"{next(counter):032x}")
    build_demo_store(path, size="compact", embedder=embedder, vector_cache=cache, force=True).close()
    return dump(path)


def test_a_second_build_embeds_nothing_and_writes_the_same_store(tmp_path):
    plain = build(tmp_path / "plain.db", FakeEmbedder())
    first_model, second_model = CountingFake(), CountingFake()
    first = build(tmp_path / "first.db", first_model, tmp_path / "cache")
    second = build(tmp_path / "second.db", second_model, tmp_path / "cache")
    assert first_model.texts_embedded > 50  # every text, once, plus the probe
    assert second_model.texts_embedded == 1  # the probe that identifies the model, nothing else
    assert first == plain and second == plain


def test_another_model_under_the_same_name_never_gets_these_vectors(tmp_path):
    build(tmp_path / "first.db", FakeEmbedder(), tmp_path / "cache")
    other = OtherFake()
    assert other.name == FakeEmbedder().name and other.dim == FakeEmbedder().dim
    reused = build(tmp_path / "other.db", other, tmp_path / "cache")
    assert other.texts_embedded > 50
    assert reused == build(tmp_path / "plain.db", OtherFake())
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 2  # each model its own file


@pytest.mark.parametrize("damage", ["garbage", "truncated", "pickled", "wrong shape"])
def test_a_damaged_or_hostile_file_is_ignored_and_replaced(tmp_path, damage):
    cache = tmp_path / "cache"
    build(tmp_path / "first.db", FakeEmbedder(), cache)
    (kept,) = cache.glob("*.npz")
    if damage == "garbage":
        kept.write_bytes(b"not a numpy file at all")
    elif damage == "truncated":
        kept.write_bytes(kept.read_bytes()[:5000])
    elif damage == "pickled":  # np.load would run code from a pickle: it must never be unpickled
        with kept.open("wb") as out:
            np.savez(out, keys=np.array([object()], dtype=object), vectors=np.array([object()], dtype=object))
    else:
        with kept.open("wb") as out:
            np.savez(out, keys=np.zeros((3, 32), np.uint8), vectors=np.ones((3, 7), np.float32))
    model = CountingFake()
    assert build(tmp_path / "again.db", model, cache) == build(tmp_path / "plain.db", FakeEmbedder())
    assert model.texts_embedded > 50
    third = CountingFake()
    build(tmp_path / "third.db", third, cache)
    assert third.texts_embedded == 1  # the damaged file was replaced by a good one


def test_a_cache_that_cannot_be_written_costs_time_not_the_store(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    assert build(tmp_path / "demo.db", FakeEmbedder(), blocker / "cache") == build(tmp_path / "plain.db", FakeEmbedder())


def test_texts_are_looked_up_by_content_not_by_position(tmp_path):
    reused = ReusedVectors(FakeEmbedder(), tmp_path)
    a, b = reused.embed(["alpha beta", "gamma"]), reused.embed(["gamma", "alpha beta", "gamma"])
    assert np.array_equal(b, a[[1, 0, 1]])
    assert reused.embedded == 2 and reused.embed([]).shape == (0, reused.dim)


class CountingModel:
    """The real default model, counting the texts it is asked to embed."""

    def __init__(self):
        from store.recall.indexing import make_embedder

        self.model = make_embedder("default")
        self.name, self.dim, self.texts_embedded = self.model.name, self.model.dim, 0

    @property
    def is_warm(self):
        return self.model.is_warm

    def warm(self):
        self.model.warm()

    def embed(self, texts):
        self.texts_embedded += len(texts)
        return self.model.embed(texts)


@pytest.mark.model
def test_the_first_full_demo_build_finds_the_shipped_vectors_of_the_default_model(tmp_path):
    """A fresh install has no cache: the package's vectors for the default model answer, and
    they are the model's own (a sample embedded live matches them)."""
    from store import MemoryStore

    model = CountingModel()
    path = tmp_path / "demo.db"
    build_demo_store(path, size="full", embedder=model, vector_cache=tmp_path / "empty-cache", force=True).close()
    assert model.texts_embedded == 1  # the probe that identifies the model, nothing else
    with MemoryStore.open(path, embedder=model.model) as store:
        hit = store.recall("vegetarian food in Lisbon", user_id="alice", limit=1, mode="vector")[0]
    shipped = ReusedVectors(model.model, tmp_path / "empty-cache").embed([hit.text])[0]
    assert np.allclose(shipped, model.model.embed([hit.text])[0], atol=1e-4)
