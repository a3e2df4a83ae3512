"""The tenant list with more tenants than it lists: the first LISTED_AT_MOST (most recently
active first), a line saying how many more, and the filter finding any of them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from inspector.widgets.tenant_list import LISTED_AT_MOST
from store import MemoryStore

from .inspector_support import FROZEN, app_for, frozen, settle, wait_for  # noqa: F401 (frozen is a fixture)

TENANTS = LISTED_AT_MOST + 50


@pytest.fixture
def crowded(tmp_path):
    path = tmp_path / "crowded.db"
    with MemoryStore.open(path, embedder=None) as s:
        for i in range(TENANTS):
            # user0000 is the most recently active, so listed first; user0249 the least.
            s.remember(f"note {i}", output="ok", user_id=f"user{i:04d}", occurred_at=FROZEN - timedelta(minutes=i))
    return path


def listed(app) -> list[str]:
    options = app.query_one("#tenants")
    return [str(options.get_option_at_index(i).id) for i in range(options.option_count)]


async def test_the_list_holds_the_first_tenants_and_says_how_many_more(crowded):
    app = app_for(crowded)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.tenants and app.main_screen.tenants[0].counts is not None, what="counts")
        await settle(pilot, app)
        shown = listed(app)
        assert shown[:2] == ["user:user0000", "user:user0001"] and len(shown) == LISTED_AT_MOST + 1
        assert shown[-1] == "more"
        assert app.main_screen.tenants[-1].counts is None  # counted only once the filter shows it
        assert "50 more: type to filter" in str(app.query_one("#tenants").get_option_at_index(LISTED_AT_MOST).prompt)
        # A tenant past the first screenful is found by typing part of its name, and can be picked.
        app.query_one("#tenant-filter").focus()
        await pilot.press(*"r0247")
        await wait_for(pilot, lambda: listed(app) == ["user:user0247"], what="the filter")
        # Listed by name only at first (only the first screenful is counted), then counted.
        await wait_for(pilot, lambda: "1 episode" in str(app.query_one("#tenants").get_option_at_index(0).prompt), what="its counts")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.main_screen.user_id == "user0247", what="picked")
        # Cleared, the filter lists the first tenants again and keeps the pick in view.
        app.query_one("#tenant-filter").focus()
        for _ in range(5):
            await pilot.press("backspace")
        await wait_for(pilot, lambda: len(listed(app)) == LISTED_AT_MOST + 2, what="cleared")
        assert "user:user0247" in listed(app) and app.main_screen.user_id == "user0247"


async def test_while_the_store_opens_the_list_holds_a_screenful_of_names():
    """Before anything is counted the first frame waits for every tenant listed: a screenful."""
    from textual.app import App

    from inspector.messages import TenantName
    from inspector.widgets.tenant_list import LISTED_BY_NAME_ONLY, NO_TENANT, TenantList

    class Sidebar(App):
        def compose(self):
            yield TenantList()

    app = Sidebar()
    async with app.run_test(size=(60, 40)):
        sidebar = app.query_one(TenantList)
        names = [TenantName(f"user{i:04d}") for i in range(TENANTS)]
        sidebar.show(names, NO_TENANT, highlight_first=True)
        assert len(listed(app)) == LISTED_BY_NAME_ONLY + 1 and listed(app)[-1] == "more"
        counted = counted_summaries(names[:1]) + names[1:]
        sidebar.show(counted, NO_TENANT, highlight_first=True)
        assert len(listed(app)) == LISTED_AT_MOST + 1


def counted_summaries(names):
    """The first of ``names`` as the store lists it once counted."""
    from store.models import TenantSummary, TierCounts

    return [TenantSummary(user_id=t.user_id, counts=TierCounts(), last_activity=FROZEN) for t in names]
