"""The footer, on its own: the first frame needs it, and nothing else of the dialogs (inspector.screens)."""

from __future__ import annotations

from textual.widgets import Footer


class KeysFooter(Footer):
    """At 80 columns the spaced-out keys and "^p palette" pushed "q Quit" off the edge."""

    def on_resize(self) -> None:
        narrow = self.app.size.width < 120
        self.compact, self.show_command_palette = narrow, not narrow
