"""Command palette entries, named "area: what it does"."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import SystemCommand

from .host import Commands


def system_commands(app: Commands) -> Iterable[SystemCommand]:
    yield SystemCommand(
        "tenant: export to a file", "Export everything held for the selected tenant (JSON Lines or JSON)", app.action_export
    )
    yield SystemCommand("tenant: forget…", "Erase the tenant, one session, or what is older than a date (asks first)", app.action_forget)
    yield SystemCommand("tenant: filter the list", "Focus the tenant list", app.action_focus_tenants)
    yield SystemCommand("search: recall", "Search the selected tenant's memory", app.action_focus_search)
    yield SystemCommand(
        "checkpoint: diff with the current state",
        "Diff the checkpoint under the cursor in a session's checkpoints",
        lambda: app.checkpoint_action("diff"),
    )
    yield SystemCommand(
        "checkpoint: mark for a diff", "Mark the selected checkpoint, then diff another against it", lambda: app.checkpoint_action("mark")
    )
    yield SystemCommand(
        "checkpoint: restore…",
        "Restore the checkpoint under the cursor in a session's checkpoints (asks first)",
        lambda: app.checkpoint_action("restore"),
    )
    yield SystemCommand("time: timeline…", "The selected tenant's changes: go to one, or to a moment typed in (T)", app.action_timeline)
    yield SystemCommand("time: one change earlier", "Show the tenant as it was before the change shown ([)", app.action_step_back)
    yield SystemCommand("time: one change later", "Show the tenant after the next change (])", app.action_step_forward)
    yield SystemCommand(
        "time: diff with now", "What changed in the whole tenant from the moment shown to now (D)", app.action_diff_with_now
    )
    yield SystemCommand("time: back to now", "Show the tenant as it is now, live (n)", app.action_to_now)
    yield SystemCommand(
        "recalls: what the agent retrieved…", "The tenant's kept recalls, newest first, to look at and replay (R)", app.action_recalls
    )
    for name in ("search", "blocks", "episodes", "facts", "sessions", "audit"):
        yield SystemCommand(f"view: {name}", f"Show the {name} view", lambda name=name: app.action_show_view(name))
    yield SystemCommand(
        "store: audit log of every tenant", "Exports, imports and erasures of every tenant, erased ones included", app.action_store_audit
    )
    yield SystemCommand("store: reload", "Read everything again from the store", app.action_reload)
    yield SystemCommand("help: keys", "Show the key bindings", app.action_help)
