"""Compare mode: ``m`` in the search results searches the same query as hybrid, vector only and
keyword only in turn, and the results shown are each mode's own order. Score bars: each row shows
its vector and keyword sides as bars."""

from __future__ import annotations

from inspector.app import SEARCH_LIMIT
from inspector.formatting import bar, score_bars
from inspector.widgets.results import ResultsTable
from inspector.widgets.views import SearchView
from store.models import ScoreBreakdown

from .inspector_support import app_for, frozen, open_tenant, settle, wait_for  # noqa: F401 (fixtures)

QUERY = "vegetarian restaurant"


def status(app) -> str:
    return str(app.query_one("#search-status").render())


def shown(app) -> list[str]:
    table = app.query_one("#results", ResultsTable)
    return table.row_keys


def bars_shown(app) -> list[str]:
    table = app.query_one("#results", ResultsTable)
    return [table.cell_text(row, 1) for row in range(table.row_count)]


def test_bars_are_as_long_as_their_value_and_read_without_colour():
    assert bar(1.0) == "████" and bar(0.0) == "░░░░" and bar(0.5) == "██░░"
    assert bar(1 / 32) == "▏░░░" and bar(0.53) == "██▏░"
    assert bar(1.7) == "████" and bar(-0.3) == "░░░░"  # cosine can be negative; BM25 unbounded
    assert bar(None) == "-   "
    assert all(len(bar(i / 100)) == 4 for i in range(101))


def test_score_bars_show_coverage_in_hybrid_and_bm25_against_the_best_hit_otherwise():
    hybrid = ScoreBreakdown(vector=0.75, keyword=9.0, coverage=0.25)
    assert score_bars(hybrid, best_keyword=9.0) == "███░ █░░░"  # coverage, not BM25 9/9
    keyword_only = ScoreBreakdown(keyword=3.0)
    assert score_bars(keyword_only, best_keyword=12.0) == "-    █░░░"
    assert score_bars(ScoreBreakdown(vector=0.5), best_keyword=None) == "██░░ -   "


async def test_m_cycles_the_mode_and_the_ranks_move(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tenant(pilot, app, "alice")
        await wait_for(pilot, lambda: app.store.model_ready, what="model")
        await pilot.press("slash")
        for ch in QUERY:
            await pilot.press("space" if ch == " " else ch)
        await settle(pilot, app)
        assert app.query_one("#query").value == QUERY  # m typed into the field, not a mode change
        await pilot.press("down")
        orders, bars = {}, set()
        for mode in ("hybrid", "vector", "keyword", "hybrid"):
            await wait_for(pilot, lambda: status(app).startswith(mode.upper()), what=f"{mode} results")
            await settle(pilot, app)
            assert app.query_one(SearchView).mode == mode
            # The header states the model, never a mode the search line would contradict.
            assert not any(word in app.sub_title for word in ("semantic", "keyword", "hybrid", "vector")), app.sub_title
            hits = app.store.recall(QUERY, user_id="alice", limit=SEARCH_LIMIT, kind="all", mode=mode, prefix=True)
            expected = [f"{h.kind}:{h.id}" for h in hits]
            orders.setdefault(mode, shown(app))
            bars.update(bars_shown(app))
            assert shown(app) == expected, mode
            best = max((h.scores.keyword for h in hits if h.scores.keyword is not None), default=None)
            assert bars_shown(app) == [score_bars(h.scores, best) for h in hits], mode
            await pilot.press("m")
        # The ranks really move: otherwise the test above would pass with the mode ignored.
        assert orders["hybrid"] != orders["vector"] and orders["vector"] != orders["keyword"]
        assert len(set(bars)) > 2  # the bars differ from row to row and mode to mode
