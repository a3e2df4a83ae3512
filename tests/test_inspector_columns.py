"""What the views show is whole where the terminal has the room: the sessions list's "updated"
column was cut to '2026-11-25 1' even at 200 columns, and at 80 a superseded fact differed
from a current one only by a dimmer grey (its status column off-screen), which NO_COLOR or a
plain terminal does not show at all."""

from __future__ import annotations

import re

import pytest

from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import app_for, frozen, open_tenant, screen_text, settle  # noqa: F401 (frozen is a fixture)

MINUTE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")


@pytest.mark.parametrize("size", [(200, 50), (120, 40)])
async def test_the_sessions_list_shows_whole_update_times(demo, size):
    with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
        s.session("planning-the-autumn-trip-to-lisbon", user_id="alice").set("k", 1)
    app = app_for(demo)
    async with app.run_test(size=size) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("sessions")
        await settle(pilot, app)
        table = app.query_one("#sessions-table", RecordTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert rows
        text = screen_text(app)
        shown = [row for row in rows if f" {row[0]} " in text]  # the rows that fit on screen
        assert len(shown) >= min(len(rows), 8)
        for row in shown:
            assert f"{row[2]}" in text and MINUTE.fullmatch(str(row[2])), row


async def test_a_superseded_fact_says_so_in_words_at_80_columns(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("facts")
        await settle(pilot, app)
        app.query_one("#facts-history").value = True
        await settle(pilot, app)
        table = app.query_one("#facts-table", RecordTable)
        lines = screen_text(app).splitlines()
        facts = list(table.records.values())
        assert any(f.valid_until is not None for f in facts), "the demo tenant has a superseded fact"
        for f in facts:
            line = next(x for x in lines if f" {f.predicate} " in x and f" {f.object} " in x)
            assert ("superseded" in line) == (f.valid_until is not None), line
