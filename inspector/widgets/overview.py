"""The detail pane: a record whole, or, while none is shown, the selected tenant at a glance
(its episodes per day as a sparkline, its tier sizes as bars).

Both pictures read without colour (``NO_COLOR``, a monochrome terminal): the sparkline by the
height of its block characters, the bars by their length on a ``░`` track, each with its number
beside it. They fit the 48 cells the pane has at 80 columns. The App loads what they show in a
worker and hands it over (``show``); nothing here touches the store.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Label, Sparkline, Static

from ..formatting import activity_caption, tier_bars, tiers

DETAIL_HINT = "Select a record to see it whole."
ACTIVITY_DAYS = 42
"""Six weeks: one column a day in the 48 cells the pane has at 80 columns (two a day when wide)."""


class TenantOverview(Vertical):
    """One tenant at a glance: a caption, the activity sparkline, the tier bars."""

    SCOPED_CSS = False  # the rules below follow the App's size breakpoints, set on the Screen
    DEFAULT_CSS = """
    TenantOverview { height: auto; }
    TenantOverview #overview-caption { color: $text-muted; }
    TenantOverview Sparkline { width: 42; height: 1; }
    Screen.-tall TenantOverview Sparkline { height: 3; margin: 0 0 1 0; }
    Screen.-wide TenantOverview Sparkline { width: 84; }
    TenantOverview #overview-tiers { height: auto; }
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.loaded = False
        self._counts: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        yield Label("", id="overview-caption")
        yield Sparkline(None, id="overview-activity")
        yield Static("", id="overview-tiers")

    def show(self, activity: Any, counts: Any) -> None:
        """``activity``: a store Activity; ``counts``: the tenant's TierCounts."""
        self.query_one("#overview-caption", Label).update(activity_caption(activity.days, activity.episodes))
        self.query_one(Sparkline).data = activity.episodes
        self._counts = [(label, getattr(counts, field)) for label, field in tiers()]
        self.loaded = True
        self._draw_tiers()

    def clear(self) -> None:
        self.loaded = False
        self._counts = []
        self.query_one("#overview-caption", Label).update("")
        self.query_one(Sparkline).data = None
        self.query_one("#overview-tiers", Static).update("")

    def on_resize(self) -> None:
        self._draw_tiers()

    def _draw_tiers(self) -> None:
        if not self._counts:
            return
        # Two columns of bars 8 cells long fill the pane's 48 cells at 80 columns; wider, the
        # bars grow instead of leaving the pane half empty.
        width = self.size.width or 48
        bar_width = max(8, min(30, (width - 2 * 19) // 2))
        self.query_one("#overview-tiers", Static).update(tier_bars(self._counts, columns=2, bar_width=bar_width))


class DetailPane(VerticalScroll):
    """Shows the record a table asks for; otherwise the selected tenant's overview once it is
    loaded, else a hint. Which one shows is decided here, from what it was last told."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.tenant: str | None = None
        self.record_title: str | None = None
        self.record_source: Any = None  # the table whose record is shown

    def compose(self) -> ComposeResult:
        yield Static(DETAIL_HINT, id="detail-body")
        yield TenantOverview(id="overview")

    def on_mount(self) -> None:
        self._sync()

    def show_record(self, title: str, body: Any, source: Any = None) -> None:
        self.record_title, self.record_source = title, source
        self.query_one("#detail-body", Static).update(body)
        self._sync()

    def clear(self, tenant: str | None) -> None:
        """No record shown; ``tenant`` (its label) is the one selected, or None."""
        if tenant != self.tenant:
            self.query_one(TenantOverview).clear()
        self.tenant = tenant
        self.record_title = self.record_source = None
        self.query_one("#detail-body", Static).update(DETAIL_HINT)
        self._sync()

    def show_overview(self, tenant: str, activity: Any, counts: Any) -> None:
        self.tenant = tenant
        self.query_one(TenantOverview).show(activity, counts)
        self._sync()

    def _sync(self) -> None:
        overview = self.query_one(TenantOverview)
        overview.display = self.record_title is None and self.tenant is not None and overview.loaded
        self.query_one("#detail-body", Static).display = not overview.display
        # A border title given as a string is read as markup: a tenant or block named "[/]" crashed.
        if self.record_title is not None:
            self.border_title = Content(self.record_title)
        else:
            self.border_title = Content(f"{self.tenant} at a glance" if overview.display else "detail")
