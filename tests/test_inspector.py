"""Pilot tests: every view and action of the inspector, against a real store file."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest

from inspector.app import NO_TENANT
from inspector.screens.dialogs import ConfirmScreen, DiffScreen, ExportScreen, FatalScreen, ForgetScreen, ReceiptScreen
from inspector.screens.help_screen import HelpScreen
from inspector.widgets.results import ResultsTable
from inspector.widgets.views import RecordTable
from store import MemoryStore
from store.embedding import FakeEmbedder

from .inspector_support import (  # noqa: F401 (frozen is a fixture)
    GatedEmbedder,
    app_for,
    frozen,
    notes,
    open_session,
    open_tenant,
    settle,
    showing,
    wait_for,
)

SIZE = (150, 48)


def plain(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def table(app, selector) -> RecordTable | ResultsTable:
    return app.query_one(selector, ResultsTable if selector == "#results" else RecordTable)


async def test_tenants_are_listed_with_the_anonymous_bucket_and_filterable(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        options = app.query_one("#tenants")
        assert options.option_count == 4
        labels = [str(options.get_option_at_index(i).prompt) for i in range(4)]
        assert any(label.startswith("(anonymous)") for label in labels)
        assert all("episodes ·" in label and "active" in label for label in labels)
        app.query_one("#tenant-filter").focus()
        await pilot.press(*"bo")
        await wait_for(pilot, lambda: options.option_count == 1, what="filter")
        assert options.get_option_at_index(0).id == "user:bob"


async def test_every_tier_view_shows_the_tenant(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        blocks = table(app, "#blocks-table")
        assert [blocks.get_row_at(i)[1] for i in range(blocks.row_count)] == ["persona", "human", "goals"]
        assert table(app, "#episodes-table").row_count == 15
        assert table(app, "#facts-table").row_count == 4  # current facts only
        assert table(app, "#sessions-table").row_count == 4
        assert table(app, "#audit-table").row_count == 0
        await open_session(pilot, app, "trip-lisbon")
        assert table(app, "#kv-table").row_count == 4
        assert table(app, "#notes-table").row_count == 3 and table(app, "#checkpoints-table").row_count == 2
        assert app.query_one("#task-progress").percentage == pytest.approx(0.6)
        ttl = [table(app, "#kv-table").get_row_at(i)[2] for i in range(4)]
        assert "no expiry" in ttl and any("h" in t for t in ttl if t != "no expiry")


async def test_selecting_a_record_shows_it_whole(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("episodes")
        episodes = table(app, "#episodes-table")
        episodes.focus()
        booking = next(k for k, e in episodes.records.items() if e.tool_calls)
        episodes.move_cursor(row=episodes.get_row_index(booking))
        episode = episodes.records[booking]
        await wait_for(pilot, lambda: episode.id in plain(app.query_one("#detail-body").content), what="detail")
        shown = plain(app.query_one("#detail-body").content)
        assert episode.input in shown and episode.output in shown
        assert '"name": "hotel_search"' in shown and '"turn":' in shown  # tool calls and metadata as JSON


async def test_facts_as_of_a_date_and_history(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("facts")
        facts = table(app, "#facts-table")

        def objects():
            return {facts.get_row_at(i)[3].plain for i in range(facts.row_count)}

        assert "Porto" in objects() and "Lisbon" not in objects()
        app.query_one("#facts-as-of").value = "2026-01-01"
        await wait_for(pilot, lambda: "Lisbon" in objects(), what="facts as of January")
        assert "Porto" not in objects()
        app.query_one("#facts-as-of").value = ""
        app.query_one("#facts-history").value = True
        await wait_for(pilot, lambda: facts.row_count == 6, what="history")
        statuses = [facts.get_row_at(i)[0].plain for i in range(facts.row_count)]
        assert statuses.count("superseded") == 2


async def test_live_search_is_keyword_first_then_semantic(demo):
    gated = GatedEmbedder()
    app = app_for(demo, embedder=gated)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        assert "model warming" in app.sub_title
        await pilot.press("slash", *"vegetarian")
        results = table(app, "#results")
        await wait_for(
            pilot, lambda: results.row_count > 0 and "keyword only" in str(app.query_one("#search-status").render()), what="keyword results"
        )
        assert all(h.scores.vector is None for h in results.records.values())
        gated.gate.set()
        await wait_for(pilot, lambda: "model ready" in app.sub_title, what="model ready")
        await wait_for(pilot, lambda: any(h.scores.vector is not None for h in results.records.values()), what="semantic results")
        hit = next(iter(results.records.values()))
        assert "vegetarian" in hit.matched_terms


class SlowQueries(FakeEmbedder):
    """Encodes a query in ``delay`` seconds: a hybrid search whose semantic half is slow."""

    delay = 0.0

    def embed(self, texts):
        time.sleep(self.delay)
        return super().embed(texts)


async def statuses_painted(demo, monkeypatch, *, query_seconds: float, keyword_half_after: float) -> tuple[list[str], Any]:
    from inspector import searching
    from inspector.widgets.views import SearchView

    statuses: list[str] = []
    show = SearchView.show
    monkeypatch.setattr(SearchView, "show", lambda self, hits, status: (statuses.append(status), show(self, hits, status))[1])
    monkeypatch.setattr(searching, "KEYWORD_HALF_AFTER", keyword_half_after)
    embedder = SlowQueries()
    app = app_for(demo, embedder=embedder)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await wait_for(pilot, lambda: app.store.model_ready, what="model ready")
        await settle(pilot, app)
        # A first query, so the inspector knows how long this tenant's hybrid searches take.
        app.query_one("#query").value = "restaurant"
        await settle(pilot, app)
        statuses.clear()
        embedder.delay = query_seconds
        app.query_one("#query").value = "vegetarian restaurant"
        await settle(pilot, app)
        return statuses, table(app, "#results")


async def test_a_slow_hybrid_search_paints_its_keyword_half_first_then_the_hybrid_results(demo, monkeypatch):
    """The keyword half is on screen while the query is encoded and the vectors searched: the
    status line says semantic results are joining, and the hybrid results replace it."""
    statuses, results = await statuses_painted(demo, monkeypatch, query_seconds=0.5, keyword_half_after=0.0)
    assert len(statuses) == 2, statuses
    assert statuses[0].startswith("KEYWORD") and "semantic joining" in statuses[0]
    assert statuses[-1].startswith("HYBRID") and "semantic + keyword" in statuses[-1]
    assert any(h.scores.vector is not None for h in results.records.values())


async def test_a_hybrid_search_known_to_be_quick_paints_once(demo, monkeypatch):
    """Where the tenant's hybrid searches have been quicker than ``KEYWORD_HALF_AFTER``, no keyword
    half is painted to be replaced a moment later: one frame of results, the hybrid ones."""
    statuses, results = await statuses_painted(demo, monkeypatch, query_seconds=0.0, keyword_half_after=5.0)
    assert len(statuses) == 1 and statuses[0].startswith("HYBRID"), statuses
    assert any(h.scores.vector is not None for h in results.records.values())


async def test_new_results_under_the_focus_show_their_first_record_in_the_detail_pane(demo):
    """The results change while the user is in them (``m``, another query): the detail pane
    follows the record now under the cursor, not the one the previous results had there."""
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        app.query_one("#query").value = "vegetarian restaurant"
        await settle(pilot, app)
        results = table(app, "#results")
        results.focus()
        await settle(pilot, app)
        app.query_one("#query").value = "passport visa"
        await settle(pilot, app)
        first = results.selected()
        assert "passport" in first.text.lower()
        assert str(app.query_one("#detail").border_title).startswith(f"{first.kind} {first.id[:12]}")


async def test_the_selected_tenant_is_a_reactive_the_tenant_list_and_views_follow(demo):
    """Set directly, as a command or a test would, the selection reaches the tenant list (bound to
    it) and the views reload for that tenant."""
    from inspector.printable import tenant_label
    from inspector.widgets.tenant_list import TenantList

    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        sidebar = app.query_one(TenantList)
        assert sidebar.selected == "alice" == app.main_screen.user_id
        app.main_screen.user_id = "bob"
        await settle(pilot, app)
        assert sidebar.selected == "bob"
        assert app.query_one("#detail").tenant == tenant_label("bob")
        names = {b.name for b in app.store.working(user_id="bob")}
        assert set(table(app, "#blocks-table").records) == names


async def test_stale_search_results_are_dropped(demo):
    from inspector import messages as msg

    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        results = table(app, "#results")
        before = dict(results.records)
        view = app.query_one("#search-view")
        view.post_message(msg.SearchResults(view.seq - 1, [], "KEYWORD · old query"))
        await pilot.pause(0.2)
        assert results.records == before and results.row_count == len(before) > 0


async def test_search_filters_by_kind_and_session(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        results = table(app, "#results")
        app.query_one("#query").value = "Lisbon"
        app.query_one("#search-kind").value = "episodic"
        app.query_one("#search-session").value = "trip-day-trips"
        await wait_for(
            pilot, lambda: results.row_count and all(h.session_id == "trip-day-trips" for h in results.records.values()), what="filtered"
        )
        assert {h.kind for h in results.records.values()} == {"episode"}


async def test_episodes_page_in_as_you_scroll(tmp_path):
    path = tmp_path / "big.db"
    with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
        s.remember_many([{"input": f"turn {i}"} for i in range(250)], user_id="agent")
    app = app_for(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.main_screen.action_show_view("episodes")
        episodes = table(app, "#episodes-table")
        assert episodes.row_count == 100
        episodes.focus()
        episodes.move_cursor(row=95)
        await wait_for(pilot, lambda: episodes.row_count == 200, what="second page")
        episodes.move_cursor(row=195)
        await wait_for(pilot, lambda: episodes.row_count == 250, what="last page")
        assert len(set(episodes.records)) == 250


async def test_export_writes_a_reimportable_file(demo, tmp_path):
    app = app_for(demo)
    target = tmp_path / "alice-export.jsonl"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await pilot.press("e")
        await wait_for(pilot, lambda: showing(app, ExportScreen), what="export dialog")
        path_input = app.screen.query_one("#export-path")
        assert path_input.value.endswith(".jsonl") and "alice" in path_input.value
        path_input.value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: target.exists(), what="export file")
    with MemoryStore.open(tmp_path / "fresh.db", embedder=FakeEmbedder()) as fresh:
        report = fresh.import_(target)
        assert report.counts["episodes"] == 15 and report.tenants == ["alice"]


async def test_forget_dialog_defaults_to_cancel_then_erases_for_real(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "bob")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen), what="forget dialog")
        await wait_for(pilot, lambda: not app.screen.query_one("#erase").disabled, what="dry-run counts")
        assert app.focused.id == "cancel"
        counts = plain(app.screen.query_one("#forget-counts").content)
        assert counts.split("episodes")[1].split()[0] == "12"  # bob's episodes, from the dry run
        await pilot.press("enter")  # a stray Enter: Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, ForgetScreen), what="dialog closed")
        assert any(t.user_id == "bob" for t in app.main_screen.tenants)
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen) and not app.screen.query_one("#erase").disabled, what="dialog")
        await pilot.click("#erase")
        await wait_for(pilot, lambda: showing(app, ReceiptScreen), what="receipt")
        assert app.screen.receipt.counts["episodes"] == 12
        await pilot.press("enter")
        await wait_for(pilot, lambda: all(t.user_id != "bob" for t in app.main_screen.tenants), what="bob gone from the list")
        assert app.main_screen.user_id != "bob"
    with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
        assert s.profile(user_id="bob").counts.episodes == 0
        assert s.audit_log(user_id="bob")[0].actor == "inspector"


async def test_forget_one_session_from_the_dialog(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await pilot.press("f")
        await wait_for(pilot, lambda: showing(app, ForgetScreen), what="dialog")
        screen = app.screen
        screen.query_one("#scope-session").value = True
        await pilot.pause(0.1)
        screen.query_one("#forget-session").value = "trip-packing"
        await wait_for(pilot, lambda: not screen.query_one("#erase").disabled, what="session counts")
        await pilot.click("#erase")
        await wait_for(pilot, lambda: showing(app, ReceiptScreen), what="receipt")
        assert app.screen.receipt.counts["episodes"] == 2 and app.screen.receipt.session_id == "trip-packing"
    with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
        assert s.profile(user_id="alice").counts.episodes == 13


async def test_checkpoint_diff_and_restore_after_confirmation(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await open_session(pilot, app, "trip-lisbon")
        checkpoints = table(app, "#checkpoints-table")
        assert checkpoints.row_count == 2
        checkpoints.focus()
        checkpoints.move_cursor(row=0)
        await pilot.press("d")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="diff")
        assert "transport" in plain(app.screen.body) and "+" in plain(app.screen.body)
        await pilot.press("escape")
        await pilot.press("r")
        await wait_for(pilot, lambda: showing(app, ConfirmScreen), what="confirm")
        assert app.focused.id == "no"
        await pilot.press("enter")  # Cancel: nothing restored
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="closed")
        with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
            assert s.session("trip-lisbon", user_id="alice").get("transport") is not None
        await pilot.press("r")
        await wait_for(pilot, lambda: showing(app, ConfirmScreen), what="confirm")
        await pilot.click("#yes")
        kv = table(app, "#kv-table")
        await wait_for(pilot, lambda: "transport" not in kv.records and kv.row_count == 3, what="restored view")
    with MemoryStore.open(demo, embedder=FakeEmbedder()) as s:
        assert s.session("trip-lisbon", user_id="alice").get("transport") is None


async def test_the_checkpoint_keys_from_the_palette_and_in_the_past(demo):
    """The palette's checkpoint entries act on the checkpoint the user is in, and say why not
    elsewhere; in a past moment ``r`` is refused with the reason, where ``d`` still diffs."""
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await open_tenant(pilot, app, "alice")
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        commands["checkpoint: diff with the current state"]()
        await pilot.pause(0.1)
        assert notes(app)[-1] == "diff: pick a checkpoint in the Sessions view first" and not showing(app, DiffScreen)
        await open_session(pilot, app, "trip-lisbon")
        table(app, "#checkpoints-table").focus()
        await pilot.pause(0.1)
        commands["checkpoint: diff with the current state"]()
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="the palette's diff")
        await pilot.press("escape")

        app.main_screen.as_of = app.main_screen.now()  # a moment in the past by the time it is shown, every checkpoint made by then
        await settle(pilot, app)
        await open_session(pilot, app, "trip-lisbon")
        checkpoints = table(app, "#checkpoints-table")
        checkpoints.focus()
        await wait_for(pilot, lambda: checkpoints.row_count > 0, what="the checkpoints of then")
        await pilot.press("r")
        await pilot.pause(0.1)
        assert not showing(app, ConfirmScreen) and "past moment, read-only" in notes(app)[-1]
        await pilot.press("d")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="a diff in the past")


async def test_views_refresh_when_another_process_writes(demo):
    app = app_for(demo, poll_seconds=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "carol")
        app.main_screen.action_show_view("episodes")
        episodes = table(app, "#episodes-table")
        episodes.focus()
        episodes.move_cursor(row=3)
        selected = episodes.selected_key()
        with MemoryStore.open(demo, embedder=FakeEmbedder()) as agent:
            agent.remember("new turn from the agent", user_id="carol")
        await wait_for(pilot, lambda: episodes.row_count == 8, what="refresh")
        assert app.main_screen.user_id == "carol" and episodes.selected_key() == selected


async def test_help_and_command_palette(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: showing(app, HelpScreen), what="help")
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "tenant: export to a file" in titles and "tenant: forget…" in titles
        assert any(b.key == "f" and b.show for b in app.main_screen.BINDINGS)


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"just some notes\n", "not an SQLite database"),
        (None, "another application"),
    ],
)
async def test_a_path_that_is_not_a_store_gives_a_readable_message(tmp_path, content, expected):
    path = tmp_path / "thing.db"
    if content is None:
        import sqlite3

        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE invoices (id INTEGER)")
        conn.commit()
        conn.close()
    else:
        path.write_bytes(content)
    app = app_for(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: showing(app, FatalScreen), what="message")
        assert expected in str(app.screen.query_one("#fatal").content)
        assert app.main_screen.user_id is NO_TENANT


def give_goals_a_history(path) -> None:
    """alice's goals block, changed twice on a moving clock (the demo writes each block once)."""
    from datetime import timedelta

    from store.validation import set_clock

    from .inspector_support import FROZEN, frozen_clock

    try:
        with MemoryStore.open(path, embedder=FakeEmbedder()) as s:
            for minutes, content in (
                (5, "Plan a 5-day Lisbon trip in March within 1200 €.\nBook the hotel first."),
                (9, "Plan a 4-day Lisbon trip in March.\nBook the hotel first."),
            ):
                set_clock(lambda minutes=minutes: FROZEN + timedelta(minutes=minutes))
                s.update_block("goals", content, user_id="alice")
    finally:
        set_clock(frozen_clock)


