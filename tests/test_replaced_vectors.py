"""A replaced row never keeps its old vector, in the process that replaced it or any other.

SQLite hands the newest row key out again, so replacing the newest episode deletes and
re-inserts a row with the key it had: a cache that compared keys alone kept ranking the new
text by the old text's vector (a search for the retracted words found it at 0.87 similarity).
"""

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from store import MemoryStore
from store.embedding import FakeEmbedder

ROOT = str(Path(__file__).resolve().parent.parent)
RETRACTED = "zebra giraffe secret"

REPLACE_NEWEST = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from store import MemoryStore
    from store.embedding import FakeEmbedder
    with MemoryStore.open({url!r}, embedder=FakeEmbedder()) as s:
        s.remember("calm ocean morning", id="x", user_id="alice", on_duplicate="replace")
    """
)


def vector_scores(store: MemoryStore) -> dict[str, float]:
    return {h.text: round(h.scores.vector, 6) for h in store.recall(RETRACTED, user_id="alice", mode="vector")}


def fresh_scores(url: str) -> dict[str, float]:
    with MemoryStore.open(url, embedder=FakeEmbedder()) as fresh:
        return vector_scores(fresh)


def remember_and_warm(store: MemoryStore) -> None:
    store.remember("other stuff entirely", user_id="alice")
    store.remember(f"{RETRACTED} words", id="x", user_id="alice")  # the newest row
    assert max(vector_scores(store).values()) > 0.7  # the matrix is loaded, with the old vector


def test_the_writer_ranks_a_replaced_newest_episode_by_its_new_text(backend_url):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as s:
        remember_and_warm(s)
        s.remember("calm ocean morning", id="x", user_id="alice", on_duplicate="replace")
        seen = vector_scores(s)
    assert seen == fresh_scores(backend_url)
    assert max(seen.values()) == 0.0


def test_another_process_ranks_a_replaced_newest_episode_by_its_new_text(backend_url):
    with MemoryStore.open(backend_url, embedder=FakeEmbedder()) as warm:  # the inspector, say
        remember_and_warm(warm)
        subprocess.run([sys.executable, "-c", REPLACE_NEWEST.format(root=ROOT, url=backend_url)], check=True)
        seen = vector_scores(warm)
    assert seen == fresh_scores(backend_url)
    assert max(seen.values()) == 0.0


def test_a_replacement_after_an_erasure_still_gets_a_new_version(db_path):
    """The erased rows' keys are free again; the versions the store hands out never go back."""
    url = f"sqlite:///{db_path}"
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        remember_and_warm(s)
        s.forget(user_id="alice", actor="test")
        remember_and_warm(s)
        s.remember("calm ocean morning", id="x", user_id="alice", on_duplicate="replace")
        seen = vector_scores(s)
    assert seen == fresh_scores(url)
    assert max(seen.values()) == 0.0


@pytest.mark.parametrize("planted", ["not a number", "-3", "99999999999999999999999"])
def test_a_high_water_mark_memlens_never_wrote_is_ignored(db_path, planted):
    url = f"sqlite:///{db_path}"
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        s.remember("first", user_id="alice")
    with sqlite3.connect(db_path) as raw:
        raw.execute("INSERT OR REPLACE INTO memlens_meta (key, value) VALUES ('rowid_high:vectors', ?)", (planted,))
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        remember_and_warm(s)
        s.remember("calm ocean morning", id="x", user_id="alice", on_duplicate="replace")
        assert max(vector_scores(s).values()) == 0.0
