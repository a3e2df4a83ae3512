"""Keyword search ranks every match of a rare word: the newest matches of a query can all be a
common word's, and an id or a tag written before them ("find the note tagged #48213") was cut
away with the common word's older matches (32 of 40 such queries found at 100k episodes)."""

import random

from store import MemoryStore

EPISODES, COMMON_EVERY = 12_000, 10  # "find" in 1,200 episodes: more than are ranked as the newest


def test_a_rare_word_behind_a_common_one_is_found_first(backend_url):
    rng = random.Random(7)
    words = [f"w{i}" for i in range(2000)]
    tagged = {i: f"tag{i:05d}" for i in range(5, EPISODES, 1500)}
    rows = []
    for i in range(EPISODES):
        text = " ".join(rng.choice(words) for _ in range(8))
        if i % COMMON_EVERY == 0:
            text += " find"
        if i in tagged:
            text += f" {tagged[i]}"
        rows.append({"input": text, "output": "ok"})
    with MemoryStore.open(backend_url, embedder=None) as s:
        for start in range(0, EPISODES, 4000):
            s.remember_many(rows[start : start + 4000], user_id="alice")
        s.remember_many([{"input": f"find {tag}", "output": "ok"} for tag in tagged.values()], user_id="bob")
        for i, tag in tagged.items():
            hits = s.recall(f"find the note tagged {tag}", user_id="alice", mode="keyword", limit=5)
            assert hits and tag in hits[0].episode.input, (i, tag, [h.episode.input for h in hits])
            assert all(h.episode.user_id == "alice" for h in hits)
        # A word being typed (a prefix) is never taken for a rare one: it can expand to many words.
        assert s.recall("find w1", user_id="alice", mode="keyword", limit=5, prefix=True)
