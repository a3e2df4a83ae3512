"""A scoped forget erases exactly its scope: what rests only on erased data goes, everything
else stays as it was, and fact history keeps no trace of what was erased."""

import json
import sqlite3
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import MemoryStore
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError, UnknownSessionError, UnknownTenantError
from store.schema import to_micros
from store.validation import set_clock

from .conftest import T0, dump
from .test_forget import file_bytes


def day(n: float):
    return T0 + timedelta(days=n)


def token() -> str:
    return "zq" + uuid.uuid4().hex[:12]


# --- facts: which go, which stay, and what history says afterwards ------------------------------


def test_a_scoped_forget_keeps_manual_facts_and_facts_with_a_surviving_source(store):
    e1 = store.remember("old chat in s", user_id="u", session_id="s", occurred_at=day(0))
    e2 = store.remember("later chat elsewhere", user_id="u", session_id="t", occurred_at=day(3))
    store.add_fact("u", "said", "manual", user_id="u", valid_from=day(0))  # no source
    store.add_fact("u", "mixed", "both", user_id="u", source_episode_ids=[e1.id, e2.id])
    store.add_fact("u", "only", "erased", user_id="u", source_episode_ids=[e1.id])
    dry = store.forget(user_id="u", session_id="s", before=day(5), dry_run=True)
    real = store.forget(user_id="u", session_id="s", before=day(5))
    assert dry.counts == real.counts and real.counts["facts"] == 1 and real.counts["episodes"] == 1
    left = {f.predicate: f for f in store.facts(user_id="u")}
    assert sorted(left) == ["mixed", "said"]
    assert left["mixed"].source_episode_ids == [e2.id]  # the erased id leaves the source list


def test_before_alone_no_longer_takes_manual_facts_recorded_earlier(store):
    set_clock(lambda: day(1))
    try:
        store.add_fact("u", "likes", "tea", user_id="u")
        store.remember("chat", user_id="u", occurred_at=day(1))
    finally:
        set_clock(None)
    receipt = store.forget(user_id="u", before=day(10))
    assert receipt.counts["facts"] == 0 and receipt.counts["episodes"] == 1
    assert [f.object for f in store.facts(user_id="u")] == ["tea"]


def _history(store, user="u"):
    facts = store.facts(user_id=user, include_history=True)
    return [(f.object, f.valid_from, f.valid_until) for f in sorted(facts, key=lambda f: (f.valid_from, f.valid_until is None))]


def test_a_fact_an_erased_fact_had_superseded_is_current_again(store):
    store.add_fact("user", "lives_in", "Porto", user_id="u", valid_from=day(0))
    moved = store.remember("I moved to Lisbon", user_id="u", session_id="chat", occurred_at=day(2))
    store.add_fact("user", "lives_in", "Lisbon", user_id="u", valid_from=moved.occurred_at, source_episode_ids=[moved.id])
    assert _history(store) == [("Porto", day(0), day(2)), ("Lisbon", day(2), None)]
    store.forget(user_id="u", session_id="chat")
    # Porto's end was the erased episode's time: it goes, and Porto is believed again.
    assert _history(store) == [("Porto", day(0), None)]
    assert [f.object for f in store.facts(user_id="u")] == ["Porto"]
    assert [h.fact.object for h in store.recall_facts("lives", user_id="u", mode="keyword")] == ["Porto"]


def test_a_gap_left_by_an_erased_fact_closes_on_the_next_survivor(store):
    erased = store.remember("in Lisbon now", user_id="u", session_id="gone", occurred_at=day(2))
    kept = store.remember("in Faro now", user_id="u", session_id="kept", occurred_at=day(5))
    store.add_fact("user", "lives_in", "Porto", user_id="u", valid_from=day(0))
    store.add_fact("user", "lives_in", "Lisbon", user_id="u", valid_from=day(2), source_episode_ids=[erased.id])
    store.add_fact("user", "lives_in", "Faro", user_id="u", valid_from=day(5), source_episode_ids=[kept.id])
    store.add_fact("user", "works_at", "Acme", user_id="u", valid_from=day(1))
    store.forget(user_id="u", session_id="gone")
    assert _history(store) == [("Porto", day(0), day(5)), ("Acme", day(1), None), ("Faro", day(5), None)]
    # Nothing in the history is the erased episode's time any more.
    times = {t for _, a, b in _history(store) for t in (a, b)}
    assert day(2) not in times
    assert sorted(f.object for f in store.facts(user_id="u", valid_at=day(3))) == ["Acme", "Porto"]


