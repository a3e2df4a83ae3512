"""A store holding something of every kind a migration must carry, and an independent check
(through the public API, not the migration's own digests) that two stores hold the same."""

from __future__ import annotations

import json
from datetime import timedelta

from store import MemoryStore

from .conftest import T0

TENANTS = ["alice", "bob", None]  # None: the anonymous bucket


def fill(s: MemoryStore, clock, user: str | None) -> None:
    """Every tier for one tenant, with history: a superseded fact, an edited block, a key that
    expires and one that has expired, a restored checkpoint, an imported audit entry."""
    name = user or "anon"
    s.update_block("persona", f"persona of {name}", user_id=user)
    s.update_block("goals", f"goals of {name}", user_id=user)
    s.append_block("persona", "likes tea", user_id=user)
    s.remember_many(
        [
            {
                "id": f"e{i}",
                "input": f"question {i} of {name} about café {i % 3}",
                "output": f"answer {i}",
                "session_id": f"s{i % 2}",
                "occurred_at": T0 + timedelta(hours=i),
                "metadata": {"i": i, "nested": [1, {"a": None}]},
                "tool_calls": [{"name": "search", "arguments": {"q": i}}],
            }
            for i in range(12)
        ],
        user_id=user,
    )
    s.add_fact(name, "lives_in", "Porto", user_id=user, valid_from=T0, source_episode_ids=["e1"], confidence=0.7)
    clock[0] = T0 + timedelta(days=1)
    s.add_fact(name, "lives_in", "Lisbon", user_id=user, valid_from=T0 + timedelta(days=1), source_episode_ids=["e2", "e3"])
    s.add_fact(name, "likes", "tea", user_id=user)
    mem = s.session("s0", user_id=user)
    mem.set("k", {"of": name, "n": 1.5})
    mem.set("ttl", "soon gone", ttl=timedelta(hours=2))
    mem.set("expired", "gone", ttl=timedelta(seconds=1))
    mem.set_task_state("plan", total_steps=3, current_step=1)
    mem.append_scratchpad(f"note of {name}")
    first = mem.create_checkpoint("before")
    mem.append_scratchpad("second note")
    mem.create_checkpoint("after")
    mem.restore_checkpoint(first)
    clock[0] = T0 + timedelta(days=1, minutes=5)  # "expired" is past its time, "ttl" is not


def build(s: MemoryStore, clock) -> None:
    """Three tenants, an erased one (only its audit entries remain) and imported history."""
    for user in TENANTS:
        fill(s, clock, user)
    s.remember("to be erased", "bye", user_id="erased")
    s.forget(user_id="erased", actor="dpo@example.com")
    s.forget(user_id="bob", session_id="s1", actor="dpo@example.com")
    exported = s.export(user_id="alice")
    with MemoryStore.open(s.path.parent / "elsewhere.db", embedder=s.embedder) as elsewhere:
        elsewhere.import_(exported, as_user="carol")
        elsewhere.forget(user_id="carol", session_id="s0")
        carol = elsewhere.export(user_id="carol")
    s.import_(carol)  # carol's audit log arrives as imported history


def audit_entries(s: MemoryStore) -> list[tuple]:
    """The audit log without this test's own exports and the migrations' entries."""
    return sorted(
        (e.at, e.actor, e.action, e.user_id, json.dumps(e.scope, sort_keys=True), json.dumps(e.counts, sort_keys=True), e.digest, e.origin)
        for e in s.audit_log(all_tenants=True, limit=100_000)
        if e.action not in ("migrate",) and e.actor != "compare"
    )


def contents(s: MemoryStore) -> dict:
    """What the store holds, tenant by tenant, through the public API."""
    out = {"audit": audit_entries(s), "tenants": sorted(((t.user_id or "", t.last_activity, t.counts) for t in s.tenants()), key=str)}
    for summary in s.tenants():
        user = summary.user_id
        exported = s.export(user_id=user, include_embeddings=True, actor="compare")
        exported.pop("manifest")
        exported["audit"] = [r for r in exported["audit"] if r["action"] != "migrate" and r["actor"] != "compare"]
        for section in ("kv_entries",):  # kv rows are exported in row-key order, which may differ
            exported[section] = sorted(exported[section], key=lambda r: (r["session_id"], r["key"]))
        for section in ("task_states", "scratchpad", "checkpoints"):
            exported[section] = sorted(exported[section], key=lambda r: json.dumps(r, sort_keys=True))
        out[user or ""] = exported
        out[(user or "") + "/history"] = s.facts(user_id=user, include_history=True)
        out[(user or "") + "/persona versions"] = s.block_history("persona", user_id=user)
        out[(user or "") + "/facts known then"] = s.facts(user_id=user, include_history=True, known_at=T0 + timedelta(hours=12))
        out[(user or "") + "/recall"] = [(h.kind, h.id, h.scores.model_dump()) for h in s.recall("café question", user_id=user, limit=8)]
        out[(user or "") + "/sessions"] = s.sessions(user_id=user)
    return out


def assert_same(a: MemoryStore, b: MemoryStore) -> None:
    left, right = contents(a), contents(b)
    assert left.keys() == right.keys()
    for key in left:
        assert left[key] == right[key], key
