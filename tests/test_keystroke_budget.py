"""What one keystroke in the search box may cost the inspector, counted rather than timed: the
store calls it makes, the widgets it repaints, the screen layouts it causes and the result rows it
draws. A change that adds a store call, repaints a widget the keystroke did not change, lays the
screen out or redraws rows it did not need fails here, on any machine, however fast.

The budget is what a keystroke needs. Where the hybrid search is quicker than the keyword half's
wait (``KEYWORD_HALF_AFTER``): that one search, the search box repainted, the status line and the
results table repainted once. Where it is slower: two searches (the keyword half, then the hybrid
results), and the status line and the table repainted for each. No more rows drawn than a screen
of results a paint."""

from __future__ import annotations

import inspect
from collections import Counter

import pytest
from textual.screen import Screen
from textual.widget import Widget

from inspector.widgets.results import ResultsTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import app_for, frozen, open_tenant, settle, wait_for  # noqa: F401 (frozen is a fixture)

TYPED = "invoice from berlin"
SIZE = (140, 40)
# Per keystroke, on average over the typed text.
QUERY_REPAINTS = 3.0  # the search box: the character, the cursor moved, the value's watcher
LAYOUTS = 0.0


@pytest.fixture
def busy_store(tmp_path):
    path = tmp_path / "many.db"
    words = ["invoice", "berlin", "meeting", "tuesday", "flight", "lunch", "report", "budget", "train", "hotel", "from", "in"]
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        # Memories longer than the results table is wide, as real ones are: the table cuts them
        # to fit, so a new set of results keeps its scrollable size and its scrollbars.
        tail = "with the receipts scanned, the totals checked twice and the notes filed for the quarterly review"
        rows = [
            {"input": f"{words[i % 12]} {words[(i * 7) % 12]} {words[(i * 5) % 12]} note {i} {tail[: 40 + i % 50]}", "output": "ok"}
            for i in range(3000)
        ]
        s.remember_many(rows, user_id="alice")
    return path


class Counting:
    """Counts, while on, the store's calls, each widget's repaints, the screen's layouts and the
    result rows drawn."""

    def __init__(self, app, monkeypatch):
        self.on = False
        self.store_calls: Counter[str] = Counter()
        self.repaints: Counter[str] = Counter()
        self.layouts = 0
        self.rows_drawn = 0
        real_refresh, real_layout, real_line = Widget.refresh, Screen._refresh_layout, ResultsTable.render_line

        def refresh(widget, *args, **kwargs):
            if self.on:
                self.repaints[widget.id or type(widget).__name__] += 1
            return real_refresh(widget, *args, **kwargs)

        def layout(screen, *args, **kwargs):
            if self.on:
                self.layouts += 1
            return real_layout(screen, *args, **kwargs)

        def render_line(table, y):
            if self.on and y > 0:
                self.rows_drawn += 1
            return real_line(table, y)

        monkeypatch.setattr(Widget, "refresh", refresh)
        monkeypatch.setattr(Screen, "_refresh_layout", layout)
        monkeypatch.setattr(ResultsTable, "render_line", render_line)
        self.app, self.monkeypatch = app, monkeypatch

    def watch_store(self) -> None:
        store = self.app.store
        # Every public method: an extra call of any of them is an extra store call.
        for name, _ in inspect.getmembers(type(store), inspect.isfunction):
            if name.startswith("_"):
                continue
            real = getattr(store, name)

            def counted(*args, _real=real, _name=name, **kwargs):
                if self.on:
                    self.store_calls[_name] += 1
                return _real(*args, **kwargs)

            self.monkeypatch.setattr(store, name, counted)


async def type_and_count(app, pilot, counting: Counting) -> int:
    await open_tenant(pilot, app, "alice")
    await pilot.press("slash")
    await settle(pilot, app)
    counting.watch_store()
    # The cursor's blink repaints the box by the clock, not by the keystroke: a slow machine would count more of it.
    app.query_one("#query").cursor_blink = False
    results = app.query_one("#results", ResultsTable)
    counting.on = True
    typed = ""
    for key in TYPED:
        typed += key
        await pilot.press("space" if key == " " else key)
        await wait_for(
            pilot,
            lambda: app.query_one("#query").value == typed and "joining" not in str(app.query_one("#search-status").render()),
            what=f"results for {typed!r}",
        )
        await pilot.pause(0.05)
    counting.on = False
    assert results.row_count > 0
    return len(TYPED)


@pytest.mark.parametrize(
    ("keyword_half_after", "searches"),
    [(10.0, 1), (0.0, 2)],
    ids=["quick hybrid search: one search, one paint", "slow hybrid search: the keyword half first"],
)
async def test_a_keystroke_costs_its_searches_and_repaints_only_what_it_changed(busy_store, monkeypatch, keyword_half_after, searches):
    from inspector import searching

    monkeypatch.setattr(searching, "KEYWORD_HALF_AFTER", keyword_half_after)
    app = app_for(busy_store, poll_seconds=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        counting = Counting(app, monkeypatch)
        keys = await type_and_count(app, pilot, counting)
        visible = app.query_one("#results", ResultsTable).scrollable_content_region.height
    per_key = {name: n / keys for name, n in counting.store_calls.items()}
    # The first keystroke searches both halves: nothing yet says how long the hybrid search takes.
    assert sum(counting.store_calls.values()) <= searches * keys + (1 if searches == 1 else 0), per_key
    paints = searches
    repainted = {name: n / keys for name, n in counting.repaints.items()}
    budget = {"query": QUERY_REPAINTS, "search-status": paints, "results": paints}
    assert set(repainted) <= set(budget), repainted  # nothing the keystroke did not change
    for name, most in budget.items():
        assert repainted.get(name, 0) <= most, repainted
    assert counting.layouts / keys <= LAYOUTS
    assert counting.rows_drawn / keys <= paints * visible, (counting.rows_drawn / keys, visible)
