"""Full views of single records for the detail pane: every field, JSON pretty-printed; and the
message a table sends to have one shown."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..formatting import count, highlighted, one_line, pretty_json, rank, remaining, score, when
from ..messages import Carrier
from ..printable import tenant_label


class ShowDetail(Carrier):
    title: str
    body: Any
    source: Any = None
    """The table that asks; the App ignores it once that table no longer has the focus."""


def _fields(*rows: tuple[str, Any]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in rows:
        table.add_row(name, value if isinstance(value, Text) else Text(str(value)))
    return table


def _json(value: Any):
    from rich.syntax import Syntax  # pygments loads on first use, not at start-up

    return Syntax(pretty_json(value), "json", theme="ansi_dark", word_wrap=True, background_color="default")


def episode(e, terms: list[str] | None = None) -> Group:
    parts: list[Any] = [
        _fields(("id", e.id), ("tenant", tenant_label(e.user_id)), ("session", e.session_id or "-"), ("when", when(e.occurred_at))),
        Text("\ninput", style="bold"),
        highlighted(e.input, terms or []),
        Text("\noutput", style="bold"),
        highlighted(e.output, terms or []),
    ]
    if e.tool_calls:
        parts += [Text("\ntool calls", style="bold"), _json(e.tool_calls)]
    if e.metadata:
        parts += [Text("\nmetadata", style="bold"), _json(e.metadata)]
    return Group(*parts)


def fact(f) -> Group:
    status = Text("current", style="green") if f.valid_until is None else Text(f"superseded {when(f.valid_until)}", style="yellow")
    return Group(
        _fields(
            ("subject", f.subject),
            ("predicate", f.predicate),
            ("object", f.object),
            ("confidence", f"{f.confidence:.2f}"),
            ("valid from", when(f.valid_from)),
            ("valid until", when(f.valid_until)),
            ("status", status),
            ("recorded", when(f.recorded_at)),
            ("id", f.id),
        ),
        Text("\nsource episodes", style="bold"),
        Text("\n".join(f.source_episode_ids) or "-"),
    )


def block(b) -> Group:
    return Group(_fields(("name", b.name), ("slot", str(b.pinned_order)), ("updated", when(b.updated_at))), Text(""), Text(b.content))


def block_history(history) -> Group:
    """Every kept version of a block, newest first, each as its changes from the one before it
    (``+``/``-`` lines, readable without colour); the oldest kept one whole."""
    import difflib

    parts: list[Any] = []
    versions = list(history.versions)
    for index in range(len(versions) - 1, -1, -1):
        v = versions[index]
        ended = "current" if v.replaced_at is None else f"until {when(v.replaced_at)}, then {v.replaced_by}"
        parts.append(Text(f"{when(v.written_at)}  {ended}", style="bold"))
        if index == 0:
            parts.append(Text(v.content or "(empty)"))
        else:
            before, after = versions[index - 1].content.splitlines(), v.content.splitlines()
            for line in difflib.unified_diff(before, after, lineterm="", n=1):
                if line.startswith(("---", "+++", "@@")):
                    continue
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
                parts.append(Text(line, style=style))
        parts.append(Text(""))
    if history.earlier_dropped:
        parts.append(Text("Older versions were dropped by the history cap (block_versions_kept).", style="dim"))
    if not versions:
        parts.append(Text("No versions: the block does not exist.", style="dim"))
    return Group(*parts)


def kv(entry, now: datetime) -> Group:
    return Group(
        _fields(
            ("key", entry.key),
            ("expires", when(entry.expires_at)),
            ("remaining", remaining(entry.expires_at, now)),
            ("updated", when(entry.updated_at)),
        ),
        Text("\nvalue", style="bold"),
        _json(entry.value),
    )


def note(n) -> Group:
    return Group(_fields(("written", when(n.created_at)), ("id", str(n.id))), Text(""), Text(n.content))


def checkpoint(c) -> Group:
    return Group(
        _fields(("id", c.id), ("session", c.session_id), ("created", when(c.created_at)), ("description", c.description or "-")),
        Text("\nd: diff against the current state · r: restore", style="dim"),
    )


def audit_entry(a) -> Group:
    return Group(
        _fields(
            ("when", when(a.at)),
            ("action", a.action if a.origin == "local" else f"{a.action} (imported history, not done in this store)"),
            ("tenant", tenant_label(a.user_id)),
            ("actor", a.actor),
            ("digest", a.digest),
        ),
        Text("\nscope", style="bold"),
        _json(a.scope),
        Text("\ncounts", style="bold"),
        _json(a.counts),
    )


def hit(h) -> Group:
    s = h.scores
    why = _fields(
        # score is what ordered the results; the rest are the channels behind it.
        ("kind", h.kind),
        ("score", score(s.score, 3)),
        ("vector", f"{score(s.vector)} ({rank(s.vector_rank)})"),
        ("keyword", f"{score(s.keyword)} ({rank(s.keyword_rank)})"),
        ("coverage", score(s.coverage)),
        ("standout", f"keyword {score(s.keyword_standout)}, vector {score(s.vector_standout)}"),
        ("exact id", s.exact or "-"),
        ("rank fusion", score(s.fused, 4)),
        ("matched", ", ".join(h.matched_terms) or "-"),
    )
    body = {
        "episode": lambda: episode(h.episode, h.matched_terms),
        "fact": lambda: fact(h.fact),
        "block": lambda: block(h.block),
        "scratchpad": lambda: note(h.note),
    }[h.kind]()
    return Group(Text("why it came back", style="bold underline"), why, Text(""), body)


def _arguments(trace) -> str:
    """The recall's arguments that narrowed it, in words (``limit``, a mode other than hybrid, ...)."""
    a = trace.arguments
    parts = [f"{trace.call}", f"limit {a.get('limit', '-')}"]
    for name in ("kind", "mode"):
        if a.get(name) not in (None, "hybrid"):
            parts.append(f"{name} {a[name]}")
    if trace.session_id:
        parts.append(f"session {trace.session_id}")
    for name in ("since", "until", "valid_at"):
        if a.get(name):
            parts.append(f"{name.replace('_', ' ')} {a[name][:16].replace('T', ' ')}")
    if a.get("prefix"):
        parts.append("prefix")
    return " · ".join(parts)


