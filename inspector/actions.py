"""The inspector's keys and actions: which are enabled (and why not), tab switching, and the
actions on the selected tenant: export and forget (a checkpoint's and a block's keys are their
tables', done by widgets.tenant_views).

Mixed into the App. Each collects parameters through a dialog, then runs the store call in
a thread worker that posts its result back. Handlers use Textual's naming convention
(``on_forget_done``), since ``@on`` is only collected from the App's own class body.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Input, OptionList

from . import messages
from .widgets.tenant_list import NO_TENANT
from .workers import call_store

# The dialogs (inspector.screens) and the views (inspector.widgets) are imported where used: after the first frame (app.py).

MAIN_TABLE = {
    "search": "#results",
    "blocks": "#blocks-table",
    "episodes": "#episodes-table",
    "facts": "#facts-table",
    "sessions": "#sessions-table",
    "audit": "#audit-table",
}


class ActionsMixin:
    """Mixed into the App; uses only host.Host and Textual's App API (tests/test_inspector_layout.py)."""

    def disabled_reason(self, action: str) -> str | None:
        """Why ``action`` cannot run now, or None. Keys of disabled actions show dimmed and say this."""
        if action in ("forget", "restore") and self.read_only_reason:
            return f"the store is read-only ({self.read_only_reason})"
        if action in ("export", "forget", "restore") and self.as_of is not None:
            return "the views show a past moment, read-only: press n for now"
        if action in ("export", "forget", "restore") and self.opening:
            return "the store is still opening"  # the tenant names show before the store has opened
        if action in ("export", "forget") and (self.store is None or self.user_id is NO_TENANT):
            return "no tenant selected: pick one in the tenant list"
        if action in ("timeline", "step_back", "step_forward", "diff_with_now") and (self.store is None or self.user_id is NO_TENANT):
            return "no tenant selected: pick one in the tenant list"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.failed:
            return action in ("quit", "help_quit")
        if action == "focus_tenants" and self.focused is not None and self.focused.id == "tenants":
            return False  # already there: off the footer, which needs the room at 80 columns
        if action == "to_now" and self.as_of is None:
            return False  # on the footer only in the past
        if action == "focus_search":
            # Bound with priority, so it is asked first on every screen: off in a dialog, in what
            # takes "/" as text, and before the views have mounted (the search box is not there).
            return self.screen is self.screen_stack[0] and not self.typing_here()
        return None if self.disabled_reason(action) else True

    def typing_here(self) -> bool:
        """The focused widget takes printable keys as text: a text field, or an open Select's type-to-search."""
        from textual.widgets import Select  # loaded with Textual's App already: no cost to the first frame

        focused = self.focused
        return isinstance(focused, Input) or (focused is not None and isinstance(focused.parent, Select))

    def on_key(self, event: events.Key) -> None:
        """A key whose action is disabled says why, instead of doing nothing."""
        active = self.screen.active_bindings.get(event.key)
        if active is None or active.enabled:
            return
        # The widget that owns the key says why, if it has its own reasons (the checkpoints table).
        reasons = getattr(active.node, "disabled_reason", self.disabled_reason)
        reason = reasons(active.binding.action.split(".")[-1].split("(")[0])
        if reason:
            event.stop()
            self.notify(f"{active.binding.description}: {reason}", severity="warning")

    def action_show_view(self, name: str) -> None:
        if not self.query("#tabs"):  # pressed before the views exist: shown once they do
            self.early_view = name
            return
        tabs = self.query_one("#tabs")
        leaving = self.focused is not None and tabs in self.focused.ancestors
        tabs.active = name
        if leaving:
            # Focus would otherwise fall back to a widget of the hidden tab (the search field, whose
            # text it selected), and that switches the tab back: go to the shown tab's list instead.
            self.screen.set_focus(self.query_one(MAIN_TABLE[name]))

    def action_focus_search(self) -> None:
        if not self.query("#query"):  # before the views exist: a box of its own takes the text
            early = self.query_one("#early-query", Input)
            early.display = True
            self.screen.set_focus(early)
            return
        self.action_show_view("search")
        # At once, not as Widget.focus() does it (a callback queued behind keys already typed):
        # the next key reaching the App goes to whatever has the focus when it is handed on.
        self.screen.set_focus(self.query_one("#query", Input))

    def checkpoint_action(self, action: str) -> None:
        """For the command palette: ``action`` on the checkpoint under the cursor, if the user is in the checkpoints table."""
        focused: Any = self.focused
        if focused is None or focused.id != "checkpoints-table":
            self.notify(f"{action}: pick a checkpoint in the Sessions view first", severity="warning")
            return
        reason = focused.disabled_reason(action)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning")
            return
        focused.post_message(focused.Wanted(action, focused.selected()))

    def action_focus_tenants(self) -> None:
        self.query_one("#tenants", OptionList).focus()

    def allowed(self, action: str) -> bool:
        """For actions reached without their key (the command palette): refuse with the reason."""
        reason = self.disabled_reason(action)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning")
            return False
        if action in ("export", "forget") and self.visible_tenant() != self.user_id:
            self.notify(f"{action}: no tenant selected: pick one in the tenant list", severity="warning")
            return False  # never act on a tenant the list does not show selected
        return True

    def action_export(self) -> None:
        if not self.allowed("export"):
            return
        stamp = self.now().strftime("%Y%m%d-%H%M%S")
        name = "anonymous" if self.user_id is None else "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.user_id)
        default = str(Path.cwd() / f"memlens-export-{name}-{stamp}.jsonl")
        user = self.user_id

        def chosen(path: str | None) -> None:
            if path:
                self.export_tenant(user, path)

        from .screens.dialogs import ExportScreen

        self.push_screen(ExportScreen(user, default), chosen)

    def export_tenant(self, user_id: Any, path: str) -> None:
        store, target = self.store, Path(path).expanduser()
        fmt = "json" if target.suffix == ".json" else "jsonl"
        call_store(
            self,
            "export",
            lambda: store.export_to(target, user_ids=[user_id], fmt=fmt, actor="inspector"),
            lambda manifest: messages.ExportDone(str(target.resolve()), manifest),
            group="export",
            errors=(OSError,),
        )

    def on_export_done(self, m: messages.ExportDone) -> None:
        total = sum(m.manifest["counts"].values())
        unrecorded = " (read-only store: not in its audit log)" if self.read_only_reason else ""
        self.notify(f"exported {total} records to {m.path}{unrecorded}", title="export", timeout=10)

    def action_forget(self) -> None:
        if not self.allowed("forget"):
            return
        user = self.user_id

        def chosen(scope) -> None:
            if scope is not None:
                self.forget(user, *scope)

        from .screens.dialogs import ForgetScreen

        store = self.store

        def preview(session_id: str | None, before: datetime | None) -> Any:
            return store.forget(user_id=user, session_id=session_id, before=before, dry_run=True, actor="inspector")

        self.push_screen(ForgetScreen(user, self.tenant_views().session_names, preview), chosen)

    def forget(self, user_id: Any, session_id: str | None, before: datetime | None) -> None:
        store = self.store
        call_store(
            self,
            "forget",
            lambda: store.forget(user_id=user_id, session_id=session_id, before=before, actor="inspector"),
            messages.ForgetDone,
            group="forget",
        )

    def on_forget_done(self, m: messages.ForgetDone) -> None:
        self.tenant_views().clear_detail()  # it may show a record that is gone now
        from .screens.dialogs import ReceiptScreen

        self.push_screen(ReceiptScreen(m.receipt))
        self.load_tenants()
        self.reload_tenant_views()
