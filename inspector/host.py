"""What the App's parts need from the App, stated once.

The actions (``actions.ActionsMixin``), the tier views' loading (``loading.TenantViewsMixin``)
and the store's life (``lifecycle.StoreLifecycleMixin``) are mixed into the App; the search
(``searching.Search``) is a part the App holds (the tenant list is a widget,
``widgets.tenant_list``, and the App's own methods select a tenant); the command palette
(``commands``) calls the App's actions. None of them imports the App: each relies on this
interface, the state it declares in its own class body (which only it uses), and Textual's own
``App`` API (notify, push_screen, query_one, run_worker...); and
``tests/test_inspector_layout.py`` checks that they use nothing else of the App and that the App
provides all of it.
"""

from __future__ import annotations

from collections.abc import Callable
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
    marked_checkpoint: Any
    session_names: list[str]
    early_view: str | None
    """A view asked for by its digit before the views existed, shown once they do."""
    as_of: Any
    """The moment the selected tenant's views show (a datetime), or None: now, live."""

    # The App's services.
    def now(self) -> datetime: ...

    def call_store(
        self,
        what: str,
        call: Callable[[], Any],
        then: Callable[[Any], Any],
        *,
        group: str,
        exclusive: bool = False,
        errors: tuple[type[BaseException], ...] = (),
    ) -> None: ...

    def fetch(self, view: str, call: Callable[[], Any], make: Callable[[Any, Any], Any]) -> None: ...

    def visible_tenant(self, options: Any = None) -> Any: ...

    def load_tenants(self) -> None: ...

    # What one part offers the others.
    search: Any
    """The search as the user types (searching.Search): the worker-failure handler restarts its thread."""

    def post_message(self, message: Any) -> bool: ...

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...

    def load_tenant_views(self) -> None: ...

    def load_session(self, session_id: str) -> None: ...

    def clear_detail(self) -> None: ...

    def clear_views(self) -> None: ...

    def select_tenant(self, user_id: Any) -> None: ...

    def update_subtitle(self) -> None: ...

    def leave_the_past(self) -> None: ...


@runtime_checkable
class Commands(Protocol):
    """The actions the command palette offers."""

    def action_export(self) -> None: ...
    def action_forget(self) -> None: ...
    def action_focus_tenants(self) -> None: ...
    def action_focus_search(self) -> None: ...
    def action_diff(self) -> None: ...
    def action_mark(self) -> None: ...
    def action_restore(self) -> None: ...
    def action_show_view(self, name: str) -> None: ...
    def action_store_audit(self) -> None: ...
    def action_reload(self) -> None: ...
    def action_help(self) -> None: ...
    def action_timeline(self) -> None: ...
    def action_step_back(self) -> None: ...
    def action_step_forward(self) -> None: ...
    def action_diff_with_now(self) -> None: ...
    def action_to_now(self) -> None: ...
