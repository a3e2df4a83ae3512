"""Hybrid fusion (store/recall/fusion.py): the exact-identifier channel, coverage, and a breakdown that
says what decided the order. Fake embedder: these check the mechanics; the quality on the hard
set with the real model is in test_recall_quality.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from store import testing
from store.recall import fusion
from store.recall.ranking import Ranked
from tests.conftest import T0


@pytest.mark.parametrize(
    "query,expected",
    [
        ("What's OPS-4471 about?", ["OPS-4471"]),
        ("Which order is #10482?", ["#10482"]),
        ("Which order is W1048862?", ["W1048862"]),
        ("What did I send to k.mclean@ed.ac.uk?", ["k.mclean@ed.ac.uk"]),
        ("What's the deal with payments-api 2.14.3?", ["2.14.3"]),
        ("What is this link: https://doi.org/10.1075/jpl.21014.tan?", ["https://doi.org/10.1075/jpl.21014.tan"]),
        ("Which order is 10482 and 404-7731952-1180.", ["10482", "404-7731952-1180"]),
        # Quantities, times and years are not identifiers: an exact "2024" would outrank meaning.
        ("What did I do in 2024 with 3 friends at 9:30, 1.5 hours, pages 10-12?", []),
        ("Released 2025-04-12 as 1.29.4", ["2025-04-12", "1.29.4"]),
        ("Where does alice live?", []),
    ],
)
def test_identifier_like_tokens_are_found_and_words_are_not(query, expected):
    assert fusion.identifiers(query) == expected


@pytest.mark.parametrize(
    "ident,near_miss",
    [
        ("OPS-4471", "OPS-4741"),  # transposed digits
        ("INV-3174", "INV-31174"),  # one character more
        ("INV-31174", "INV-3174"),
        ("contact@atelier-roux.fr", "contacts@atelier-roux.fr"),
        ("1.29.4", "1.29.14"),
        ("1.29.4", "1.29.4.1"),
        ("W1048862", "W10488623"),
        ("SO-559013", "ISO-559013"),
        ("https://www.airbnb.fr/rooms/5312094", "https://www.airbnb.fr/rooms/53120947"),
        ("#10482", "#104829"),
    ],
)
def test_an_identifier_matches_itself_whole_and_never_a_near_miss(ident, near_miss):
    pattern = fusion.identifier_pattern([ident])
    assert pattern.search(f"About {ident}. Closed.") and pattern.search(f"see {ident.lower()}, then")
    assert not pattern.search(f"About {near_miss}. Closed."), near_miss


def test_the_exact_channel_puts_the_exact_identifier_first_whatever_the_other_channels_say():
    query = fusion.Query.of("what is OPS-4471 about")
    exact = Ranked(pk=1, vector=0.05, vector_rank=40)
    near = Ranked(pk=2, vector=0.99, vector_rank=1, keyword=9.0, keyword_rank=1)
    texts = {1: "OPS-4471: the login page times out", 2: "What is OPS-4741 about? It is about about"}
    ranked = fusion.order([near, exact], texts, query, "hybrid")
    assert [c.pk for c in ranked] == [1, 2]
    assert ranked[0].exact == "OPS-4471" and ranked[1].exact is None
    assert ranked[0].score == pytest.approx(hybrid_score(ranked[0]))
    assert ranked[0].score > fusion.EXACT_BONUS - 1.0 - fusion.VECTOR_WEIGHT * fusion.STANDOUT_CAP


def hybrid_score(c) -> float:
    """The hybrid score from a candidate's (or a hit's score breakdown's) channels, as documented."""
    return (
        (fusion.EXACT_BONUS if c.exact else 0.0)
        + (c.vector or 0.0)
        + fusion.COVERAGE_WEIGHT * c.coverage**fusion.COVERAGE_POWER
        + fusion.KEYWORD_WEIGHT * c.keyword_standout
        + fusion.VECTOR_WEIGHT * c.vector_standout
    )


def test_standouts_are_standard_deviations_from_the_mean_capped_and_zero_where_nothing_stands_out():
    assert fusion.standouts([1.0, 3.0], signed=True) == [-1.0, 1.0]
    assert fusion.standouts([1.0, 3.0], signed=False) == [0.0, 1.0]
    assert fusion.standouts([1.0, None, 3.0], signed=False) == [0.0, 0.0, 1.0]  # None: not in that list
    assert fusion.standouts([2.0, 2.0, 2.0], signed=True) == [0.0, 0.0, 0.0]
    assert fusion.standouts([5.0], signed=True) == [0.0]
    far = fusion.standouts([0.0] * 500 + [1.0], signed=True)
    assert far[-1] == fusion.STANDOUT_CAP and far[0] > -1.0


