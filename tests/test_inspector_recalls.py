"""The recalls screen (``R``): the recalls an agent made (a store opened with tracing on), newest
first; ``r``/``R`` replay one now or as of its moment beside what it returned; ``p`` in the
episodes shows what the agent had just retrieved before an episode."""

from __future__ import annotations

from inspector.screens.dialogs import DiffScreen
from inspector.screens.recalls import RecallsScreen
from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import (  # noqa: F401
    add_traced_recalls,
    app_for,
    frozen,
    make_demo,
    open_recalls,
    open_tenant,
    screen_text,
    settle,
    showing,
    wait_for,
)


async def test_the_recalls_tab_lists_what_the_agent_retrieved_and_replays_it(tmp_path):
    demo = make_demo(tmp_path / "demo.db")
    add_traced_recalls(demo)
    app = app_for(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_tenant(pilot, app, "alice")
        recalls = await open_recalls(pilot, app)
        await settle(pilot, app)
        assert [t.query for t in recalls.records.values()] == ["running plan", "lisbon trip bookings", "where does alice live"]
        assert "3 recalls, newest first" in screen_text(app)
        recalls.move_cursor(row=1)
        await settle(pilot, app)
        assert "trip-lisbon" in screen_text(app)  # the detail pane: what it asked
        await pilot.press("r")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the replay")
        await settle(pilot, app)
        assert "made again now: the same memories in the same order" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: showing(app, RecallsScreen), what="back in the recalls")
        await pilot.press("R")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the replay as of then")
        await settle(pilot, app)
        assert "made again as of" in screen_text(app)
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: not showing(app, RecallsScreen) and not showing(app, DiffScreen), what="the main screen")


async def test_in_the_past_the_recalls_are_those_made_by_then(tmp_path):
    from datetime import timedelta

    from .inspector_support import FROZEN

    demo = make_demo(tmp_path / "demo.db")
    add_traced_recalls(demo)
    app = app_for(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.as_of = FROZEN - timedelta(minutes=20)  # after the second recall, before the third
        await settle(pilot, app)
        app.main_screen.action_recalls()
        await wait_for(pilot, lambda: showing(app, RecallsScreen), what="the recalls")
        recalls = app.screen.query_one("#recalls-table", RecordTable)
        await wait_for(pilot, lambda: len(recalls.records) == 2, what="the recalls made by then")
        assert [t.query for t in recalls.records.values()] == ["lisbon trip bookings", "where does alice live"]


async def test_p_on_an_episode_shows_the_recalls_just_before_it(tmp_path):
    demo = make_demo(tmp_path / "demo.db")
    add_traced_recalls(demo)
    with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
        lisbon = s.remember("book the train to Lisbon", "booked", user_id="alice", session_id="trip-lisbon")
    app = app_for(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("episodes")
        episodes = app.query_one("#episodes-table", RecordTable)
        await wait_for(pilot, lambda: lisbon.id in episodes.records, what="the episodes")
        episodes.focus()
        episodes.move_cursor(row=list(episodes.records).index(lisbon.id))
        await pilot.press("p")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the recalls before it")
        await settle(pilot, app)
        text = screen_text(app)
        assert "1 recall in session trip-lisbon up to this episode" in text and "lisbon trip bookings" in text, text


async def test_a_store_without_traces_says_how_to_keep_them(tmp_path):
    demo = make_demo(tmp_path / "demo.db")
    app = app_for(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("R")
        await wait_for(pilot, lambda: "no recalls kept" in screen_text(app), what="the hint")
        assert "MEMLENS_TRACE=1" in screen_text(app)


async def test_s_types_a_recall_into_the_search_so_w_says_why_it_missed_a_memory(tmp_path):
    demo = make_demo(tmp_path / "demo.db")
    add_traced_recalls(demo)
    app = app_for(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_tenant(pilot, app, "alice")
        recalls = await open_recalls(pilot, app)
        recalls.move_cursor(row=1)  # "lisbon trip bookings", kind all, session trip-lisbon
        await pilot.press("s")
        await wait_for(pilot, lambda: not showing(app, RecallsScreen), what="the search")
        await settle(pilot, app)
        assert app.query_one("#query").value == "lisbon trip bookings"
        assert (app.query_one("#search-kind").value, app.query_one("#search-session").value) == ("all", "trip-lisbon")
        app.main_screen.action_show_view("episodes")
        episodes = app.query_one("#episodes-table", RecordTable)
        await wait_for(pilot, lambda: len(episodes.records) > 0, what="the episodes")
        other = next(e for e in episodes.records.values() if e.session_id not in (None, "trip-lisbon"))
        episodes.focus()
        episodes.move_cursor(row=list(episodes.records.values()).index(other))
        await pilot.press("w")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="why not")
        await settle(pilot, app)
        assert "session: it belongs to session" in screen_text(app)
