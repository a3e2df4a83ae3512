"""The why-not panel: from the episodes or facts, ``w`` says where the memory under the cursor
ranks for the search typed in the Search tab and why it is not among the results."""

from __future__ import annotations

from inspector.screens.dialogs import DiffScreen
from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import app_for, notes, open_tenant, screen_text, settle, showing, wait_for  # noqa: F401


def build(path):
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        garden = s.remember("we planted tomatoes in the garden", user_id="u", session_id="home")
        s.remember_many([{"input": f"invoice {i} for the boat repair", "session_id": "work"} for i in range(30)], user_id="u")
    return garden


async def test_w_on_an_episode_says_it_ranks_below_the_results_and_lacks_the_query_words(tmp_path):
    garden = build(tmp_path / "w.db")
    app = app_for(tmp_path / "w.db")
    async with app.run_test(size=(100, 32)) as pilot:
        await open_tenant(pilot, app, "u")
        app.main_screen.action_show_view("episodes")
        episodes = app.query_one("#episodes-table", RecordTable)
        await wait_for(pilot, lambda: garden.id in episodes.records, what="the episodes")
        episodes.focus()
        episodes.move_cursor(row=list(episodes.records).index(garden.id))
        await pilot.press("w")  # no search typed yet: it says what to do
        await wait_for(pilot, lambda: any("type a search first" in n for n in notes(app)), what="the hint")
        assert not showing(app, DiffScreen)
        app.query_one("#query").value = "invoice boat"
        await settle(pilot, app)
        episodes.focus()
        await pilot.press("w")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the why-not panel")
        await settle(pilot, app)
        text = screen_text(app)
        assert "not among the 25 the search shows" in text and "'invoice', 'boat'" in text, text
        await pilot.press("escape")
        app.query_one("#search-session").value = "work"
        await settle(pilot, app)
        episodes.focus()
        await pilot.press("w")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the panel again")
        await settle(pilot, app)
        assert "session: it belongs to session 'home'" in screen_text(app)
