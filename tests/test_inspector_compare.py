"""Compare mode: ``m`` in the search results searches the same query as hybrid, vector only and
keyword only in turn, and the results shown are each mode's own order."""

from __future__ import annotations

from inspector.app import SEARCH_LIMIT
from inspector.views import RecordTable, SearchView

from .inspector_support import app_for, demo, frozen, open_tenant, settle, wait_for  # noqa: F401 (fixtures)

QUERY = "vegetarian restaurant"


def status(app) -> str:
    return str(app.query_one("#search-status").render())


def shown(app) -> list[str]:
    table = app.query_one("#results", RecordTable)
    return [table.coordinate_to_cell_key((row, 0)).row_key.value for row in range(table.row_count)]


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
        orders = {}
        for mode in ("hybrid", "vector", "keyword", "hybrid"):
            await wait_for(pilot, lambda: status(app).startswith(mode.upper()), what=f"{mode} results")
            await settle(pilot, app)
            assert app.query_one(SearchView).mode == mode
            expected = [f"{h.kind}:{h.id}" for h in app.store.recall(QUERY, user_id="alice", limit=SEARCH_LIMIT, kind="all", mode=mode, prefix=True)]
            orders.setdefault(mode, shown(app))
            assert shown(app) == expected, mode
            await pilot.press("m")
        # The ranks really move: otherwise the test above would pass with the mode ignored.
        assert orders["hybrid"] != orders["vector"] and orders["vector"] != orders["keyword"]
