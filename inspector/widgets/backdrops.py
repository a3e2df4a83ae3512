"""Containers drawn as blank background: no border, no content of their own, and their children
over them.

Textual draws, at every frame, each widget whose container overlaps what changed, whole: at a
keystroke in the search box that is every container from the screen down to the search view,
about 170 µs each through the line cache and the colour filters, a fifth of the frame. A
container that declares itself ``BLANK`` is drawn as blank lines of its background instead
(Textual's own switch for large containers), which is what these look like anyway: the
screenshots tests hold that nothing on screen changed.
"""

from __future__ import annotations

from textual.containers import Horizontal, Vertical


class Row(Horizontal):
    BLANK = True


class Column(Vertical):
    BLANK = True
