"""Listing the tenants of a large store: every name without counting, and the counts of some."""

from __future__ import annotations

import pytest

from store import MemoryStore
from store.errors import InvalidInputError


def test_names_and_counts_of_chosen_tenants_agree_with_the_full_listing(backend_url):
    with MemoryStore.open(backend_url, embedder=None) as s:
        for i, user in enumerate(["alice", "bob", "carol", None, "dave"]):
            s.remember_many([{"input": f"note {n}", "output": "ok"} for n in range(i + 1)], user_id=user)
        s.add_fact("user", "likes", "tea", user_id="bob")
        every = s.tenants()
        assert s.tenant_names() == [t.user_id for t in every]
        chosen = s.tenants(user_ids=["bob", "zed", None, "bob"])  # one unknown, one twice
        assert chosen == [t for t in every if t.user_id in ("bob", None)]
        assert [t.counts.episodes for t in chosen] == [t.counts.episodes for t in every if t.user_id in ("bob", None)]
        assert s.tenants(user_ids=[]) == []


def test_more_chosen_tenants_than_one_statement_binds(backend_url):
    with MemoryStore.open(backend_url, embedder=None) as s:
        s.remember("hello", "ok", user_id="alice")
        asked = [f"nobody{i}" for i in range(2500)] + ["alice"]
        (alice,) = s.tenants(user_ids=asked)
        assert alice.user_id == "alice" and alice.counts.episodes == 1


@pytest.mark.parametrize("user_ids", ["alice", b"alice", 7, ["alice", 7], [" alice"]])
def test_a_malformed_choice_is_a_typed_error(store, user_ids):
    store.remember("hello", "ok", user_id="alice")
    with pytest.raises(InvalidInputError):
        store.tenants(user_ids=user_ids)
