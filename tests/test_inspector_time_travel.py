"""The inspector's time control: every view of a tenant as of a past moment, stepping through its
changes, the timeline, and diffs of the whole tenant; read-only while in the past."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from inspector.screens.dialogs import DiffScreen, ForgetScreen
from inspector.screens.timeline import TimelineScreen
from inspector.time_travel import NOW, TICK, moment_label, moments_of, parse_moment, step_back, step_forward
from inspector.widgets.results import ResultsTable
from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder
from store.validation import clock_fixed_at

from .inspector_support import (  # noqa: F401 (frozen is a fixture)
    FROZEN,
    app_for,
    frozen,
    go_to,
    make_demo,
    notes,
    open_session,
    open_tenant,
    screen_text,
    settle,
    showing,
    wait_for,
)

SIZE = (150, 48)
# The compact demo's history of alice (store/demo_data/compact.py): the moments of her changes.
OCT31, NOV1, NOV2, NOV3, NOV5 = (datetime(2026, m, d, 18, 30, tzinfo=UTC) for m, d in ((10, 31), (11, 1), (11, 2), (11, 3), (11, 5)))
BUILT = datetime(2026, 11, 20, 17, 30, tzinfo=UTC)


@pytest.fixture
def demo(tmp_path):
    return make_demo(tmp_path / "demo.db")


def alice_moments(demo) -> list[datetime]:
    with MemoryStore.open(demo, embedder=None) as s:
        return moments_of(s.timeline(user_id="alice"))


def cells(app, table_id: str, column: int) -> list[str]:
    table = app.query_one(table_id, RecordTable)
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


# --- stepping, without the app ------------------------------------------------------------------


MOMENTS = [OCT31, NOV1, NOV2]


def test_stepping_back_undoes_one_change_at_a_time_down_to_the_memory_before_the_first():
    assert step_back(MOMENTS, None) == NOV1  # from now: without the latest change (NOV2 shows what now shows)
    assert step_back(MOMENTS, NOV1) == OCT31
    assert step_back(MOMENTS, OCT31) == OCT31 - TICK  # before the first change
    assert step_back(MOMENTS, OCT31 - TICK) is None
    assert step_back(MOMENTS, NOV1 + timedelta(hours=3)) == OCT31  # a typed moment shows NOV1's state
    assert step_back([], None) is None


def test_stepping_forward_comes_back_to_now_after_the_change_before_the_latest():
    assert step_forward(MOMENTS, OCT31 - TICK) == OCT31
    assert step_forward(MOMENTS, OCT31) == NOV1
    assert step_forward(MOMENTS, NOV1) == NOW
    assert step_forward(MOMENTS, NOV2) == NOW
    assert step_forward(MOMENTS, OCT31 + timedelta(hours=1)) == NOV1


def test_a_typed_moment_is_read_as_utc_and_a_day_alone_is_its_end():
    now = datetime(2026, 11, 20, tzinfo=UTC)
    assert parse_moment("2026-11-01 14:02", now) == datetime(2026, 11, 1, 14, 2, tzinfo=UTC)
    assert parse_moment("2026-11-01", now) == datetime(2026, 11, 2, tzinfo=UTC) - TICK
    with pytest.raises(ValueError, match="look like"):
        parse_moment("last tuesday", now)
    with pytest.raises(ValueError, match="still to come"):
        parse_moment("2026-12-01", now)


# --- in the app -------------------------------------------------------------------------------


async def test_stepping_back_shows_every_view_as_it_was_and_says_so(demo):
    moments = alice_moments(demo)
    assert moments[-1] == BUILT and len(moments) > 5  # the demo's story: days of changes, then the build
    back, further = moments[-2], moments[-3]
    with MemoryStore.open(demo, embedder=None) as s:
        then = s.snapshot(user_id="alice", as_of=back)
        episodes_then = then.episodes
        assert 0 < episodes_then < s.profile(user_id="alice").counts.episodes
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("blocks")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: app.main_screen.as_of == back, what="the moment before the latest change")
        await settle(pilot, app)
        assert f"AS OF {moment_label(back)} (read-only)" in app.sub_title
        assert f"AS OF {moment_label(back)} · read-only · n now · [ ] step · T timeline" in screen_text(app)
        blocks = dict(zip(cells(app, "#blocks-table", 1), cells(app, "#blocks-table", 2), strict=True))
        assert blocks == {b.name: b.content for b in then.blocks}
        assert blocks["persona"] == "Friendly travel planner. Concise, practical."  # before "mentions prices in euros"
        assert cells(app, "#sessions-table", 0) == [x.session_id for x in then.sessions] != []
        moment = moment_label(back)[:16]
        assert str(app.query_one("#facts-status").render()) == f"{len(then.facts)} facts believed on {moment}, as known on {moment}"
        assert sorted(cells(app, "#facts-table", 3)) == sorted(f.object for f in then.facts)
        episodes = app.query_one("#episodes-table", RecordTable).records.values()
        assert len(episodes) == episodes_then and all(e.occurred_at <= back for e in episodes)

        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: app.main_screen.as_of == further, what="one change earlier")
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: app.main_screen.as_of == back, what="one change later")
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: app.main_screen.as_of is None, what="back at now")
        await settle(pilot, app)
        assert "AS OF" not in app.sub_title and "AS OF" not in screen_text(app)
        blocks = dict(zip(cells(app, "#blocks-table", 1), cells(app, "#blocks-table", 2), strict=True))
        assert blocks["persona"].endswith("mentions prices in euros.")
        assert len(cells(app, "#sessions-table", 0)) == 4


async def test_a_moment_shows_what_was_known_then(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        await go_to(pilot, app, "2026-11-03 18:30")  # the moment the move to Porto was written down
        assert app.main_screen.as_of == NOV3
        blocks = dict(zip(cells(app, "#blocks-table", 1), cells(app, "#blocks-table", 2), strict=True))
        assert blocks["human"] == "Alice, lives in Porto, vegetarian, allergic to cats."
        assert blocks["goals"] == "Plan a 5-day Lisbon trip in March within 1000 €."
        objects = cells(app, "#facts-table", 3)
        assert "Porto" in objects and "Lisbon" not in objects and "1000 EUR" in objects and "1200 EUR" not in objects
        await go_to(pilot, app, "2026-11-03 18:29")  # a minute before: still Lisbon
        assert "Lisbon" in cells(app, "#facts-table", 3) and "Porto" not in cells(app, "#facts-table", 3)


async def test_the_past_is_read_only_and_n_comes_back_to_now(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        app.query_one("#tenants").focus()
        assert "n Now" not in screen_text(app)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: app.main_screen.as_of is not None)
        await settle(pilot, app)
        assert "n Now" in screen_text(app)
        for key in ("f", "e"):
            await pilot.press(key)
            await pilot.pause(0.1)
            assert not showing(app, ForgetScreen) and len(app.screen_stack) == 1
        assert sum("past moment, read-only" in n for n in notes(app)) == 2
        await pilot.press("n")
        await wait_for(pilot, lambda: app.main_screen.as_of is None)
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen), what="forget, now that the views show now")


async def test_the_timeline_lists_the_changes_and_goes_to_one_or_to_a_typed_moment(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("T")
        await wait_for(pilot, lambda: showing(app, TimelineScreen), what="the timeline")
        table = app.screen.query_one("#timeline-table", RecordTable)
        changes = MemoryStore.open(demo, embedder=None).timeline(user_id="alice")
        await wait_for(pilot, lambda: table.row_count == len(changes) + 1, what="every change, and now")
        assert str(table.get_row_at(0)[0]) == "now"
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        porto = next(i for i, row in enumerate(rows) if row[1:3] == ["fact", "recorded"] and "lives_in" in row[3] and "Porto" in row[4])
        table.move_cursor(row=porto)
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.main_screen.as_of == NOV3 and not showing(app, TimelineScreen), what="the moment Porto was learned"
        )
        await settle(pilot, app)
        assert "Porto" in cells(app, "#facts-table", 3) and "1200 EUR" not in cells(app, "#facts-table", 3)

        await pilot.press("T")
        await wait_for(pilot, lambda: showing(app, TimelineScreen))
        field = app.screen.query_one("#moment")
        field.focus()
        field.value = "2026-12-24"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "still to come" in str(app.screen.query_one("#timeline-status").render()), what="a refusal")
        assert showing(app, TimelineScreen) and app.main_screen.as_of == NOV3
        field.value = "2026-11-01"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.main_screen.as_of == datetime(2026, 11, 2, tzinfo=UTC) - TICK, what="the end of November 1")
        await settle(pilot, app)
        assert "allergy" in cells(app, "#facts-table", 2) and "trip_budget" not in cells(app, "#facts-table", 2)


async def test_diffs_of_the_whole_tenant_with_now_and_of_one_change(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("D")
        await pilot.pause(0.1)
        assert any("go to a past moment first" in n for n in notes(app)) and not showing(app, DiffScreen)
        await go_to(pilot, app, "2026-11-03 18:30")
        await pilot.press("D")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the diff with now")
        text = screen_text(app)
        assert "2026-11-03 18:30:00 → now" in text
        assert "~ block goals" in text and "+ fact alice trip_budget 1200 EUR" in text and "- fact alice trip_budget 1000 EUR" in text
        assert "~ session trip-lisbon" in text and "+ destination = 'Lisbon'" in text  # started since
        assert "+ block" not in text and "- block" not in text  # all three blocks were there
        await pilot.press("escape")
        await pilot.press("T")
        await wait_for(pilot, lambda: showing(app, TimelineScreen))
        table = app.screen.query_one("#timeline-table", RecordTable)
        await wait_for(pilot, lambda: table.row_count > 1)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        table.move_cursor(row=next(i for i, row in enumerate(rows) if row[1] == "fact" and "allergy" in row[3]))
        await pilot.press("d")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="what one change did")
        text = screen_text(app)
        assert "+ fact alice allergy cats" in text and "~ block human" in text and "trip_budget" not in text


async def test_another_tenant_opens_at_now(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: app.main_screen.as_of is not None)
        await open_tenant(pilot, app, "bob")
        assert app.main_screen.as_of is None and "AS OF" not in app.sub_title and "AS OF" not in screen_text(app)


async def test_a_search_in_the_past_looks_through_episodes_up_to_the_moment(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        await go_to(pilot, app, "2026-11-03 18:30")
        app.query_one("#query").value = "Lisbon"
        status = app.query_one("#search-status")
        await wait_for(pilot, lambda: "up to the moment" in str(status.render()), what="the search in the past")
        hits = app.query_one("#results", ResultsTable).records.values()
        assert hits and all(h.kind == "episode" and h.occurred_at <= NOV3 for h in hits)


async def test_a_session_changed_since_shows_its_checkpoint_and_says_so(tmp_path):
    path = tmp_path / "s.db"
    t0 = FROZEN - timedelta(days=3)
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        with clock_fixed_at(t0):
            memory = s.session("trip", user_id="ann")
            memory.set("hotel", "Memmo")
        with clock_fixed_at(t0 + timedelta(hours=1)):
            memory.create_checkpoint("held")
        with clock_fixed_at(t0 + timedelta(hours=2)):
            memory.set("hotel", "Pestana")
        with clock_fixed_at(t0 + timedelta(hours=3)):
            memory.set("train", "booked")
    app = app_for(path)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "ann")
        await pilot.press("T")
        await wait_for(pilot, lambda: showing(app, TimelineScreen))
        field = app.screen.query_one("#moment")
        field.focus()
        field.value = (t0 + timedelta(hours=2, minutes=30)).strftime("%Y-%m-%d %H:%M")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.main_screen.as_of is not None)
        await settle(pilot, app)
        view = await open_session(pilot, app, "trip")
        assert view.shown_session == "trip"
        assert cells(app, "#kv-table", 0) == ["hotel"] and cells(app, "#kv-table", 1) == ['"Memmo"']
        assert "as of its checkpoint at" in str(app.query_one("#task-state").render())


async def test_the_timeline_diffs_any_two_moments(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        await pilot.press("T")
        await wait_for(pilot, lambda: showing(app, TimelineScreen))
        table = app.screen.query_one("#timeline-table", RecordTable)
        await wait_for(pilot, lambda: table.row_count > 1)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]

        def row_of(what: str, name: str, detail: str) -> int:
            return next(i for i, row in enumerate(rows) if row[1] == what and name in row[3] and detail in row[4])

        table.move_cursor(row=row_of("fact", "trip_budget", "1200 EUR"))  # the later one first: order does not matter
        await pilot.press("m")
        assert "marked 2026-11-05 18:30:00" in str(app.screen.query_one("#timeline-status").render())
        table.move_cursor(row=row_of("fact", "allergy", "cats"))
        await pilot.press("d")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the diff of two moments")
        text = screen_text(app)
        assert "2026-11-01 18:30:00 → 2026-11-05 18:30:00" in text
        assert "+ fact alice lives_in Porto" in text and "- fact alice lives_in Lisbon" in text
        assert "+ fact alice trip_budget 1200 EUR" in text and "allergy" not in text  # known at both moments
        await pilot.press("escape")
        await wait_for(pilot, lambda: showing(app, TimelineScreen))
        assert "· m: mark" in str(app.screen.query_one("#timeline-status").render())  # the mark is used up
