"""What the App's parts need from the App, stated once.

The actions (``actions.ActionsMixin``) and the store's life (``lifecycle.StoreLifecycleMixin``)
are mixed into the App; the search (``searching.Search``) is a part the App holds; the tenant list
(``widgets.tenant_list``) and the tenant's views (``widgets.tenant_views``) are widgets bound to the
App's reactives; the command palette (``commands``) calls the App's actions. None of them imports the App: each relies on this
interface, the state it declares in its own class body (which only it uses), and Textual's own
``App`` API (notify, push_screen, query_one, run_worker...); and
``tests/test_inspector_layout.py`` checks that they use nothing else of the App and that the App
provides all of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Host(Protocol):
    # The App's state.
    store: Any
    """The open MemoryStore, or None while opening or after a failure."""
    user_id: Any
    """The selected tenant (None: the anonymous bucket), or loading.NO_TENANT."""
    opening: bool
    failed: str | None
    read_only_reason: str | None
    early_view: str | None
    """A view asked for by its digit before the views existed, shown once they do."""
    as_of: Any
    """The moment the selected tenant's views show (a datetime), or None: now, live."""

    # The App's services.
    def now(self) -> datetime: ...

    def tenant_views(self) -> Any:
        """The selected tenant's views (widgets.tenant_views.TenantViews), or None before they have mounted."""
        ...

    def visible_tenant(self, options: Any = None) -> Any: ...

    def load_tenants(self) -> None: ...

    # What one part offers the others.
    search: Any
    """The search as the user types (searching.Search): the worker-failure handler restarts its thread."""

    def post_message(self, message: Any) -> bool: ...

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...

    def select_tenant(self, user_id: Any) -> None: ...

    def update_subtitle(self) -> None: ...

    def disabled_reason(self, action: str) -> str | None:
        """Why ``action`` cannot run now (a read-only store, a past moment...), or None; also asked by the checkpoints table."""
        ...

    def reload_tenant_views(self) -> None: ...


@runtime_checkable
class Commands(Protocol):
    """The actions the command palette offers."""

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
    def action_step_back(self) -> None: ...
    def action_step_forward(self) -> None: ...
    def action_diff_with_now(self) -> None: ...
    def action_to_now(self) -> None: ...