def test_same_instant_supersession_keeps_the_surviving_order(store):
    erased = store.remember("x", user_id="u", session_id="gone", occurred_at=day(1))
    store.add_fact("user", "mood", "calm", user_id="u", valid_from=day(1))
    store.add_fact("user", "mood", "angry", user_id="u", valid_from=day(1), source_episode_ids=[erased.id])
    store.add_fact("user", "mood", "happy", user_id="u", valid_from=day(1))
    store.forget(user_id="u", session_id="gone")
    assert _history(store) == [("calm", day(1), day(1)), ("happy", day(1), None)]


# --- naming the target ----------------------------------------------------------------------------


@pytest.mark.sqlite_only(reason="compares dumps of the SQLite file")
def test_forget_without_user_id_is_refused_and_changes_nothing(store, db_path):
    store.remember("anonymous", user_id=None)
    before = dump(db_path)
    for dry_run in (True, False):
        with pytest.raises(InvalidInputError, match="user_id"):
            store.forget(dry_run=dry_run)
    assert dump(db_path) == before


@pytest.mark.sqlite_only(reason="compares dumps of the SQLite file")
def test_forget_of_an_unknown_tenant_raises_with_close_matches(store, db_path):
    store.remember("hi", user_id="alice")
    before = dump(db_path)
    for dry_run in (True, False):
        with pytest.raises(UnknownTenantError) as info:
            store.forget(user_id="Alice", dry_run=dry_run)
        assert info.value.close_matches == ["alice"]
    with pytest.raises(UnknownTenantError):
        store.forget(user_id=None)  # the anonymous bucket holds nothing here
    assert dump(db_path) == before  # no audit entry either
    assert store.audit_log(all_tenants=True) == []
    receipt = store.forget(user_id="nobody", missing_ok=True)
    assert receipt.total == 0 and receipt.disk_scrubbed
    assert [e.user_id for e in store.audit_log(all_tenants=True)] == ["nobody"]
    assert [t.user_id for t in store.tenants()] == ["alice"]


def test_a_tenant_forgotten_once_is_unknown_the_second_time(store):
    store.remember("hi", user_id="alice")
    store.forget(user_id="alice")
    with pytest.raises(UnknownTenantError):
        store.forget(user_id="alice")
    assert store.forget(user_id="alice", missing_ok=True).total == 0


# --- the property: random stores, random scopes ---------------------------------------------------

TENANTS = ["alice", "bob", None]
SESSIONS = ["s1", "s2"]

episode_st = st.tuples(st.sampled_from([*SESSIONS, None]), st.integers(0, 5))
fact_st = st.tuples(st.sampled_from(["p1", "p2"]), st.integers(0, 5), st.lists(st.integers(0, 7), max_size=3))
tenant_st = st.fixed_dictionaries(
    {
        "episodes": st.lists(episode_st, max_size=6),
        "facts": st.lists(fact_st, max_size=5),
        "notes": st.lists(st.tuples(st.sampled_from(SESSIONS), st.integers(0, 5)), max_size=3),
        "checkpoints": st.lists(st.tuples(st.sampled_from(SESSIONS), st.integers(0, 5)), max_size=2),
        "keys": st.lists(st.sampled_from(SESSIONS), max_size=2),
        "block": st.booleans(),
        "recalls": st.lists(st.tuples(st.sampled_from([None, *SESSIONS]), st.integers(0, 5)), max_size=3),
    }
)
store_st = st.fixed_dictionaries({t or "": tenant_st for t in TENANTS})
scope_st = st.tuples(st.sampled_from(TENANTS), st.sampled_from([None, *SESSIONS]), st.sampled_from([None, 1, 3, 6]))


def build(s: MemoryStore, spec: dict, clock: list) -> list[str]:
    """Write ``spec`` into ``s`` in time order; returns every token and id written."""
    secrets = []
    for key, tenant in spec.items():
        user = key or None
        events = []  # (day, order, action): time order keeps scratchpad and checkpoint dates real
        for i, (session, d) in enumerate(tenant["episodes"]):
            events.append((d, 0, ("episode", session, i)))
        for session, d in tenant["notes"]:
            events.append((d, 1, ("note", session)))
        for session, d in tenant["checkpoints"]:
            events.append((d + 0.5, 2, ("checkpoint", session)))
        for session, d in tenant.get("recalls", []):
            events.append((d + 0.25, 3, ("recall", session)))
        ids = []
        for d, _, action in sorted(events, key=lambda e: (e[0], e[1])):
            clock[0] = day(d)
            word = token()
            secrets.append(word)
            if action[0] == "episode":
                e = s.remember(f"{word} asked", "told", user_id=user, session_id=action[1], occurred_at=day(d))
                ids.append(e.id)
            elif action[0] == "note":
                s.session(action[1], user_id=user).append_scratchpad(f"{word} note")
            elif action[0] == "recall":  # traced: the query is the tenant's, in the session it was filtered to
                s.recall(f"{word} asked", user_id=user, session_id=action[1])
            else:
                secrets.append(s.session(action[1], user_id=user).create_checkpoint(f"{word} checkpoint"))
        secrets += ids
        clock[0] = day(9)
        for predicate, d, sources in sorted(tenant["facts"], key=lambda f: f[1]):
            word = token()
            secrets.append(word)
            cited = [ids[i] for i in sources if i < len(ids)]
            secrets.append(s.add_fact("user", predicate, word, user_id=user, valid_from=day(d), source_episode_ids=cited).id)
        for session in tenant["keys"]:
            word = token()
            secrets.append(word)
            task = token()
            secrets.append(task)
            s.session(session, user_id=user).set(f"k{len(secrets)}", word)
            s.session(session, user_id=user).set_task_state(f"{task} task")
        if tenant["block"]:
            word = token()
            secrets.append(word)
            s.update_block("persona", f"{word} block", user_id=user)
    for t in s.tenants():
        s.recall("asked note block", user_id=t.user_id, kind="all")  # embeds blocks and notes
    return secrets


