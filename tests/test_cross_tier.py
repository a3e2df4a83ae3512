"""recall(kind="all") ranks episodes, facts, blocks and notes by one score comparable across tiers.

Under reciprocal rank fusion every tier's first hit scored the same (1/61 per list it was in) and
the tie went to the tier listed first, episodes: a memory sharing one stray word with the question
came before the fact, block or note that answers it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import T0

# Each query's best answer, and a memory in another tier that shares a word with the question.
CASES = [
    ("what diet does alice follow", "fact", "alice diet vegetarian"),
    ("who prefers short answers", "block", "alice is a backend developer who prefers short answers"),
    ("which gate does the flight leave from", "scratchpad", "flight to Porto leaves from gate 12 at 7:40"),
    ("when is the dentist booked", "episode", "Booked the dentist for Tuesday at nine"),
]


@pytest.fixture
def tiers(store):
    store.remember_many(
        [
            {"input": "Booked the dentist for Tuesday at nine", "output": "Added to the calendar.", "occurred_at": T0},
            {"input": "Follow up with the landlord about the boiler", "output": "Reminder set.", "occurred_at": T0 + timedelta(minutes=1)},
            {"input": "Short walk to the market after lunch", "output": "Enjoy it.", "occurred_at": T0 + timedelta(minutes=2)},
            {"input": "Fixed the garden gate latch", "output": "Nice.", "occurred_at": T0 + timedelta(minutes=3)},
        ],
        user_id="alice",
    )
    store.add_fact("alice", "diet", "vegetarian", user_id="alice", valid_from=T0)
    store.add_fact("alice", "dentist", "Dr Rao", user_id="alice", valid_from=T0)
    store.update_block("persona", "alice is a backend developer who prefers short answers", user_id="alice")
    store.session("trip", user_id="alice").append_scratchpad("flight to Porto leaves from gate 12 at 7:40")
    return store


@pytest.mark.parametrize("query,kind,text", CASES, ids=[c[1] for c in CASES])
def test_the_best_answer_comes_first_whatever_its_tier(tiers, query, kind, text):
    hits = tiers.recall(query, user_id="alice", kind="all", limit=5)
    assert hits[0].kind == kind and text in hits[0].text, [(h.kind, h.text, h.scores.score) for h in hits]
    # Several tiers compete in every case, and the order is the score's, not the tiers'.
    assert len({h.kind for h in hits}) >= 2
    assert [h.scores.score for h in hits] == sorted((h.scores.score for h in hits), reverse=True)


def test_first_hits_of_different_tiers_no_longer_tie(tiers):
    hits = tiers.recall("what diet does alice follow", user_id="alice", kind="all", limit=5)
    firsts = {}
    for h in hits:
        firsts.setdefault(h.kind, h.scores.score)
    assert len(set(firsts.values())) == len(firsts), firsts


def test_vector_mode_ranks_across_tiers_by_cosine(tiers):
    hits = tiers.recall("what diet does alice follow", user_id="alice", kind="all", limit=5, mode="vector")
    assert hits[0].kind == "fact"
    assert [h.scores.score for h in hits] == [h.scores.vector for h in hits]
    assert [h.scores.vector for h in hits] == sorted((h.scores.vector for h in hits), reverse=True)
