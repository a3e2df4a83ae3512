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
        "checkpoint: diff with the current state", "Diff the checkpoint under the cursor in a session's checkpoints", app.action_diff
    )
    yield SystemCommand("checkpoint: mark for a diff", "Mark the selected checkpoint, then diff another against it", app.action_mark)
    yield SystemCommand(
        "checkpoint: restore…", "Restore the checkpoint under the cursor in a session's checkpoints (asks first)", app.action_restore
    )
    for name in ("search", "blocks", "episodes", "facts", "sessions", "audit"):
        yield SystemCommand(f"view: {name}", f"Show the {name} view", lambda name=name: app.action_show_view(name))
    yield SystemCommand(
        "store: audit log of every tenant", "Exports, imports and erasures of every tenant, erased ones included", app.action_store_audit
    )
    yield SystemCommand("store: reload", "Read everything again from the store", app.action_reload)
    yield SystemCommand("help: keys", "Show the key bindings", app.action_help)