SECTIONS = [
    "blocks",
    "block_versions",
    "episodes",
    "facts",
    "fact_changes",
    "sessions",
    "kv_entries",
    "task_states",
    "scratchpad",
    "checkpoints",
    "recall_traces",
]
COUNT_OF = {"scratchpad": "scratchpad_entries"}  # receipt names differ from export section names


def expected_after(before: dict, session, until) -> tuple[dict, dict[str, int]]:
    """The tenant's export after forget(session_id=session, before=until), by the rules, and the counts."""
    whole = session is None and until is None
    b = None if until is None else day(until).isoformat()
    bm = None if until is None else to_micros(day(until))
    if whole:
        gone = {COUNT_OF.get(k, k): len(before[k]) for k in SECTIONS}
        return {k: [] for k in SECTIONS}, gone

    def in_scope(record, at_field):
        return (session is None or record["session_id"] == session) and (b is None or record[at_field] < b)

    erased_eps = [e for e in before["episodes"] if in_scope(e, "occurred_at")]
    erased_ids = {e["id"] for e in erased_eps}
    surviving_ids = {e["id"] for e in before["episodes"]} - erased_ids
    out = {k: list(before[k]) for k in SECTIONS}
    out["episodes"] = [e for e in before["episodes"] if e["id"] not in erased_ids]
    facts = [
        f for f in before["facts"] if not (erased_ids & set(f["source_episode_ids"]) and not surviving_ids & set(f["source_episode_ids"]))
    ]
    erased_facts = len(before["facts"]) - len(facts)
    # History: a survivor whose successor in its (subject, predicate) chain was erased now ends
    # where the next survivor starts, or is open again.
    amended = []
    for index, f in enumerate(before["facts"]):
        if f not in facts:
            continue
        f = {**f, "source_episode_ids": [i for i in f["source_episode_ids"] if i not in erased_ids]}
        chain = [g for g in before["facts"][index + 1 :] if (g["subject"], g["predicate"]) == (f["subject"], f["predicate"])]
        if chain and chain[0] not in facts:
            survivors = [g for g in chain if g in facts]
            f["valid_until"] = survivors[0]["valid_from"] if survivors else None
        amended.append(f)
    out["facts"] = amended
    # The transaction records go with the erased facts: their own, those their recording made,
    # and any that kept one of their start times.
    gone = [f for f in before["facts"] if f not in facts]
    gone_ids, gone_starts = {f["id"] for f in gone}, {f["valid_from"] for f in gone}
    erased_changes = [
        c
        for c in before["fact_changes"]
        if c["fact_id"] in gone_ids or c["caused_by"] in gone_ids or c["valid_until_before"] in gone_starts
    ]
    out["fact_changes"] = [c for c in before["fact_changes"] if c not in erased_changes]
    notes = [n for n in before["scratchpad"] if in_scope(n, "created_at")]
    out["scratchpad"] = [n for n in before["scratchpad"] if n not in notes]
    if b is None:
        checkpoints = [c for c in before["checkpoints"] if c["session_id"] == session]
    else:
        checkpoints = [
            c
            for c in before["checkpoints"]
            if (session is None or c["session_id"] == session)
            and (c["created_at"] < b or any(n["created_at"] < bm for n in c["snapshot"]["scratchpad"]))
        ]
    out["checkpoints"] = [c for c in before["checkpoints"] if c not in checkpoints]
    recalls = [r for r in before["recall_traces"] if in_scope(r, "at")]
    out["recall_traces"] = [r for r in before["recall_traces"] if r not in recalls]
    counts = {
        "recall_traces": len(recalls),
        "episodes": len(erased_eps),
        "facts": erased_facts,
        "scratchpad_entries": len(notes),
        "checkpoints": len(checkpoints),
        "sessions": 0,
        "kv_entries": 0,
        "task_states": 0,
        "fact_changes": len(erased_changes),
        "block_versions": 0,
        "blocks": 0,
    }
    if b is None:
        for section, name in (("sessions", "sessions"), ("kv_entries", "kv_entries"), ("task_states", "task_states")):
            out[section] = [r for r in before[section] if r["session_id"] != session]
            counts[name] = len(before[section]) - len(out[section])
    return out, counts


