"""The help screen: every key, the filters, the past, the mouse."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll

from .dialogs import InfoScreen

HELP = """\
# memlens inspector

Browse what an agent remembers, search it, export it, erase it.

| key | does |
|---|---|
| `tab`, `shift+tab` | move between the tenant filter, the tenant list, the tabs and the fields and lists of a tab |
| `↑` `↓`, `enter` | move in a list; in the tenant filter or the search field, go into the list below |
| `/` | search the selected tenant (results update as you type) |
| `m` | in the search results: the same query as hybrid, then vector only, then keyword only |
| `1`–`6` | from a list: search · blocks · episodes · facts · sessions · audit (in a text field, digits type) |
| `t`, `escape` | back to the tenant list (type in the filter above it to narrow it) |
| `a` | in the tenant list: the audit log of every tenant, erased ones included |
| `e` | export the selected tenant to a file |
| `f` | forget: erase the tenant, a session, or what is older than a date |
| `w` | in the episodes or facts: where the memory under the cursor ranks for the search typed in the Search tab, and why it is not among the results |
| `p` | in the episodes: what the agent had just retrieved before the episode under the cursor (the recalls kept in its session up to it) |
| `R` | the tenant's recalls: what its agent retrieved, newest first (a store opened with tracing on), up to the moment shown |
| `r`, `R` | in the recalls: the recall under the cursor made again now (`R`: as of its own moment), beside what it returned then |
| `s` | in the recalls dialog: the recall under the cursor typed into the Search tab (query, kind, session, dates, mode), where `w` on a memory says why that recall did not bring it back |
| `h` | in the blocks: the history of the block under the cursor, its versions newest first as changes |
| `T` | the tenant's timeline: its changes, newest first; `enter` shows every view as of one (or type a moment), `d` what one changed, `m` then `d` the whole tenant between two, `escape` or `q` closes it |
| `[` `]` | every view as of one change earlier / later (`[` from now undoes the latest change) |
| `D` | in the past: what changed in the whole tenant from the moment shown to now |
| `n` | in the past: back to now |
| `d` | in a session's checkpoints: diff the one under the cursor with now (after `m`: with the marked one) |
| `m` | in a session's checkpoints: mark one for a diff |
| `r` | in a session's checkpoints: restore the one under the cursor (asks first) |
| `ctrl+r` | reload everything |
| `ctrl+p` | command palette (every action, and the theme, which is kept for next time) |
| `?` | this help |
| `q`, `ctrl+c` | quit |
| `escape`, `q` | in a dialog: `escape` cancels it; `q` (or `escape`) closes one that only shows something, like this help (also `?`) |

**Filters.** Search: kind (episodes, facts, working blocks, scratchpad notes, all), session,
and dates (`2026-03-01`; *until* includes that day). Episodes: session and dates. Facts: the
date they were believed on (empty: now) and *history*, which adds superseded facts.

**The past.** After `T` or `[`, every view shows the tenant as it stood at that moment, as far
as the store can rebuild it: blocks and facts exactly; episodes that had occurred by then; a
session as it was if it has not changed since, else as its last checkpoint by then (the session
says which). The header and the line above the tabs say AS OF and read-only; export, forget and
restore are off until `n`. Search looks through episodes up to the moment only.

**Mouse.** Click a tenant, a tab, a row or a button; scroll lists and the detail pane with the wheel.

The tenant list shows a tenant selected, or none: with none (the filter hides it, or it was
erased) the views are empty and export and forget say so. A read-only store says so in the
header, and forget and restore are off. As you type, where the hybrid search is slow, keyword
matches show first and the hybrid ranking replaces them a moment later (the line above the
results says *keyword first · semantic joining…* meanwhile); until the model is warm, search is
by keyword alone (the header says whether it is; the line above the results names the mode
searched). Views refresh by themselves when another process writes to the store.
"""


class HelpScreen(InfoScreen):
    BINDINGS = [("question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # markdown-it costs 35 ms at start-up; only help needs it

        with Vertical(classes="dialog wide"):
            yield from self.close_row()
            with VerticalScroll(classes="dialog-body"):
                yield Markdown(HELP)
