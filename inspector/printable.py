"""Stored text as the CLI prints it and the inspector names tenants: agent-written names cannot
drive the terminal. No Rich or Textual here: the store-only commands import this.

A tenant name, an actor or a session id is whatever an agent or an import wrote. Printed raw, an
escape sequence in it can move the cursor, clear lines or rewrite what a data-protection officer
reads in ``memlens audit`` or a forget receipt, and a newline can forge a line of its own. Here
every control character (C0 including tab and newline, DEL, C1) and every bidirectional override
is shown as a visible escape (``\\x1b``, ``\\n``, ``\\u202e``) instead."""

from __future__ import annotations

import re

from store.glance import ANONYMOUS_LABEL

# C0 controls, DEL and C1 controls; the bidirectional embeddings, overrides and isolates, which
# reorder what follows them on screen (the "Trojan Source" characters).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with every character that would act on the terminal written out as an escape."""
    return _UNSAFE.sub(lambda found: _NAMED.get(found.group(), found.group().encode("unicode_escape").decode("ascii")), text)


def tenant_label(user_id: str | None) -> str:
    """A tenant as the CLI and the inspector name it: its printable name, or ``(anonymous)``. (Rich
    drops control characters when it renders, so on screen ``eve`` and ``eve\x07`` looked alike.)"""
    return ANONYMOUS_LABEL if user_id is None else printable(user_id)