async def test_h_on_a_block_shows_its_versions_newest_first_as_changes(demo):
    give_goals_a_history(demo)
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        app.main_screen.action_show_view("blocks")
        await settle(pilot, app)
        blocks = table(app, "#blocks-table")
        blocks.focus()
        blocks.move_cursor(row=[r.name for r in blocks.records.values()].index("goals"))
        await pilot.press("h")
        await wait_for(pilot, lambda: showing(app, DiffScreen), what="history")
        body = plain(app.screen.body)
        assert body.index("current") < body.index("then update")  # newest first
        assert "-Plan a 5-day Lisbon trip in March within 1200 €." in body and "+Plan a 4-day Lisbon trip in March." in body
        assert "+Book the hotel first." in body  # the second version's own change
        await pilot.press("q")
        await wait_for(pilot, lambda: not showing(app, DiffScreen), what="the history to close")


async def test_exporting_over_an_existing_file_says_what_to_do_in_the_inspector(demo, tmp_path):
    app = app_for(demo)
    target = tmp_path / "taken.jsonl"
    target.write_text("someone else's file")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await pilot.press("e")
        await wait_for(pilot, lambda: showing(app, ExportScreen), what="export dialog")
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("already exists" in n for n in notes(app)), what="the refusal")
        (said,) = [n for n in notes(app) if "already exists" in n]
        assert "another file name" in said and "overwrite" not in said and "--force" not in said
    assert target.read_text() == "someone else's file"


