"""The inspector's actions on the selected tenant: export, forget, checkpoint diff and restore.

Mixed into the App. Each collects parameters through a dialog, then runs the store call in
a thread worker that posts its result back. Handlers use Textual's naming convention
(``on_forget_done``), since ``@on`` is only collected from the App's own class body.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from textual.widgets import TabbedContent

from . import detail, messages as msg
from .screens import ConfirmScreen, DiffScreen, ExportScreen, ForgetScreen, ReceiptScreen
from .views import SessionsView

NO_TENANT = object()


class ActionsMixin:
    def has_tenant(self) -> bool:
        if self.store is None or self.user_id is NO_TENANT:
            self.notify("select a tenant first", severity="warning")
            return False
        return True

    def action_export(self) -> None:
        if not self.has_tenant():
            return
        stamp = self.now().strftime("%Y%m%d-%H%M%S")
        name = "anonymous" if self.user_id is None else "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.user_id)
        default = str(Path.cwd() / f"memlens-export-{name}-{stamp}.jsonl")
        user = self.user_id

        def chosen(path: str | None) -> None:
            if path:
                self.export_tenant(user, path)

        self.push_screen(ExportScreen(user, default), chosen)

    def export_tenant(self, user_id: Any, path: str) -> None:
        store, target = self.store, Path(path).expanduser()
        fmt = "json" if target.suffix == ".json" else "jsonl"
        self.call_store(
            "export",
            lambda: store.export_to(target, user_ids=[user_id], fmt=fmt, actor="inspector"),
            lambda manifest: msg.ExportDone(str(target.resolve()), manifest),
            group="export",
            errors=(OSError,),
        )

    def on_export_done(self, m: msg.ExportDone) -> None:
        total = sum(m.manifest["counts"].values())
        self.notify(f"exported {total} records to {m.path}", title="export", timeout=10)

    def action_forget(self) -> None:
        if not self.has_tenant():
            return
        user = self.user_id

        def chosen(scope) -> None:
            if scope is not None:
                self.forget(user, *scope)

        self.push_screen(ForgetScreen(user, self.session_names), chosen)

    def preview_forget(self, user_id: Any, session_id: str | None, before: datetime | None) -> None:
        store = self.store
        self.call_store(
            "forget",
            lambda: store.forget(user_id=user_id, session_id=session_id, before=before, dry_run=True, actor="inspector"),
            msg.ForgetPreview,
            group="forget-preview",
            exclusive=True,
        )

    def on_forget_preview(self, m: msg.ForgetPreview) -> None:
        if isinstance(self.screen, ForgetScreen):
            self.screen.show_preview(m.receipt)

    def forget(self, user_id: Any, session_id: str | None, before: datetime | None) -> None:
        store = self.store
        self.call_store(
            "forget",
            lambda: store.forget(user_id=user_id, session_id=session_id, before=before, actor="inspector"),
            msg.ForgetDone,
            group="forget",
        )

    def on_forget_done(self, m: msg.ForgetDone) -> None:
        self.push_screen(ReceiptScreen(m.receipt))
        self.load_tenants()
        self.load_tenant_views()

    def selected_checkpoint(self) -> Any:
        if not self.has_tenant():
            return None
        if self.query_one("#tabs", TabbedContent).active != "sessions":
            self.action_show_view("sessions")
        checkpoint = self.query_one(SessionsView).selected_checkpoint()
        if checkpoint is None:
            self.notify("select a checkpoint in the Sessions view", severity="warning")
        return checkpoint

    def action_mark(self) -> None:
        checkpoint = self.selected_checkpoint()
        if checkpoint is not None:
            self.marked_checkpoint = checkpoint
            self.notify(f"marked checkpoint {checkpoint.description or checkpoint.id[:12]}; select another and press d")

    def action_diff(self) -> None:
        checkpoint = self.selected_checkpoint()
        if checkpoint is None:
            return
        marked = self.marked_checkpoint if self.marked_checkpoint and self.marked_checkpoint.session_id == checkpoint.session_id else None
        if marked is not None and marked.id == checkpoint.id:
            marked = None
        first, second = (marked, checkpoint) if marked else (checkpoint, None)
        store, user = self.store, self.user_id
        target = "the current state" if second is None else f"“{second.description or second.id[:12]}”"
        title = f"“{first.description or first.id[:12]}” → {target}"
        self.marked_checkpoint = None
        self.call_store(
            "diff",
            lambda: store.session(first.session_id, user_id=user).diff_checkpoint(first.id, None if second is None else second.id),
            lambda diff: msg.CheckpointDiffed(title, diff),
            group="diff",
            exclusive=True,
        )

    def on_checkpoint_diffed(self, m: msg.CheckpointDiffed) -> None:
        self.push_screen(DiffScreen(m.title, detail.diff(m.diff)))

    def action_restore(self) -> None:
        checkpoint = self.selected_checkpoint()
        if checkpoint is None:
            return
        store, user = self.store, self.user_id

        def restored(_: None) -> None:
            self.call_from_thread(self.notify, f"restored session {checkpoint.session_id} to “{checkpoint.description or checkpoint.id[:12]}”")
            self.call_from_thread(self.load_session, checkpoint.session_id)

        def confirmed(yes: bool) -> None:
            if yes:
                self.call_store(
                    "restore",
                    lambda: store.session(checkpoint.session_id, user_id=user).restore_checkpoint(checkpoint.id),
                    restored,
                    group="restore",
                )

        question = f"Restore session {checkpoint.session_id} to checkpoint “{checkpoint.description or checkpoint.id[:12]}”?\nIts current keys, task state and notes are replaced."
        self.push_screen(ConfirmScreen(question, "Restore"), confirmed)
