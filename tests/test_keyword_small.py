"""Keyword search over blocks and notes (BM25 in memory) and the keyword query's common-word cut:
the same rankings as the straightforward computation, no read transaction held while ranking,
and a tenant's exact keyword hit never hidden by what other tenants write."""

from __future__ import annotations

import math
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import MemoryStore, testing
from store.backend.sqlite.keyword import common_terms
from store.recall import in_memory as search
from store.recall.in_memory import MIN_PREFIX, WORD_PATTERN, bm25_small, query_terms
from store.tenancy import Tenant


def reference_bm25(query: str, documents: dict[int, str], *, prefix_last: bool):
    """BM25 as memlens computed it before, term by term and document by document: quadratic,
    and the definition the fast version must agree with to the last bit."""
    terms = list(dict.fromkeys(query_terms(query)))
    if not terms or not documents:
        return []
    prefix = terms[-1] if prefix_last and len(terms[-1]) >= MIN_PREFIX and not query.endswith(" ") else None
    tokenised = {pk: [w.lower() for w in WORD_PATTERN.findall(doc)] for pk, doc in documents.items()}
    average = sum(len(t) for t in tokenised.values()) / len(tokenised) or 1.0

    def hits(term, words):
        return sum(1 for w in words if w == term or (term == prefix and w.startswith(term)))

    scored = []
    for pk, words in tokenised.items():
        score, matched = 0.0, []
        for term in terms:
            tf = hits(term, words)
            if not tf:
                continue
            df = sum(1 for other in tokenised.values() if hits(term, other))
            idf = math.log(1 + (len(tokenised) - df + 0.5) / (df + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(words) / average))
            matched += [w for w in dict.fromkeys(words) if w == term or (term == prefix and w.startswith(term))]
        if score > 0:
            scored.append((pk, score, list(dict.fromkeys(matched))))
    return sorted(scored, key=lambda item: -item[1])


# A small vocabulary, so words repeat across documents; accents, Greek final sigma, a dotted
# capital I (two characters once lower-cased), digits and underscores; punctuation between.
WORDS = [
    "hotel",
    "hotels",
    "Hotel",
    "hote",
    "lisbon",
    "LISBON",
    "train",
    "trains",
    "a",
    "the",
    "and",
    "naïve",
    "Ärger",
    "ärgerlich",
    "ΟΔΟΣ",
    "οδός",
    "İstanbul",
    "istanbul",
    "x_1",
    "42",
    "café",
    "cafés",
    "hotelier",
]
SEPARATORS = [" ", ", ", ". ", "\n", " - ", "'", "!?", "\t"]
text = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=25).map(
    lambda parts: "".join(w + s for w, s in parts)
)


@settings(max_examples=300, deadline=None)
@given(
    documents=st.dictionaries(st.integers(1, 10_000), text, max_size=12),
    query=text,
    prefix_last=st.booleans(),
    trailing_space=st.booleans(),
)
def test_bm25_small_agrees_with_the_straightforward_computation(documents, query, prefix_last, trailing_space):
    query = query.rstrip() + (" " if trailing_space else "")
    assert bm25_small(query, documents, prefix_last=prefix_last) == reference_bm25(query, documents, prefix_last=prefix_last)


def test_a_prefix_matches_every_word_it_starts():
    documents = {1: "the hotelier runs two hotels", 2: "train to Lisbon", 3: "Hotel California"}
    ranked = bm25_small("cheap hote", documents, prefix_last=True)
    assert {pk: matched for pk, _, matched in ranked} == {1: ["hotelier", "hotels"], 3: ["hotel"]}
    assert bm25_small("cheap hote ", documents, prefix_last=True) == []  # a finished word is exact


# --- no read transaction while ranking -----------------------------------------------------------


