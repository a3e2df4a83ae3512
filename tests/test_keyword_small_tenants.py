"""A small tenant's keyword search runs over an index of its own episodes (SQLite), so its cost
follows the tenant, not the store: the answers must be the store index's exactly, and never older
than the last commit of any process."""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import event

from store import MemoryStore, testing
from store.embedding import FakeEmbedder

WORDS = ["invoice", "berlin", "meeting", "tuesday", "flight", "lunch", "report", "budget", "train", "hotel", "in", "the"]
WORDS += [f"w{i}" for i in range(300)]
WEIGHTS = [6.0] * 12 + [1.0] * 300
START = datetime(2026, 1, 1, tzinfo=UTC)


def episodes(rng: random.Random, n: int) -> list[dict]:
    return [
        {
            "input": " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(3, 16))),
            "output": rng.choice(["ok", "done", "noted the budget"]),
            "session_id": f"s{rng.randint(0, 3)}",
            "occurred_at": START + timedelta(hours=rng.randint(0, 2000)),
        }
        for _ in range(n)
    ]


@pytest.fixture
def shared(tmp_path) -> Path:
    """carol and alice small, bob past the size where a tenant is searched in the store's index."""
    rng = random.Random(11)
    path = tmp_path / "shared.db"
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        s.remember_many(episodes(rng, 40), user_id="carol")
        s.remember_many(episodes(rng, 400), user_id="alice")
        s.remember_many(episodes(rng, 1100), user_id="bob")
    return path


def searches(rng: random.Random, n: int) -> list[dict]:
    found = []
    for _ in range(n):
        words = rng.sample(WORDS[:40], rng.randint(1, 3))
        prefix = rng.random() < 0.3
        if prefix:
            words[-1] = words[-1][: rng.randint(1, len(words[-1]))]
        since = START + timedelta(hours=rng.randint(0, 1500)) if rng.random() < 0.3 else None
        until = START + timedelta(hours=rng.randint(500, 2100)) if rng.random() < 0.3 else None
        found.append(
            {
                "query": " ".join(words),
                "prefix": prefix,
                "session_id": rng.choice([None, None, "s1", "s2"]),
                "time_range": (since, until) if since or until else None,
                "mode": rng.choice(["keyword", "keyword", "hybrid"]),
                "limit": rng.choice([1, 5, 10, 40]),
            }
        )
    return found


def answers(s: MemoryStore, user: str, asked: list[dict]) -> list[list[tuple[str, float | None, float]]]:
    return [[(h.id, h.scores.keyword, round(h.scores.score, 9)) for h in s.recall(user_id=user, **a)] for a in asked]


@pytest.mark.parametrize("user", ["carol", "alice", "bob"])
def test_a_small_tenants_own_index_answers_as_the_store_index_does(shared, user):
    asked = searches(random.Random(hash(user) % 1000), 120)
    with MemoryStore.open(shared, embedder=FakeEmbedder()) as own, MemoryStore.open(shared, embedder=FakeEmbedder()) as whole:
        testing.search_every_tenant_in_the_store_index(whole)
        mine, theirs = answers(own, user, asked), answers(whole, user, asked)
    assert sum(map(len, mine)) > 200  # the searches find things
    for a, m, t in zip(asked, mine, theirs, strict=True):
        assert [(i, None if k is None else round(k, 9), sc) for i, k, sc in m] == [
            (i, None if k is None else round(k, 9), sc) for i, k, sc in t
        ], a


def fts_statements(s: MemoryStore) -> list[str]:
    seen: list[str] = []
    event.listen(testing.backend(s).engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def test_a_small_tenant_is_searched_without_the_store_index_and_a_large_one_with_it(shared):
    with MemoryStore.open(shared, embedder=FakeEmbedder()) as s:
        seen = fts_statements(s)
        s.recall("invoice berl", user_id="alice", mode="hybrid", prefix=True)
        assert not [sql for sql in seen if "episodes_fts" in sql]
        s.recall("invoice berl", user_id="bob", mode="hybrid", prefix=True)
        assert [sql for sql in seen if "episodes_fts MATCH" in sql]


FORGET = """
import sys
from store import MemoryStore
with MemoryStore.open(sys.argv[1], embedder=None) as s:
    s.forget(user_id=sys.argv[2], session_id=sys.argv[3], actor="test")
"""


def test_a_kept_index_never_answers_after_another_process_commits(shared):
    """Erased in another process: the next search does not find it; written: it does."""
    with MemoryStore.open(shared, embedder=FakeEmbedder()) as s:
        before = {h.id: h.episode.session_id for h in s.recall("budget", user_id="alice", mode="keyword", limit=50)}
        assert "s1" in before.values()
        subprocess.run([sys.executable, "-c", FORGET, str(shared), "alice", "s1"], check=True, timeout=120)
        after = {h.id: h.episode.session_id for h in s.recall("budget", user_id="alice", mode="keyword", limit=50)}
        assert after and "s1" not in after.values()
        with MemoryStore.open(shared, embedder=None) as other:
            other.remember("a zeppelin invoice", output="ok", user_id="alice")
        (hit,) = s.recall("zeppelin", user_id="alice", mode="keyword")
        assert hit.episode.input == "a zeppelin invoice"
        assert not s.recall("zeppelin", user_id="carol", mode="keyword")


def test_a_time_range_holds_its_start_and_not_its_end_on_both_ways(tmp_path):
    path = tmp_path / "edges.db"
    at = [START + timedelta(hours=h) for h in range(4)]
    with MemoryStore.open(path, embedder=None) as s:
        s.remember_many([{"input": f"budget {i}", "output": "ok", "occurred_at": t} for i, t in enumerate(at)], user_id="dana")
        s.remember("budget elsewhere", output="ok", user_id="erin")
    for whole in (False, True):
        with MemoryStore.open(path, embedder=None) as s:
            if whole:
                testing.search_every_tenant_in_the_store_index(s)
            found = s.recall("budget", user_id="dana", mode="keyword", limit=10, time_range=(at[1], at[3]))
            assert sorted(h.episode.input for h in found) == ["budget 1", "budget 2"], whole


def test_an_erasure_lets_go_of_the_tenants_kept_index_at_once(shared):
    """The in-memory copy goes with the erasure itself, not at the next search after it."""
    with MemoryStore.open(shared, embedder=None) as s:
        kept = testing.keyword_index(s).small_tenants.kept_tenants  # type: ignore[attr-defined]
        s.recall("budget", user_id="alice", mode="keyword")
        s.recall("budget", user_id="carol", mode="keyword")
        alice, carol = testing.tenant(s, "alice").key, testing.tenant(s, "carol").key
        assert set(kept()) == {alice, carol}
        s.forget(user_id="alice", actor="test")
        assert alice not in kept()
