"""The keyword indexes' one cache (store.backend.shared.DataVersionCache): a value is used only
at the data version it was computed at, a newer version replaces the older one's values whole,
and a reader on an older version computes without keeping."""

from __future__ import annotations

from store.backend.shared import DataVersionCache

MISSING = DataVersionCache.MISSING


def test_a_value_is_used_at_its_version_only():
    cache = DataVersionCache()
    assert cache.kept(3, "k", lambda: "computed at 3") == "computed at 3"
    assert cache.kept(3, "k", lambda: "not asked") == "computed at 3"
    assert cache.get(4, "k") is MISSING  # a commit since: computed again
    assert cache.kept(4, "k", lambda: "computed at 4") == "computed at 4"
    assert cache.get(3, "k") is MISSING  # the older version's values are gone whole


def test_a_reader_on_an_older_version_computes_without_keeping():
    cache = DataVersionCache()
    cache.keep(5, {"a": 1})
    assert cache.kept(4, "a", lambda: "old reader") == "old reader"
    assert cache.get(5, "a") == 1 and cache.get(4, "a") is MISSING


def test_no_version_keeps_nothing_and_the_entries_are_capped():
    cache = DataVersionCache(max_entries=2)
    assert cache.kept(None, "a", lambda: 1) == 1 and cache.get(None, "a") is MISSING
    cache.keep(1, {"a": 1, "b": 2, "c": 3})
    cache.keep(1, {"d": 4})
    assert [cache.get(1, k) for k in "abcd"] == [1, 2, MISSING, MISSING]


def test_false_and_none_are_values_not_misses():
    cache = DataVersionCache()
    cache.keep(1, {"large": False, "nothing": None})
    assert cache.get(1, "large") is False and cache.get(1, "nothing") is None
