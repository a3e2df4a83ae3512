"""The README's key table and the help screen against the keys the inspector binds: every key
bound anywhere (the App, the sidebar, the views' widgets, the dialogs) is in both, in a row that
names where it acts (the checkpoints, a dialog...), and neither names a key nothing binds
(Textual's own tab, shift+tab and ctrl+p aside)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.binding import Binding

from inspector import app
from inspector.screens import dialogs, help_screen, main, recalls, timeline
from inspector.widgets import results, tenant_list, views

ROOT = Path(__file__).resolve().parent.parent
SHOWN = {"slash": "/", "question_mark": "?", "down": "↓", "up": "↑", "left_square_bracket": "[", "right_square_bracket": "]"}
TEXTUALS_OWN = {"tab", "shift+tab", "ctrl+p", "↑", "enter"}  # focus, palette, lists and fields: Textual binds them


# Where each class's keys act, as the key tables say it: a row giving the key must name this.
# None: everywhere (the App's and the main screen's keys, and the "cannot open" screen's quit keys, the App's own).
FOCUS = {
    "MemlensApp": None,
    "MainScreen": None,
    "FatalScreen": None,
    "TenantList": "tenant",
    "CheckpointsTable": "checkpoints",
    "BlocksTable": "in the blocks",
    "WhyNotTable": "in the episodes or facts",
    "EpisodesTable": "in the episodes",
    "TracesTable": "in the recalls",
    "RecallsScreen": "dialog",
    "ResultsTable": "search results",
    "QueryInput": "search",
    "SearchView": "search",
    "HelpScreen": "help",
    "ForgetScreen": "dialog",
    "ExportScreen": "dialog",
    "ConfirmScreen": "dialog",
    "InfoScreen": "dialog",
    "StoreAuditScreen": "dialog",
    "TimelineScreen": "timeline",
    "ChangesTable": "timeline",
}


def bindings() -> dict[str, set[str]]:
    """Class name -> the keys it binds, for every class of the inspector's UI modules with BINDINGS."""
    found: dict[str, set[str]] = {}
    for module in (app, main, views, results, tenant_list, dialogs, help_screen, timeline, recalls):
        for cls in vars(module).values():
            if isinstance(cls, type) and "BINDINGS" in vars(cls) and cls.__module__ == module.__name__:
                for binding in cls.BINDINGS:
                    key = binding.key if isinstance(binding, Binding) else binding[0]
                    found.setdefault(cls.__name__, set()).update(SHOWN.get(k.strip(), k.strip()) for k in key.split(","))
    return found


def bound_keys() -> set[str]:
    return set().union(*bindings().values())


def table_keys(markdown: str, first_column_only: bool = False) -> set[str]:
    """Every `key` in the rows of the key table of ``markdown`` (the key column alone, or the
    whole row, whose text may name a key too: "`↓` goes to the results"); `1`–`6` stands for each digit."""
    keys = set()
    for row in (line for line in markdown.splitlines() if line.startswith("| `")):
        text = row.split("|")[1] if first_column_only else row
        for low, high in re.findall(r"`(\d)`–`(\d)`", text):
            keys |= {str(d) for d in range(int(low), int(high) + 1)}
        keys |= {token for token in re.findall(r"`([^`]+)`", text)}
    return keys


def docs_keys_section() -> str:
    text = (ROOT / "docs" / "inspector.md").read_text()
    start = text.index("## Keys")
    return text[start : text.index("\n## ", start + 1)]


@pytest.mark.parametrize("where, markdown", [("inspector guide", docs_keys_section()), ("help screen", help_screen.HELP)])
def test_every_bound_key_is_documented_and_every_documented_key_is_bound(where, markdown):
    bound = bound_keys()
    assert bound - table_keys(markdown) == set(), f"keys the {where} does not list"
    assert table_keys(markdown, first_column_only=True) - bound - TEXTUALS_OWN == set(), f"keys the {where} lists that nothing binds"


@pytest.mark.parametrize("where, markdown", [("inspector guide", docs_keys_section()), ("help screen", help_screen.HELP)])
def test_each_key_is_documented_where_it_acts(where, markdown):
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    unplaced = set(bindings()) - set(FOCUS)
    assert unplaced == set(), f"say in FOCUS where the keys of {sorted(unplaced)} act, and document them there"
    missing = [
        (owner, key)
        for owner, keys in bindings().items()
        for key in keys
        if FOCUS[owner] is not None and not any(FOCUS[owner] in row and key in table_keys(row) for row in rows)
    ]
    assert missing == [], f"the {where} does not give these keys where they act: {missing}"


def test_the_key_reader_sees_the_keys_of_the_checkpoints_and_the_dialogs():
    # Not an empty comparison: the bindings of widgets and dialogs are read, not only the App's.
    assert {"d", "r", "m", "a", "/", "?", "escape", "ctrl+r", "6"} <= bound_keys()
