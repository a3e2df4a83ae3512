"""Keys pressed at the first frame, before the tier views exist (they are mounted just after it,
so the tenant names paint sooner): a digit crashed the app (no '#tabs' yet), and the text typed
after "/" went to the tenant list as keys, where its "q" quit. Now a digit's view is shown once
the views exist, "/" opens a box that takes the text and hands it to the search box, and no key
crashes."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from inspector.screens.main import MainScreen

from .inspector_support import app_for, frozen, make_demo, settle, wait_for  # noqa: F401 (frozen is a fixture)


@pytest.fixture
def demo_db(tmp_path):
    return make_demo(tmp_path / "demo.db")


@pytest.fixture
def views_held_back(monkeypatch):
    """The views arrive when the test calls the returned coroutine function, not after the first
    frame: keys pressed before it meet the app exactly as a fast typist's do."""
    held = MainScreen._after_first_frame
    monkeypatch.setattr(MainScreen, "_after_first_frame", lambda self: None)

    async def arrive(screen: MainScreen) -> None:
        # On the screen's own message loop, as after the first frame (the views bind to its reactives).
        screen.call_later(held.__get__(screen))

    return arrive


async def test_every_bound_key_at_the_first_frame_is_safe_and_a_digit_waits_for_its_view(demo_db, views_held_back):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        assert not app.query("#tabs")
        for key in ["1", "2", "3", "4", "5", "t", "escape", "e", "f", "a", "ctrl+r", "m", "d", "r", "down", "up", "enter", "tab"]:
            await pilot.press(key)
            assert app.is_running and app.return_code is None, key
        await pilot.press("question_mark")  # help opens over the first frame, and closes
        await pilot.press("question_mark")
        await pilot.press("6")
        await views_held_back(app.main_screen)
        await settle(pilot, app)
        assert app.query_one("#tabs").active == "audit"  # the last digit pressed
        await pilot.press("q")
        await pilot.pause(0.2)
    assert app.return_code == 0


async def test_slash_and_text_at_the_first_frame_end_up_in_the_search_box(demo_db, views_held_back):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("slash", *"quokka fee")  # a "q", an "e" and an "f": text here, not keys
        assert app.is_running and app.return_code is None
        early = app.query_one("#early-query", Input)
        assert early.value == "quokka fee" and app.focused is early
        await views_held_back(app.main_screen)
        await settle(pilot, app)
        query = app.query_one("#query", Input)
        assert query.value == "quokka fee" and app.focused is query
        assert not app.query("#early-query")
        await pilot.press("s")  # typing goes on where it was
        assert query.value == "quokka fees"
        await wait_for(pilot, lambda: app.main_screen.search_view().seq > 0, what="the search to run")
        assert app.is_running
