"""A query's vector is kept for the same text only: searching the same words again (the
inspector's compare mode, a query typed again) asks the model once, and any other string,
however close, is encoded anew. Results are the same either way."""

from __future__ import annotations

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.recall.indexing import QUERY_VECTORS_KEPT


class Counting(FakeEmbedder):
    def __init__(self):
        super().__init__()
        self.asked: list[str] = []

    def embed(self, texts):
        self.asked += list(texts)
        return super().embed(texts)


def test_the_same_query_text_is_encoded_once_and_no_other(db_path):
    model = Counting()
    with MemoryStore.open(db_path, embedder=model) as s:
        s.remember_many(
            [{"input": f"booked a hotel in Lisbon for trip {i}"} for i in range(20)]
            + [{"input": f"the printer jammed on floor {i}"} for i in range(20)],
            user_id="u",
        )
        model.asked.clear()
        first = s.recall("hotel in Lisbon", user_id="u")
        assert s.recall("hotel in Lisbon", user_id="u", mode="vector")
        again = s.recall("hotel in Lisbon", user_id="u")
        assert model.asked == ["hotel in Lisbon"]
        assert [(h.id, h.scores) for h in again] == [(h.id, h.scores) for h in first]
        for other in ("hotel in Lisbon ", "Hotel in Lisbon", "hotel in lisbon", "printer"):
            s.recall(other, user_id="u")
        assert model.asked == ["hotel in Lisbon", "hotel in Lisbon ", "Hotel in Lisbon", "hotel in lisbon", "printer"]


def test_kept_vectors_are_bounded_and_the_oldest_go_first(db_path):
    model = Counting()
    with MemoryStore.open(db_path, embedder=model) as s:
        s.remember("a note about lunch", user_id="u")
        for i in range(QUERY_VECTORS_KEPT + 1):
            s.recall(f"query {i}", user_id="u", mode="vector")
        model.asked.clear()
        s.recall(f"query {QUERY_VECTORS_KEPT}", user_id="u", mode="vector")
        s.recall("query 0", user_id="u", mode="vector")
        assert model.asked == ["query 0"]
