"""What the main screen's parts need from it, stated once.

The main screen (``screens.main``) builds the tenant list (``widgets.tenant_list``) and the
tenant's views (``widgets.tenant_views``), widgets bound to its reactives, and holds the state
they show; the search view holds the search (``searching.Search``); the dialogs get what they
load as functions; the command palette (``commands``) calls the main screen's actions. The App
keeps the store's life and tells the main screen of it.
None of them imports the App or the main screen: the tenant views and the search rely on this
interface (what they read on ``self.host``), and ``tests/test_inspector_layout.py`` checks that
they use nothing else and that the main screen provides all of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from store.views import StoreView


@runtime_checkable
class Host(Protocol):
    # The main screen's state.
    store: StoreView | None
    """The open store (or a view of another library's memory), or None while opening or after a failure."""
    user_id: Any
    """The selected tenant (None: the anonymous bucket), or widgets.tenant_list.NO_TENANT."""
    opening: bool
    failed: str | None
    read_only_reason: str | None
    early_view: str | None
    """A view asked for by its digit before the views existed, shown once they do."""
    as_of: Any
    """The moment the selected tenant's views show (a datetime), or None: now, live."""
    show_timings: bool
    """Whether the search line shows the time a search took (off for snapshots)."""

    # Its services.
    def now(self) -> datetime: ...

    def tenant_views(self) -> Any:
        """The selected tenant's views (widgets.tenant_views.TenantViews), or None before they have mounted."""
        ...

    def visible_tenant(self) -> Any: ...

    def load_tenants(self) -> None: ...

    def post_message(self, message: Any) -> bool: ...

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...

    def reload_tenant_views(self) -> None: ...


@runtime_checkable
class Gatekeeper(Protocol):
    """The screen that knows whether an action may run now (the main screen, screens.main)."""

    def disabled_reason(self, action: str) -> str | None: ...


@runtime_checkable
class Commands(Protocol):
    """The actions the command palette offers (the main screen's, screens.main)."""

    def action_export(self) -> None: ...
    def action_forget(self) -> None: ...
    def action_focus_tenants(self) -> None: ...
    def action_focus_search(self) -> None: ...
    def checkpoint_action(self, action: str) -> None: ...
    def action_show_view(self, name: str) -> None: ...
    def action_store_audit(self) -> None: ...
    def action_reload(self) -> None: ...
    def action_help(self) -> None: ...
    def action_timeline(self) -> None: ...
    def action_recalls(self) -> None: ...
    def action_step_back(self) -> None: ...
    def action_step_forward(self) -> None: ...
    def action_diff_with_now(self) -> None: ...
    def action_to_now(self) -> None: ...