def test_the_exact_bonus_is_wider_than_every_other_channel_together():
    best = 1.0 + fusion.COVERAGE_WEIGHT + (fusion.KEYWORD_WEIGHT + fusion.VECTOR_WEIGHT) * fusion.STANDOUT_CAP
    worst = -1.0 - fusion.VECTOR_WEIGHT * fusion.STANDOUT_CAP
    assert fusion.EXACT_BONUS + worst >= best


def test_a_memory_whose_rare_word_makes_it_stand_out_in_the_keyword_list_beats_a_slightly_closer_one():
    """A conversation: every turn holds the speaker's name and the question's common words; the
    turn holding its one rare word is the keyword list's clear first, a little below another
    turn by cosine. Coverage (half the words against a quarter) adds 0.06 of a score; the
    keyword standout decides."""
    query = fusion.Query.of("When did Caroline go to the pottery class?")
    texts = {pk: f"Caroline: we went to the gym {pk}" for pk in range(2, 12)}
    texts[1] = "Caroline: pottery was fun"
    rare = Ranked(pk=1, vector=0.50, vector_rank=3, keyword=9.0, keyword_rank=1)
    closer = Ranked(pk=2, vector=0.53, vector_rank=1, keyword=3.1, keyword_rank=2)
    rest = [Ranked(pk=pk, vector=0.30, vector_rank=pk + 2, keyword=3.0, keyword_rank=pk + 1) for pk in range(3, 12)]
    ranked = fusion.order([closer, rare, *rest], texts, query, "hybrid")
    assert ranked[0].pk == 1 and ranked[0].keyword_standout > 2.5
    assert all(c.score == pytest.approx(hybrid_score(c)) for c in ranked)


def test_a_flat_keyword_list_adds_nothing_and_the_cosine_decides():
    query = fusion.Query.of("pottery class on Sunday")
    texts = {1: "pottery", 2: "pottery"}
    a = Ranked(pk=1, vector=0.40, vector_rank=2, keyword=2.0, keyword_rank=1)
    b = Ranked(pk=2, vector=0.45, vector_rank=1, keyword=2.0, keyword_rank=2)
    ranked = fusion.order([a, b], texts, query, "hybrid")
    assert [c.pk for c in ranked] == [2, 1] and [c.keyword_standout for c in ranked] == [0.0, 0.0]


def test_coverage_counts_query_words_in_any_light_form_and_only_full_matches_weigh():
    query = fusion.Query.of("Who did I say I'd call back next week?")
    assert query.words == ("say", "call", "back", "next", "week")
    assert query.coverage("Said I'd call back next week; calling them back on Monday.") == pytest.approx(0.8)
    assert query.coverage("nothing here") == 0.0
    partial = Ranked(pk=1, vector=0.50)
    full = Ranked(pk=2, vector=0.30)
    texts = {1: "Move my call to next week", 2: "I told the rep I'd say I call back next week"}
    ranked = fusion.order([partial, full], texts, query, "hybrid")
    # 0.30 + 1.0 against 0.50 + 0.6 ** 4 (0.13): a memory holding all the words wins, one holding
    # some of them gains little.
    assert [c.pk for c in ranked] == [2, 1]


def test_each_half_alone_keeps_its_own_order():
    query = fusion.Query.of("what is OPS-4471 about")
    texts = {1: "OPS-4471 login", 2: "OPS-4741"}
    cands = [Ranked(pk=2, vector=0.9, vector_rank=1), Ranked(pk=1, vector=0.1, vector_rank=2)]
    assert [c.pk for c in fusion.order(cands, texts, query, "vector")] == [2, 1]
    assert [c.score for c in cands] == [0.9, 0.1] and all(c.exact is None for c in cands)
    cands = [Ranked(pk=2, keyword=5.0, keyword_rank=1), Ranked(pk=1, keyword=1.0, keyword_rank=2)]
    assert [c.pk for c in fusion.order(cands, texts, query, "keyword")] == [2, 1]
    assert [c.score for c in cands] == [c.fused for c in cands]


@pytest.fixture
def tickets(store):
    """A ticket and its near misses, the near misses worded like the question (so both the fake
    embedder and BM25's shared words favour them)."""
    items = [{"input": "OPS-4471: the login page times out for SSO users", "output": "Assigned to the identity team.", "occurred_at": T0}]
    for i, miss in enumerate(("OPS-4741", "OPS-4417", "OPS-447", "OPS-44710")):
        items.append(
            {
                "input": f"what is {miss} about",
                "output": f"{miss} is about the ops dashboard, what it is about",
                "occurred_at": T0 + timedelta(minutes=i + 1),
            }
        )
    store.remember_many(items, user_id="u")
    return store


def test_recall_puts_the_exact_ticket_first_above_near_misses_and_says_why(tickets):
    hits = tickets.recall("what is OPS-4471 about", user_id="u", limit=5)
    assert hits[0].text.startswith("OPS-4471:"), [h.text for h in hits]
    assert hits[0].scores.exact == "OPS-4471" and all(h.scores.exact is None for h in hits[1:])
    for h in hits:
        s = h.scores
        assert s.score == pytest.approx(hybrid_score(s))
    assert [h.scores.score for h in hits] == sorted((h.scores.score for h in hits), reverse=True)


