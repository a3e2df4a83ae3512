"""The main screen: the tenant list and the selected tenant's views (composed by the App into
it), and what the keys do there: which actions are enabled (and why not), switching views,
export and forget, time travel, the store's audit log and help.

The App owns the store and the state the widgets are bound to (the selected tenant, the moment
shown); this screen reads and sets them on ``self.app`` (``inspector.host.Host``), and runs the
store work its keys ask for in workers of its own (``inspector.workers``). The dialogs and the
views are imported where used: after the first frame (``inspector.app``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import on
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Button, Input, OptionList

from .. import messages
from ..host import Host
from ..widgets.tenant_list import NO_TENANT
from ..workers import call_store

if TYPE_CHECKING:
    from store.views import StoreView

VIEWS = ["search", "blocks", "episodes", "facts", "sessions", "audit"]
MAIN_TABLE = {
    "search": "#results",
    "blocks": "#blocks-table",
    "episodes": "#episodes-table",
    "facts": "#facts-table",
    "sessions": "#sessions-table",
    "audit": "#audit-table",
}
"""Each view's list, where a digit key puts the focus."""


class MainScreen(Screen[None]):
    BLANK = True  # covered by its widgets: drawn as blank background (widgets/backdrops.py says why)
    BINDINGS = [
        # A priority binding: it acts when "/" reaches the screen, before the next key is handed
        # to the widget that had the focus. An ordinary binding acts only after "/" has gone to
        # that widget and bubbled back, and a fast typist's next letter was by then queued at the
        # tenant list and lost. check_action lets "/" through wherever it types.
        Binding("slash", "focus_search", "Search", priority=True),
        Binding("t", "focus_tenants", "Tenants"),
        Binding("escape", "focus_tenants", "Tenants", show=False),
        Binding("e", "export", "Export"),
        Binding("f", "forget", "Forget"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "app.quit", "Quit"),
        Binding("ctrl+r", "reload", "Reload", show=False),
        # Time travel: every view of the selected tenant as of a past moment (inspector.time_travel).
        # Off the footer, which is full at 80 columns; the help, the palette and the banner shown
        # in the past name them.
        Binding("T", "timeline", "Timeline", show=False),
        Binding("R", "recalls", "Recalls", show=False),
        Binding("left_square_bracket", "step_back", "Earlier", show=False),
        Binding("right_square_bracket", "step_forward", "Later", show=False),
        Binding("D", "diff_with_now", "Diff with now", show=False),
        Binding("n", "to_now", "Now"),
        *[Binding(str(i + 1), f"show_view('{name}')", name.title(), show=False) for i, name in enumerate(VIEWS)],
    ]

    @property
    def host(self) -> Host:
        """The App, as far as this screen uses it."""
        return cast(Host, self.app)

    # --- which actions are enabled (and why not), switching views, export and forget -------------

    def open_store(self) -> StoreView:
        """The open store, for an action that needs one: those actions are refused while none is
        open (:meth:`disabled_reason`), so reaching here without one is a defect, said as such."""
        if self.host.store is None:
            raise RuntimeError("an action that needs the store ran while none was open")
        return self.host.store

    def disabled_reason(self, action: str) -> str | None:
        """Why ``action`` cannot run now, or None. Keys of disabled actions show dimmed and say this."""
        # Another library's memory is read-only, but erasable in place (through that library).
        erasable = action == "forget" and getattr(self.host.store, "erases_in_place", False)
        if action in ("forget", "restore") and self.host.read_only_reason and not erasable:
            return f"the store is read-only ({self.host.read_only_reason})"
        if action in ("export", "forget", "restore") and self.host.as_of is not None:
            return "the views show a past moment, read-only: press n for now"
        if action in ("export", "forget", "restore") and self.host.opening:
            return "the store is still opening"  # the tenant names show before the store has opened
        if action == "recalls" and self.host.store is not None and not hasattr(self.host.store, "recall_traces"):
            return "another library's memory, shown where it lives, keeps no recalls"
        if action in ("export", "forget", "timeline", "recalls", "step_back", "step_forward", "diff_with_now") and (
            self.host.store is None or self.host.user_id is NO_TENANT
        ):
            return "no tenant selected: pick one in the tenant list"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.host.failed:
            return action in ("quit", "help_quit")
        if action == "focus_tenants" and self.app.focused is not None and self.app.focused.id == "tenants":
            # Already there: off the footer, which needs the room at 80 columns. (The App's focus,
            # which under a dialog is the dialog's: the footer behind it lists t, as it always has.)
            return False
        if action == "to_now" and self.host.as_of is None:
            return False  # on the footer only in the past
        if action == "focus_search":
            # Bound with priority, so it is asked first on every screen: off in a dialog, in what
            # takes "/" as text, and before the views have mounted (the search box is not there).
            return self.app.screen is self and not self.typing_here()
        return None if self.disabled_reason(action) else True

    def typing_here(self) -> bool:
        """The focused widget takes printable keys as text: a text field, or an open Select's type-to-search."""
        from textual.widgets import Select  # loaded with Textual's App already: no cost to the first frame

        focused = self.focused
        return isinstance(focused, Input) or (focused is not None and isinstance(focused.parent, Select))

    def action_show_view(self, name: str) -> None:
        if not self.query("#tabs"):  # pressed before the views exist: shown once they do
            self.host.early_view = name
            return
        tabs: Any = self.query_one("#tabs")  # a TabbedContent, imported after the first frame
        leaving = self.focused is not None and tabs in self.focused.ancestors
        tabs.active = name
        if leaving:
            # Focus would otherwise fall back to a widget of the hidden tab (the search field, whose
            # text it selected), and that switches the tab back: go to the shown tab's list instead.
            self.set_focus(self.query_one(MAIN_TABLE[name]))

    def action_focus_search(self) -> None:
        if not self.query("#query"):  # before the views exist: a box of its own takes the text
            early = self.query_one("#early-query", Input)
            early.display = True
            self.set_focus(early)
            return
        self.action_show_view("search")
        # At once, not as Widget.focus() does it (a callback queued behind keys already typed):
        # the next key reaching the App goes to whatever has the focus when it is handed on.
        self.set_focus(self.query_one("#query", Input))

    def checkpoint_action(self, action: str) -> None:
        """For the command palette: ``action`` on the checkpoint under the cursor, if the user is in the checkpoints table."""
        focused: Any = self.focused
        if focused is None or focused.id != "checkpoints-table":
            self.notify(f"{action}: pick a checkpoint in the Sessions view first", severity="warning")
            return
        reason = focused.want(action)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning")

    def action_focus_tenants(self) -> None:
        self.query_one("#tenants", OptionList).focus()

    def allowed(self, action: str) -> bool:
        """For actions reached without their key (the command palette): refuse with the reason."""
        reason = self.disabled_reason(action)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning")
            return False
        if action in ("export", "forget") and self.host.visible_tenant() != self.host.user_id:
            self.notify(f"{action}: no tenant selected: pick one in the tenant list", severity="warning")
            return False  # never act on a tenant the list does not show selected
        return True

    def action_export(self) -> None:
        if not self.allowed("export"):
            return
        stamp = self.host.now().strftime("%Y%m%d-%H%M%S")
        name = "anonymous" if self.host.user_id is None else "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.host.user_id)
        default = str(Path.cwd() / f"memlens-export-{name}-{stamp}.jsonl")
        user = self.host.user_id

        def chosen(path: str | None) -> None:
            if path:
                self.export_tenant(user, path)

        from .dialogs import ExportScreen

        self.app.push_screen(ExportScreen(user, default), chosen)

    def export_tenant(self, user_id: Any, path: str) -> None:
        store, target = self.open_store(), Path(path).expanduser()
        fmt = "json" if target.suffix == ".json" else "jsonl"

        def export() -> Any:
            from store.errors import OutputExistsError

            try:
                return store.export_to(target, user_ids=[user_id], fmt=fmt, actor="inspector")
            except OutputExistsError:
                raise OutputExistsError(
                    f"{target} already exists; nothing was written. Press e again and give another file name, or delete that file first"
                ) from None

        call_store(
            self,
            "export",
            export,
            lambda manifest: messages.ExportDone(str(target.resolve()), manifest),
            group="export",
            errors=(OSError,),
        )

    def on_export_done(self, m: messages.ExportDone) -> None:
        total = sum(m.manifest["counts"].values())
        unrecorded = " (read-only store: not in its audit log)" if self.host.read_only_reason else ""
        self.notify(f"exported {total} records to {m.path}{unrecorded}", title="export", timeout=10)

    def action_forget(self) -> None:
        if not self.allowed("forget"):
            return
        user = self.host.user_id

        def chosen(scope) -> None:
            if scope is not None:
                self.forget(user, *scope)

        from .dialogs import ForgetScreen

        store = self.open_store()

        def preview(session_id: str | None, before: datetime | None) -> Any:
            return store.forget(user_id=user, session_id=session_id, before=before, dry_run=True, actor="inspector")

        self.app.push_screen(ForgetScreen(user, self.host.tenant_views().session_names, preview), chosen)

    def forget(self, user_id: Any, session_id: str | None, before: datetime | None) -> None:
        store = self.open_store()
        call_store(
            self,
            "forget",
            lambda: store.forget(user_id=user_id, session_id=session_id, before=before, actor="inspector"),
            messages.ForgetDone,
            group="forget",
        )

    def on_forget_done(self, m: messages.ForgetDone) -> None:
        self.host.tenant_views().clear_detail()  # it may show a record that is gone now
        from .dialogs import ReceiptScreen

        self.app.push_screen(ReceiptScreen(m.receipt))
        self.host.load_tenants()
        self.host.reload_tenant_views()

    # --- time travel ---

    def action_timeline(self) -> None:
        if not self.allowed("timeline"):
            return
        from ..time_travel import NOW
        from .timeline import TimelineScreen

        store, user = self.open_store(), self.host.user_id

        def chosen(moment: Any) -> None:
            if moment is not None and user == self.host.user_id:
                self.host.as_of = None if moment == NOW else moment

        self.app.push_screen(TimelineScreen(user, self.host.as_of, lambda: store.timeline(user_id=user, limit=1000)), chosen)

    def action_recalls(self) -> None:
        if not self.allowed("recalls"):
            return
        from .recalls import RecallsScreen

        user = self.host.user_id

        def chosen(trace: Any) -> None:
            views = self.host.tenant_views()
            if trace is not None and user == self.host.user_id and views is not None:
                views.search_as(trace)
                self.action_show_view("search")

        self.app.push_screen(RecallsScreen(user, self.host.as_of, self.open_store()), chosen)

    def action_step_back(self) -> None:
        self._step(back=True)

    def action_step_forward(self) -> None:
        if self.host.as_of is None:
            self.notify("already at now: [ steps back one change", severity="warning")
            return
        self._step(back=False)

    def _step(self, *, back: bool) -> None:
        if not self.allowed("timeline"):
            return
        from ..time_travel import TICK, moments_of, step_back, step_forward

        store, user, shown = self.open_store(), self.host.user_id, self.host.as_of
        if back:
            # The changes up to the moment shown, newest first: the two newest moments are all a
            # step back needs, however long the tenant's history is.
            until = None if shown is None else shown + TICK
            read = lambda: store.timeline(user_id=user, until=until, limit=1000)  # noqa: E731
        else:
            # The changes after it (a history of more than 10,000 changes since the moment would
            # step to the oldest of the newest 10,000).
            read = lambda: store.timeline(user_id=user, since=shown + TICK, limit=10_000)  # noqa: E731

        def target(changes: list[Any]) -> messages.MomentChosen:
            moments = moments_of(changes)
            return messages.MomentChosen(user, shown, step_back(moments, shown) if back else step_forward(moments, shown))

        call_store(self, "timeline", read, target, group="step", exclusive=True)

    @on(messages.MomentChosen)
    def _moment_chosen(self, m: messages.MomentChosen) -> None:
        from ..time_travel import NOW

        if m.user_id != self.host.user_id or m.shown != self.host.as_of:
            return  # the user has moved on since the step was asked for
        if m.moment is None:
            self.notify("no earlier change: this is the memory before its first", severity="warning")
        else:
            self.host.as_of = None if m.moment == NOW else m.moment

    def action_to_now(self) -> None:
        self.host.as_of = None

    def action_diff_with_now(self) -> None:
        if self.host.as_of is None:
            self.notify("Diff with now: go to a past moment first ([ or T)", severity="warning")
            return
        from ..time_travel import diff_title

        self.tenant_diff(self.host.as_of, self.host.now(), diff_title(self.host.as_of, None))

    def tenant_diff(self, a: datetime, b: datetime, title: str) -> None:
        """The whole tenant's changes from ``a`` to ``b``, in a dialog."""
        store, user = self.open_store(), self.host.user_id
        call_store(
            self,
            "diff",
            lambda: store.memory_diff(user_id=user, a=a, b=b),
            lambda diff: messages.TenantDiffed(title, diff),
            group="diff",
            exclusive=True,
        )

    @on(messages.TenantDiffed)
    def _tenant_diffed(self, m: messages.TenantDiffed) -> None:
        from ..widgets.detail import memory_diff
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, memory_diff(m.diff)))

    # --- what the tenant views loaded or ask for: the dialogs are this screen's to show ---

    @on(messages.CheckpointDiffed)
    def _checkpoint_diffed(self, m: messages.CheckpointDiffed) -> None:
        from ..widgets.detail import diff
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, diff(m.diff)))

    @on(messages.BlockHistoryLoaded)
    def _block_history_loaded(self, m: messages.BlockHistoryLoaded) -> None:
        from ..widgets.detail import block_history
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, block_history(m.history)))

    @on(messages.ReplayLoaded)
    def _replay_loaded(self, m: messages.ReplayLoaded) -> None:
        from ..widgets.detail import replay
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, replay(m.replay)))

    @on(messages.RecallsBeforeLoaded)
    def _recalls_before_loaded(self, m: messages.RecallsBeforeLoaded) -> None:
        from ..widgets.detail import recalls
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, recalls(m.traces, m.scope)))

    @on(messages.WhyNotLoaded)
    def _why_not_loaded(self, m: messages.WhyNotLoaded) -> None:
        from ..widgets.detail import why_not
        from .dialogs import DiffScreen

        self.app.push_screen(DiffScreen(m.title, why_not(m.explanation)))

    @on(messages.RestoreAsked)
    def _restore_asked(self, m: messages.RestoreAsked) -> None:
        from .dialogs import ConfirmScreen

        checkpoint = m.checkpoint
        views = self.host.tenant_views()

        def confirmed(yes: bool | None) -> None:
            if yes and views is not None:
                views.restore_checkpoint(checkpoint)

        question = (
            f"Restore session {checkpoint.session_id} to checkpoint “{checkpoint.description or checkpoint.id[:12]}”?\n"
            "Its current keys, task state and notes are replaced."
        )
        self.app.push_screen(ConfirmScreen(question, "Restore"), confirmed)

    # --- the store and help ---

    def action_reload(self) -> None:
        if self.host.store is not None:
            self.host.load_tenants()
            self.host.reload_tenant_views()

    def action_help(self) -> None:
        from .help_screen import HelpScreen

        self.app.push_screen(HelpScreen())

    @on(Button.Pressed, "#store-audit")
    def action_store_audit(self) -> None:
        if self.host.store is None:
            return
        from .dialogs import StoreAuditScreen

        store = self.open_store()
        self.app.push_screen(StoreAuditScreen(lambda: store.audit_log(all_tenants=True)))