def vector_blobs(path: Path) -> set[bytes]:
    conn = sqlite3.connect(path)
    try:
        return {v for (v,) in conn.execute("SELECT vector FROM vectors")}
    finally:
        conn.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=store_st, scope=scope_st)
def test_forget_erases_exactly_its_scope(spec, scope):
    user, session, until = scope
    clock = [T0]
    set_clock(lambda: clock[0])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "m.db"
            with MemoryStore.open(path, embedder=FakeEmbedder(dim=96), trace=True) as s:
                secrets = build(s, spec, clock)
                exports = {t: s.export(user_id=t, include_embeddings=True, missing_ok=True) for t in TENANTS}
                known = {t.user_id for t in s.tenants()}
                has_session = (
                    session is None
                    or any(e["session_id"] == session for e in exports[user]["episodes"])
                    or any(r["session_id"] == session for r in exports[user]["sessions"])
                    or any(r["session_id"] == session for r in exports[user]["recall_traces"])
                )
                blobs_before = vector_blobs(path)
                files_before = dump(path)
                args = {"user_id": user, "session_id": session, "before": None if until is None else day(until)}
                if user not in known or not has_session:
                    with pytest.raises(UnknownTenantError if user not in known else UnknownSessionError):
                        s.forget(dry_run=True, **args)
                    with pytest.raises(UnknownTenantError if user not in known else UnknownSessionError):
                        s.forget(**args)
                    assert dump(path) == files_before
                    return
                dry = s.forget(dry_run=True, **args)
                real = s.forget(**args)
                assert dry.counts == real.counts
                assert real.disk_scrubbed, real.scrub_pending_reason  # why not, if it ever is not
                want, counts = expected_after(exports[user], session, until)
                assert {k: v for k, v in real.counts.items() if k != "vectors"} == counts
                after = {t: s.export(user_id=t, include_embeddings=True, missing_ok=True) for t in TENANTS}
                for t in TENANTS:  # nothing outside the scope changed
                    expected = want if t == user else {k: exports[t][k] for k in SECTIONS}
                    assert {k: after[t][k] for k in SECTIONS} == expected, t
                    if t != user:  # each export() adds an export entry; nothing else changes
                        assert [a for a in after[t]["audit"] if a["action"] != "export"] == [
                            a for a in exports[t]["audit"] if a["action"] != "export"
                        ]
                if session is None and until is None:
                    assert user not in {t.user_id for t in s.tenants()}
                remaining = json.dumps([after[t] for t in TENANTS])
                erased = [w for w in secrets if w not in remaining]
                # Scanned while the store is open: closing would checkpoint the WAL and hide a
                # scrub that did not happen.
                raw = file_bytes(path)
                assert [w for w in erased if w.encode() in raw] == []  # nothing inside it remains
                gone = blobs_before - vector_blobs(path)
                assert [b for b in gone if b in raw] == []
                for word in erased[:3]:  # after the scan: these recalls are traced
                    assert s.recall(word, user_id=user, mode="keyword", kind="all") == []
    finally:
        set_clock(None)


def test_an_erased_session_id_leaves_the_audit_entry_the_exports_and_the_file(db_path):
    """Session ids are agent text: after forget(session_id=S) no byte of S is left anywhere memlens
    writes, and the entry's digest still names S to whoever holds it."""
    from store.rights.audit import session_digest
    from store.tenancy import Tenant

    secret = "alice@example.com/clinic-2026-03-01"
    with MemoryStore.open(db_path) as store:
        store.remember("my knee hurts", "Noted.", user_id="alice", session_id=secret)
        store.remember("another chat", "ok", user_id="alice", session_id="other")
        store.session(secret, user_id="alice").set("symptom", "knee")
        receipt = store.forget(user_id="alice", session_id=secret, actor="dpo")
        assert receipt.disk_scrubbed, receipt.scrub_pending_reason
        (entry,) = [e for e in store.audit_log(user_id="alice") if e.action == "forget"]
        assert secret not in json.dumps(entry.model_dump(mode="json"))
        assert entry.scope["session"] == session_digest(Tenant("alice"), secret)
        assert secret not in json.dumps(store.export(user_id="alice"), default=str)
    assert secret.encode() not in file_bytes(db_path)