def test_the_exact_channel_finds_an_identifier_neither_list_holds(store):
    # The answer's pieces (2, 14, 3) are everywhere; 60 newer memories hold them more often and
    # share more of the question's words, so the answer falls below both lists' depth (50).
    store.remember("payments-api 2.14.3 broke the retry header", "Rolled back the release.", user_id="u", occurred_at=T0)
    store.remember_many(
        [
            {
                "input": f"deal with payments api: 2 pods, 14 retries, 3 regions, {i}",
                "output": "payments api deal: 2 pods 14 retries 3 regions",
                "occurred_at": T0 + timedelta(minutes=i + 1),
            }
            for i in range(60)
        ],
        user_id="u",
    )
    hits = store.recall("What's the deal with payments-api 2.14.3?", user_id="u", limit=5)
    top = hits[0]
    assert top.text.startswith("payments-api 2.14.3"), [h.text for h in hits]
    assert top.scores.exact == "2.14.3" and top.scores.vector_rank is None and top.scores.keyword_rank is None
    assert top.scores.vector is not None  # its cosine was computed all the same


def test_keyword_only_candidates_get_their_cosine_in_hybrid(tickets):
    hits = tickets.recall("login page dashboard", user_id="u", limit=5)
    assert all(h.scores.vector is not None for h in hits)


def test_an_exact_identifier_outside_the_time_range_stays_out(tickets):
    hits = tickets.recall("what is OPS-4471 about", user_id="u", limit=5, time_range=(T0 + timedelta(seconds=30), None))
    assert hits and all(not h.text.startswith("OPS-4471:") for h in hits)


def test_exact_identifiers_in_facts_blocks_and_notes_come_first_too(store):
    store.add_fact("order W1048862", "status", "shipped", user_id="u", valid_from=T0)
    store.add_fact("order W1048863", "status", "lost in transit, which order is it", user_id="u", valid_from=T0)
    store.update_block("orders", "which order is W10488623? which order is it", user_id="u")
    store.session("s", user_id="u").append_scratchpad("which order is W1048863? which order")
    hits = store.recall("which order is W1048862", user_id="u", kind="all", limit=5)
    assert hits[0].kind == "fact" and hits[0].fact.subject == "order W1048862" and hits[0].scores.exact == "W1048862"
    assert all(h.scores.exact is None for h in hits[1:])


def test_hybrid_marks_its_hits_with_one_highlight_query(store, monkeypatch):
    """Hybrid's top hits are rarely the keyword side's; marking both sets cost a second FTS
    highlight query per search. The terms marked are those of the hits returned, all of them."""
    store.remember_many(
        [{"input": f"the blue printer jammed again on floor {i}"} for i in range(30)]
        + [{"input": f"printer toner order number {i}"} for i in range(30)],
        user_id="u",
    )
    calls = []
    original = type(testing.keyword_index(store)).episode_highlights

    def counted(self, conn, tenant, expression, pks, texts=None):
        calls.append(list(pks))
        return original(self, conn, tenant, expression, pks, texts)

    monkeypatch.setattr(type(testing.keyword_index(store)), "episode_highlights", counted)
    hits = store.recall("jammed printer", user_id="u", limit=5)
    assert len(calls) == 1
    assert len(calls[0]) == len(hits) == 5
    assert all("printer" in h.matched_terms for h in hits)


def test_hybrid_gives_the_same_hits_when_the_query_is_still_being_encoded(tickets, monkeypatch):
    """While the encoder is busy, hybrid reads the keyword candidates' texts as it waits and the
    others after: the hits, their scores and marks must be those of a search that read them at once."""
    import threading

    from store.recall import hits as recall_hits

    query = "what is OPS-4471 about"
    indexer = testing.indexer(tickets)
    reads, first_read = [], threading.Event()
    original = recall_hits.Recall.episode_texts

    def counted(self, pks):
        reads.append(len(pks))
        first_read.set()
        return original(self, pks)

    monkeypatch.setattr(recall_hits.Recall, "episode_texts", counted)
    indexer.encode_query(query)  # kept: the search finds its vector ready and reads every text at once
    at_once = [(h.id, h.scores, h.matched_terms) for h in tickets.recall(query, user_id="u", limit=5)]
    assert len(reads) == 1
    reads.clear()
    first_read.clear()
    testing.forget_query_vectors(tickets)
    encode = indexer.encode_query

    def held(text):
        first_read.wait(timeout=30)  # released by the read made while waiting (never, if none is)
        return encode(text)

    monkeypatch.setattr(indexer, "encode_query", held)
    split = [(h.id, h.scores, h.matched_terms) for h in tickets.recall(query, user_id="u", limit=5)]
    assert len(reads) == 2 and split == at_once