def recall_trace(t) -> Group:
    """A kept recall: what was asked and what came back, by kind, id and score (a trace keeps no text)."""
    head = _fields(
        ("when", t.at.strftime("%Y-%m-%d %H:%M:%S")),
        ("caller", t.label or "-"),
        ("query", t.query or "(empty: the latest episodes)"),
        ("asked", _arguments(t)),
        ("took", f"{t.took_ms:.1f} ms"),
    )
    table = Table("#", "kind", "id", "score", expand=False, box=None)
    for i, h in enumerate(t.hits, 1):
        table.add_row(str(i), h.kind, Text(h.id[:24]), score(h.scores.score))
    came = Text(f"\n{count(len(t.hits), 'hits')} came back" + (":" if t.hits else ""), style="bold")
    keys = Text("\nr replays it now and compares · R as of its own moment", style="dim")
    return Group(head, came, table, keys) if t.hits else Group(head, came, keys)


def replay(r) -> Group:
    """A replay beside the recall it repeats: every memory either returned, with its two ranks."""
    moment = "now" if r.as_of is None else f"as of {r.as_of.strftime('%Y-%m-%d %H:%M:%S')}"
    same = all(row.traced_rank == row.replayed_rank for row in r.rows)
    head = Text(
        f"“{r.trace.query}” made again {moment}: " + ("the same memories in the same order" if same else "the results differ"),
        style="bold green" if same else "bold yellow",
    )
    table = Table("returned", "replayed", "kind", "memory", expand=True)
    for row in r.rows:
        if row.held is False:
            text = Text("(no longer held: erased, or superseded and gone)", style="dim italic")
        else:
            text = Text(one_line(row.text or "(not looked up)", 70))
        mark = (
            ""
            if row.traced_rank == row.replayed_rank
            else ("+" if row.traced_rank is None else ("-" if row.replayed_rank is None else "~"))
        )
        table.add_row(Text(f"{mark}{rank(row.traced_rank)}"), rank(row.replayed_rank), row.kind, text)
    parts: list[Any] = [head, Text(""), table]
    parts += [Text(f"\n{note}", style="italic") for note in r.notes]
    return Group(*parts)


def recalls(traces: list[Any], scope: str) -> Group:
    """Recalls an agent made, newest first: each one's query and what came back."""
    if not traces:
        return Group(Text(f"no recall kept {scope}", style="dim"))
    parts: list[Any] = [Text(f"{count(len(traces), 'recalls')} {scope}, newest first", style="bold")]
    for t in traces:
        parts.append(Text(f"\n{t.at.strftime('%Y-%m-%d %H:%M:%S')}  {t.label or '-'}  “{one_line(t.query, 60)}”", style="bold"))
        ids = ", ".join(f"{h.kind} {h.id[:12]}" for h in t.hits) or "nothing came back"
        parts.append(Text(f"  {_arguments(t)} · {t.took_ms:.1f} ms\n  {ids}"))
    return Group(*parts)