async def test_a_new_query_does_not_leave_the_previous_querys_hit_in_the_detail_pane(demo):
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await pilot.press("slash", *"vegetarian")
        results = table(app, "#results")
        await wait_for(pilot, lambda: results.row_count > 0, what="results")
        results.focus()
        before = list(results.records)
        detail = app.query_one("#detail")
        await wait_for(pilot, lambda: detail.record_title is not None, what="the hit in the detail pane")
        assert detail.record_source is results
        shown_first = detail.record_title
        query = app.query_one("#query")
        query.focus()
        query.value = ""
        await pilot.press(*"lisbon")
        await wait_for(pilot, lambda: list(results.records) != before, what="new results")
        await wait_for(pilot, lambda: detail.record_title != shown_first, what="the old hit gone")
        assert detail.record_title is None


async def test_a_search_thread_that_dies_is_reported_and_the_next_key_starts_another(demo, monkeypatch):
    """The search view's thread ends with an error outside any one search: the user is told,
    and typing on searches in a new thread."""
    from inspector import searching

    real = searching.LatestOnly.run
    runs = []

    def dying_once(self):
        runs.append(self)
        if len(runs) == 1:
            raise RuntimeError("the search loop broke")
        return real(self)

    monkeypatch.setattr(searching.LatestOnly, "run", dying_once)
    app = app_for(demo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await open_tenant(pilot, app, "alice")
        await wait_for(pilot, lambda: any("the search loop broke" in n for n in notes(app)), what="the failure shown")
        app.query_one("#query").value = "vegetarian restaurant"
        await settle(pilot, app)
        assert len(runs) == 2 and "HYBRID" in str(app.query_one("#search-status").render())
        assert not app.main_screen.search_view().search.busy
        assert table(app, "#results").row_count > 0
