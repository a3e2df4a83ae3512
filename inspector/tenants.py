"""The tenant list: the names read before the store opens, the filter, and which tenant is selected.

Mixed into the App. Handlers use Textual's naming convention (``on_tenants_loaded``), since
``@on`` is only collected from the App's own class body; those for a widget's messages check
the widget's id, as ``@on(..., "#tenants")`` did.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from . import messages
from .formatting import count, when
from .loading import NO_TENANT
from .locations import is_server_url
from .printable import tenant_label


@dataclass
class TenantName:
    """A tenant known by name only, until the store has opened and counted its records."""

    user_id: str | None
    counts: None = None


class Glance:
    """The tenant names (store.glance), read in a thread of its own from the moment the App is made."""

    def __init__(self, path: Path | str):
        self.names: list[Any] | None = None
        self.done = threading.Event()
        if is_server_url(path):  # no file to glance at: the open lists the tenants
            self.done.set()
            return
        threading.Thread(target=self._read, args=(path,), name="memlens-glance", daemon=True).start()

    def _read(self, path: Path) -> None:
        from store.glance import tenant_names

        try:
            self.names = tenant_names(path)
        finally:
            self.done.set()


class TenantListMixin:
    """Mixed into the App; uses only host.Host, its own state below and Textual's App API
    (tests/test_inspector_layout.py)."""

    tenants: list[Any]
    """What the list shows: TenantName until the store has counted them, then the store's Tenants."""
    picked_a_tenant: bool
    """The first tenant is selected once, at start-up; never again by itself."""
    glance: Glance

    @staticmethod
    def tenant_option_id(user_id: Any) -> str:
        return "anonymous" if user_id is None else f"user:{user_id}"

    def await_names(self) -> None:
        """In a worker: the names once the glance has read them (the first frame did not wait that long)."""
        self.glance.done.wait()
        self.post_message(messages.TenantNames(self.glance.names))

    def on_tenant_names(self, message: messages.TenantNames) -> None:
        if message.names and not self.tenants:  # else the store has already counted them
            self.tenants = [TenantName(user_id) for user_id in message.names]
            self.show_tenants()

    def load_tenants(self) -> None:
        self.call_store("tenants", self.store.tenants, messages.TenantsLoaded, group="tenants", exclusive=True)

    def on_tenants_loaded(self, message: messages.TenantsLoaded) -> None:
        self.tenants = message.tenants
        self.show_tenants()

    def show_tenants(self) -> None:
        options = self.query_one("#tenants", OptionList)
        wanted = self.query_one("#tenant-filter", Input).value.strip().lower()
        shown = [t for t in self.tenants if wanted in tenant_label(t.user_id).lower()]
        options.clear_options()
        for t in shown:
            c = t.counts
            label = Text(tenant_label(t.user_id), style="italic" if t.user_id is None else "bold")
            if c is None:  # the name only, while the store opens: as many lines, so nothing moves
                label.append("\ncounting…\n\n\n\n", style="dim")
            else:
                # Lines of at most 23 characters: the width of the list at 80 columns.
                label.append(
                    f"\n{count(c.episodes, 'episodes')} · {count(c.facts, 'facts')}\n{count(c.sessions, 'sessions')} · "
                    f"{count(c.blocks, 'blocks')}\n{count(c.kv_entries, 'keys')} · {count(c.checkpoints, 'checkpoints')}",
                    style="dim",
                )
                label.append(f"\nactive {when(t.last_activity)}\n", style="dim italic")
            options.add_option(Option(label, id=self.tenant_option_id(t.user_id)))
        keys = [self.tenant_option_id(t.user_id) for t in shown]
        current = self.tenant_option_id(self.user_id) if self.user_id is not NO_TENANT else None
        if current in keys:
            options.highlighted = keys.index(current)
        elif self.user_id is not NO_TENANT:
            # Hidden by the filter, erased, or removed by another process: an action must never
            # reach a tenant the list does not show selected, so nothing stays selected.
            self.select_tenant(NO_TENANT)
        elif keys and not self.picked_a_tenant:
            options.highlighted = 0

    def visible_tenant(self, options: OptionList | None = None) -> Any:
        """The tenant highlighted in the list as shown, or NO_TENANT."""
        options = options or self.query_one("#tenants", OptionList)
        if options.highlighted is None:
            return NO_TENANT
        option_id = options.get_option_at_index(options.highlighted).id or ""
        return None if option_id == "anonymous" else option_id.removeprefix("user:")

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "tenant-filter":
            event.stop()
            self.show_tenants()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "tenant-filter":
            self.action_pick_tenant()

    def action_pick_tenant(self) -> None:
        """From the filter into the list, on its first tenant if none is selected."""
        options = self.query_one("#tenants", OptionList)
        options.focus()
        if options.highlighted is None and options.option_count:
            options.highlighted = 0

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id != "tenants":
            return
        if not event.option_list.is_attached:
            return  # the App is closing and the list has gone (a query for it raised, now and then)
        user_id = self.visible_tenant(event.option_list)
        if user_id is not NO_TENANT and user_id != self.user_id:
            self.select_tenant(user_id)

    def select_tenant(self, user_id: Any) -> None:
        self.leave_the_past()  # moments are the tenant's own: another tenant opens at now
        self.user_id = user_id
        self.picked_a_tenant = self.picked_a_tenant or user_id is not NO_TENANT
        self.marked_checkpoint = None
        self.session_names = []
        self.clear_views()
        self.refresh_bindings()
        self.load_tenant_views()