def why_not(answer) -> Group:
    """Where a memory stands for a search (store.models.RecallExplanation), in words first."""
    if answer.returned:
        head = Text(f"came back: rank {answer.rank} of the {answer.limit} the search shows", style="bold green")
    elif answer.rank is not None:
        head = Text(f"not among the {answer.limit} the search shows: it ranks {answer.rank}", style="bold yellow")
    else:
        head = Text(f"not among the {answer.limit} the search shows", style="bold yellow")
    parts: list[Any] = [head, Text("")]
    for cause in answer.causes:
        parts.append(Text.assemble((f"{cause.cause.replace('_', ' ')}: ", "bold"), cause.detail))
    if answer.missing_words and not any(c.cause == "words_missing" for c in answer.causes):
        parts.append(Text(f"it holds no form of the query's {', '.join(repr(w) for w in answer.missing_words)}"))
    if answer.scores is not None or answer.cut is not None:
        table = Table("", "this memory", "last shown", expand=False)
        mine, cut = answer.scores, answer.cut
        for label, field, digits in (
            ("score", "score", 3),
            ("vector (cosine)", "vector", 2),
            ("coverage", "coverage", 2),
            ("keyword", "keyword", 2),
            ("keyword standout", "keyword_standout", 2),
            ("vector standout", "vector_standout", 2),
        ):
            table.add_row(
                label,
                "-" if mine is None else score(getattr(mine, field), digits),
                "-" if cut is None else score(getattr(cut, field), digits),
            )
        table.add_row("keyword rank", "-" if mine is None else rank(mine.keyword_rank), "-" if cut is None else rank(cut.keyword_rank))
        parts += [Text(""), table]
    return Group(*parts)


def diff(d) -> Group:
    table = Table("", "key", "before", "after", expand=True)
    for key, value in d.added_keys.items():
        table.add_row(Text("+", style="green"), Text(key), "", Text(pretty_json(value)))
    for key, value in d.removed_keys.items():
        table.add_row(Text("-", style="red"), Text(key), Text(pretty_json(value)), "")
    for key, (old, new) in d.changed_keys.items():
        table.add_row(Text("~", style="yellow"), Text(key), Text(pretty_json(old)), Text(pretty_json(new)))
    parts: list[Any] = [table if table.row_count else Text("key-value entries: no change", style="dim")]
    before, after = d.task_state_before, d.task_state_after
    if before != after:
        parts += [Text("\ntask state", style="bold"), Text(f"before: {task_line(before)}\nafter:  {task_line(after)}")]
    for label, notes, style in (("notes added", d.scratchpad_added, "green"), ("notes removed", d.scratchpad_removed, "red")):
        if notes:
            parts += [Text(f"\n{label}", style="bold"), Text("\n".join(f"• {n}" for n in notes), style=style)]
    if d.is_empty:
        parts = [Text("No difference.", style="dim")]
    return Group(*parts)


def _line(text: str, style: str = "") -> Text:
    """One line of a diff: cut with an ellipsis at the dialog's width, never wrapped into the next."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def memory_diff(d: Any) -> Group:
    """A whole tenant's changes between two moments, tier by tier, readable without colour."""
    parts: list[Any] = []
    for b in d.blocks:
        if b.before is None:
            parts.append(_line(f"+ block {b.name}: {one_line(b.after or '', 400)}", "green"))
        elif b.after is None:
            parts.append(_line(f"- block {b.name}: {one_line(b.before, 400)}", "red"))
        else:
            parts.append(_line(f"~ block {b.name}", "yellow"))
            parts.append(_line(f"    before: {one_line(b.before, 400)}", "red"))
            parts.append(_line(f"    after:  {one_line(b.after, 400)}", "green"))
    for f in d.facts_added:
        parts.append(_line(f"+ fact {f.subject} {f.predicate} {f.object}", "green"))
    for f in d.facts_removed:
        parts.append(_line(f"- fact {f.subject} {f.predicate} {f.object}", "red"))
    if d.episodes_added:
        parts.append(_line(f"{'+' if d.episodes_added > 0 else '-'} {count(abs(d.episodes_added), 'episodes')}"))
    for s in d.sessions:
        parts.append(_line(f"~ session {s.session_id}", "yellow"))
        for key, value in s.added_keys.items():
            parts.append(_line(f"    + {key} = {one_line(repr(value), 400)}", "green"))
        for key, value in s.removed_keys.items():
            parts.append(_line(f"    - {key} = {one_line(repr(value), 400)}", "red"))
        for key, (old, new) in s.changed_keys.items():
            parts.append(_line(f"    ~ {key}: {one_line(repr(old), 60)} → {one_line(repr(new), 60)}", "yellow"))
        if s.task_state_before != s.task_state_after:
            parts.append(_line(f"    ~ task: {task_line(s.task_state_before)} → {task_line(s.task_state_after)}", "yellow"))
        for note in s.scratchpad_added:
            parts.append(_line(f"    + note {one_line(note, 400)}", "green"))
        for note in s.scratchpad_removed:
            parts.append(_line(f"    - note {one_line(note, 400)}", "red"))
    if not parts:
        parts.append(Text("No difference.", style="dim"))
    if d.gaps:
        parts.append(Text("\nwhat could not be rebuilt", style="bold"))
        parts += [Text(f"• {gap}", style="dim") for gap in d.gaps]
    return Group(*parts)


def task_line(t: Any) -> str:
    """A task state on one line, for the diffs of a checkpoint and of two moments."""
    return "none" if t is None else f"{t.task}: step {t.current_step}/{t.total_steps or '?'} ({t.progress_percent:.0f}%), {t.status}"
