"""memlens inspector: a Textual terminal UI over a memlens store, and the `memlens` command."""

import os

# Textual paints at most TEXTUAL_FPS frames a second (60 by default), read once when it is first
# imported, so a change on screen waits up to one period for its frame: search results as you
# type waited 8 ms on average. At 120 the keystroke-to-results time in a real terminal fell from
# 48 to 37 ms at the median (bench/inspector_bench.py, 100k episodes); a frame is still only
# painted when something changed. A value the user set is kept.
os.environ.setdefault("TEXTUAL_FPS", "120")
