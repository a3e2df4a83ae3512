"""memlens inspector: a Textual terminal UI over a memlens store, and the `memlens` command."""