def snapshot_held(path) -> bool:
    """Whether some connection holds a read snapshot of the store: then a write followed by a
    WAL truncation (what forget does last) cannot complete. Checked from a connection of its own
    that does not wait."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("INSERT INTO memlens_meta (key, value) VALUES ('probe', 'x')")  # WAL frames: a real change
        conn.execute("DELETE FROM memlens_meta WHERE key = 'probe'")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return busy != 0
    finally:
        conn.close()


@pytest.mark.sqlite_only(reason="the probe reads SQLite's WAL read marks")
def test_the_probe_sees_an_open_read_transaction(store):
    store.update_block("b", "x", user_id="u")
    assert not snapshot_held(store.path)
    with testing.backend(store).read() as conn:
        conn.exec_driver_sql("SELECT count(*) FROM blocks").all()
        assert snapshot_held(store.path)
    assert not snapshot_held(store.path)


@pytest.mark.sqlite_only(reason="the probe reads SQLite's WAL read marks")
def test_blocks_and_notes_are_ranked_after_the_read_transaction_ends(store, monkeypatch):
    store.update_block("persona", "plans trips to Lisbon", user_id="u")
    memory = store.session("s", user_id="u")
    memory.append_scratchpad("train to Lisbon at nine")
    ranked_with_snapshot = []
    real = search.bm25_small

    def ranking(query, documents, *, prefix_last):
        ranked_with_snapshot.append(snapshot_held(store.path))
        return real(query, documents, prefix_last=prefix_last)

    monkeypatch.setattr(search, "bm25_small", ranking)
    for kind in ("working", "scratchpad", "all"):
        hits = store.recall("Lisbon", user_id="u", kind=kind, mode="keyword")
        assert {h.kind for h in hits} >= (
            {"block"} if kind == "working" else {"scratchpad"} if kind == "scratchpad" else {"block", "scratchpad"}
        )
    assert ranked_with_snapshot == [False] * 4


def test_hybrid_recall_over_blocks_still_fuses_both_lists(store):
    store.update_block("persona", "plans trips to Lisbon", user_id="u")
    store.update_block("diet", "vegetarian, no nuts", user_id="u")
    hits = store.recall("Lisbon trips", user_id="u", kind="working")
    assert hits[0].id == "persona"
    assert hits[0].scores.keyword is not None and hits[0].scores.vector is not None


# --- the common-word cut is per tenant ----------------------------------------------------------


def test_another_tenants_writes_never_hide_my_exact_keyword_hit(db_path):
    """Tenant b's 3,000 episodes all say 'weather'; tenant a has one episode that does. Index-wide
    'weather' is in nearly every document, but for a it is the word that finds the episode."""
    with MemoryStore.open(db_path, embedder=None) as s:
        mine = s.remember("the weather at the garage", user_id="a")
        s.remember_many([{"input": f"holiday plans number {i}"} for i in range(1500)], user_id="a")
        s.remember_many([{"input": f"note {i} about the weather for order {i}"} for i in range(3000)], user_id="b")
        hits = s.recall("weather status", user_id="a", mode="keyword", limit=5)
        assert [h.id for h in hits] == [mine.id]
        # For b, whose every episode holds it, the word is still left out: its rarer word ranks.
        rare = s.remember("status of the weather for the lamp", user_id="b")
        assert s.recall("weather status", user_id="b", mode="keyword")[0].id == rare.id
        with testing.backend(s).read() as conn:
            assert common_terms(conn, Tenant("b"), query_terms("weather status")) == {"weather"}
            assert common_terms(conn, Tenant("a"), query_terms("weather status")) == set()


def test_a_small_tenant_gets_no_cut_at_all(db_path):
    """Under 1,000 episodes every match is ranked quickly: even a word in all of them stays."""
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many([{"input": f"weather report number {i}"} for i in range(1500)], user_id="big")
        s.remember_many([{"input": f"weather note {i}"} for i in range(50)], user_id="small")
        with testing.backend(s).read() as conn:
            assert common_terms(conn, Tenant("big"), query_terms("zebra weather")) == {"weather"}
            assert common_terms(conn, Tenant("small"), query_terms("zebra weather")) == set()


def test_the_cut_for_a_tenant_does_not_depend_on_who_wrote_last(db_path):
    """A tenant whose every episode holds the word keeps the cut after others write thousands of
    newer episodes, with the word or without it; for the tenant without it, the word stays."""
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many([{"input": f"weather report number {i}"} for i in range(1500)], user_id="a")
        s.remember_many([{"input": f"weather elsewhere {i}"} for i in range(2000)], user_id="b")
        s.remember_many([{"input": f"note {i} about lunch"} for i in range(2000)], user_id="c")
        with testing.backend(s).read() as conn:
            assert common_terms(conn, Tenant("a"), query_terms("zebra weather")) == {"weather"}
            assert common_terms(conn, Tenant("c"), query_terms("zebra weather")) == set()


def test_another_tenants_writes_without_the_word_do_not_lift_my_cut(db_path):
    """The cut used to be screened by the word's share of all episodes, of every tenant: a's
    'invoice' (in 40% of a's episodes) stopped being cut once c wrote 3,000 episodes without it,
    and a's keyword results changed. The decision now reads a's episodes only."""
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many([{"input": f"invoice {i} for the office" if i % 5 < 2 else f"plans for day {i}"} for i in range(1500)], user_id="a")
        lisbon = s.remember_many([{"input": f"trip to Lisbon number {i}"} for i in range(8)], user_id="a")
        s.remember_many([{"input": f"note {i}"} for i in range(10)], user_id="b")

        def mine():
            return [h.id for h in s.recall("invoice Lisbon", user_id="a", mode="keyword", limit=50)]

        before = mine()
        assert sorted(before) == sorted(e.id for e in lisbon)  # 'invoice' is cut: only the rarer word ranks
        s.remember_many([{"input": f"lunch {i} with the team"} for i in range(3000)], user_id="c")
        assert mine() == before
        with testing.backend(s).read() as conn:
            assert common_terms(conn, Tenant("a"), query_terms("invoice Lisbon")) == {"invoice"}
            assert common_terms(conn, Tenant("c"), query_terms("invoice lunch")) == {"lunch"}


def test_a_word_once_in_my_newest_episodes_is_not_common(db_path):
    """A word a tenant used once, in its latest episode, is the word that finds it, however
    common it is in another tenant's episodes."""
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many([{"input": f"holiday plans number {i}"} for i in range(1500)], user_id="a")
        s.remember_many([{"input": f"weather log {i}"} for i in range(3000)], user_id="b")
        latest = s.remember("the weather at the garage", user_id="a")
        assert s.recall("weather plans", user_id="a", mode="keyword", limit=1)[0].id == latest.id
        with testing.backend(s).read() as conn:
            assert common_terms(conn, Tenant("a"), query_terms("weather plans")) == {"plans"}


def _write_weather(path: str) -> None:
    with MemoryStore.open(path, embedder=None) as s:
        s.remember_many([{"input": f"weather log {i}"} for i in range(600)], user_id="a")


def test_the_kept_cut_follows_writes_from_another_process(db_path):
    """The cut is kept between searches until anyone commits: a process that made a word common
    for this tenant changes this store's next search, though its own cache saw no write."""
    import multiprocessing as mp

    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember_many([{"input": f"holiday plans number {i}"} for i in range(1200)], user_id="a")
        zebra = s.remember("a zebra at the zoo", user_id="a")
        assert [h.id for h in s.recall("zebra weather", user_id="a", mode="keyword")] == [zebra.id]
        writer = mp.get_context("spawn").Process(target=_write_weather, args=(str(db_path),))
        writer.start()
        writer.join(120)
        assert writer.exitcode == 0
        # 'weather' is now in the newest 600 of a's 1,801 episodes: common, so only 'zebra' ranks.
        assert [h.id for h in s.recall("zebra weather", user_id="a", mode="keyword")] == [zebra.id]
        assert len(s.recall("weather", user_id="a", mode="keyword")) == 5
