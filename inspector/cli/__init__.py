"""The memlens command: the store's operations (export, import, forget, audit...) and the one that starts the inspector (tui)."""
