"""The tenant list: the filter above it, the names (with their counts once the store has them),
and the button to the store's audit log. It shows what it is given and says which tenant the
user highlights; the App decides what is selected.

Part of the first frame: it imports nothing the App has not loaded already.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Button, Input, OptionList
from textual.widgets.option_list import Option

from ..formatting import count, when
from ..messages import Carrier
from ..printable import tenant_label

NO_TENANT: Any = object()
"""No tenant selected (None is the anonymous bucket)."""

LISTED_AT_MOST = 200
"""Tenants in the list at once; typing in the filter finds any other (a list of every one of
10,000 tenants took seconds to build, at every refresh)."""
LISTED_BY_NAME_ONLY = 16
"""Tenants in the list while the store opens and none is counted yet: a screenful, since the
first frame waits for each one listed (200 put it 1.24x after a store of five tenants')."""


MORE = "more"
"""The line that says how many tenants the filter would find beyond those listed."""


def option_id(user_id: Any) -> str:
    return "anonymous" if user_id is None else f"user:{user_id}"


class TenantList(Vertical):
    """The sidebar. Posts :class:`Picked` when the user highlights another tenant."""

    BINDINGS = [Binding("a", "screen.store_audit", "Audit log"), Binding("down", "pick_tenant", "Tenants", show=False)]

    class Picked(Carrier):
        """The user highlighted a tenant, or the filter hid the selected one (NO_TENANT)."""

        user_id: Any

    class CountsWanted(Carrier):
        """The list shows tenants known by name only: the App should count them."""

        user_ids: list[Any]

    selected: reactive[Any] = reactive(NO_TENANT, init=False, always_update=True)
    """The App's selection, which this list shows (bound to ``MemlensApp.user_id``)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.tenants: list[Any] = []
        self.labels: list[str] = []
        self.highlight_first = True

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter tenants", id="tenant-filter")
        yield OptionList(id="tenants")
        yield Button("Audit log (all tenants)", id="store-audit", compact=True)

    def show(self, tenants: list[Any], selected: Any, *, highlight_first: bool) -> bool:
        """List ``tenants`` (TenantName until counted, then the store's Tenants) that the filter
        lets through, ``selected`` highlighted (with ``highlight_first``, the first one when none
        is). False when ``selected`` is not shown (the filter hides it, or it is gone): the App
        then selects none, since an action must never reach a tenant the list does not show."""
        if tenants is not self.tenants:
            self.labels = [tenant_label(t.user_id).lower() for t in tenants]  # once per list, not per key typed
        self.tenants, self.selected, self.highlight_first = tenants, selected, highlight_first
        options = self.query_one("#tenants", OptionList)
        wanted = self.query_one("#tenant-filter", Input).value.strip().lower()
        matching = [t for t, label in zip(tenants, self.labels, strict=True) if wanted in label]
        opening = not any(t.counts is not None for t in tenants)  # stops at the first counted, the list's first
        shown = matching[: LISTED_BY_NAME_ONLY if opening else LISTED_AT_MOST]
        if selected is not NO_TENANT and all(t.user_id != selected for t in shown):
            shown += [t for t in matching[len(shown) :] if t.user_id == selected]  # the selection stays in view
        options.clear_options()
        options.add_options([Option(_label(t), id=option_id(t.user_id)) for t in shown])
        if len(matching) > len(shown):
            more = len(matching) - len(shown)
            options.add_option(Option(Text(f"{more:,} more: type to filter", style="dim italic"), id=MORE, disabled=True))
        uncounted = [t.user_id for t in shown if t.counts is None]
        if uncounted:
            self.post_message(self.CountsWanted(uncounted))
        keys = [option_id(t.user_id) for t in shown]
        current = option_id(selected) if selected is not NO_TENANT else None
        if current in keys:
            options.highlighted = keys.index(current)
        elif selected is not NO_TENANT:
            return False
        elif keys and highlight_first:
            options.highlighted = 0
        return True

    def visible_tenant(self) -> Any:
        """The tenant highlighted in the list as shown, or NO_TENANT."""
        options = self.query_one("#tenants", OptionList)
        if options.highlighted is None:
            return NO_TENANT
        key = options.get_option_at_index(options.highlighted).id or ""
        if key == MORE:
            return NO_TENANT
        return None if key == "anonymous" else key.removeprefix("user:")

    @on(Input.Changed, "#tenant-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        if not self.show(self.tenants, self.selected, highlight_first=self.highlight_first):
            self.post_message(self.Picked(NO_TENANT))

    @on(Input.Submitted, "#tenant-filter")
    def action_pick_tenant(self) -> None:
        """From the filter into the list, on its first tenant if none is highlighted."""
        options = self.query_one("#tenants", OptionList)
        options.focus()
        if options.highlighted is None and options.option_count:
            options.highlighted = 0

    @on(OptionList.OptionHighlighted, "#tenants")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if not event.option_list.is_attached:
            return  # the App is closing and the list has gone (a query for it raised, now and then)
        user_id = self.visible_tenant()
        if user_id is not NO_TENANT and user_id != self.selected:
            self.post_message(self.Picked(user_id))


def _label(t: Any) -> Text:
    c = t.counts
    label = Text(tenant_label(t.user_id), style="italic" if t.user_id is None else "bold")
    if c is None:  # the name only, while the store opens: as many lines, so nothing moves
        label.append("\ncounting…\n\n\n\n", style="dim")
        return label
    # Lines of at most 23 characters: the width of the list at 80 columns.
    label.append(
        f"\n{count(c.episodes, 'episodes')} · {count(c.facts, 'facts')}\n{count(c.sessions, 'sessions')} · "
        f"{count(c.blocks, 'blocks')}\n{count(c.kv_entries, 'keys')} · {count(c.checkpoints, 'checkpoints')}",
        style="dim",
    )
    label.append(f"\nactive {when(t.last_activity)}\n", style="dim italic")
    return label
