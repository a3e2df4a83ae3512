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


def test_a_word_counted_before_a_commit_is_counted_again_after_it(backend_url):
    """How many episodes hold a word is kept until the next commit: a tag searched while no episode
    held it, then written behind more than a window of newer matches, is found after the commit."""
    rng = random.Random(11)
    # "find" in every sixth episode: in more than a window's worth, too few to be cut as common.
    filler = [
        {"input": f"{'find ' if i % 6 == 0 else ''}{rng.randrange(10**6)} w{rng.randrange(500)}", "output": "ok"} for i in range(7200)
    ]
    with MemoryStore.open(backend_url, embedder=None) as s, MemoryStore.open(backend_url, embedder=None) as writer:
        s.remember_many(filler, user_id="alice")
        assert not [h for h in s.recall("find tag77777", user_id="alice", mode="keyword", limit=5) if "tag77777" in h.episode.input]
        writer.remember("find tag77777", "ok", user_id="alice")
        writer.remember_many(filler, user_id="alice")  # the tag is now behind 1,200 newer matches of "find"
        hits = s.recall("find tag77777", user_id="alice", mode="keyword", limit=5)
        assert hits and "tag77777" in hits[0].episode.input


def test_both_engines_judge_a_common_word_by_the_same_rule(backend_url):
    """One rule on every engine: a word is cut from a long query when it is in more than a fifth
    of the tenant's recent episodes (those a keyword query ranks). A word that filled the tenant's
    early episodes and none since is kept, one in every other recent episode is cut (PostgreSQL
    judged by the share of all episodes, and cut the first too)."""
    from store.testing import backend, keyword_index, tenant

    early = [{"input": f"alpha early note {i}", "output": "ok"} for i in range(600)]
    recent = [{"input": f"{'beta' if i % 2 else 'gamma'} recent note {i}", "output": "ok"} for i in range(600)]
    with MemoryStore.open(backend_url, embedder=None) as s:
        s.remember_many(early, user_id="alice")
        s.remember_many(recent, user_id="alice")
        index, alice = keyword_index(s), tenant(s, "alice")
        with backend(s).read() as conn:
            kept = index.expression(conn, alice, ["alpha", "zebra"], min_prefix=None, cut_common=True) or ""
            cut = index.expression(conn, alice, ["beta", "zebra"], min_prefix=None, cut_common=True) or ""
    assert "alpha" in kept, kept  # 600 of the tenant's 1,200 episodes, none of the recent 600
    assert "beta" not in cut and "zebra" in cut, cut  # every other one of the recent 600
