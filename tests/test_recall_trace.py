"""The recall trace: opt-in, every recall kept with what came back, bounded per tenant, and the
tenant's memory like any other (exported, imported, in time travel, erased by every forget scope)."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from store import AsyncMemoryStore, MemoryStore
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError, UnknownTraceError

from .conftest import T0
from .test_forget import file_bytes


def token() -> str:
    return "zq" + uuid.uuid4().hex[:12]


def traced(path_or_url, **options) -> MemoryStore:
    return MemoryStore.open(path_or_url, embedder=FakeEmbedder(dim=32), trace=True, **options)


def test_tracing_is_off_unless_asked(db_path, monkeypatch):
    monkeypatch.delenv("MEMLENS_TRACE", raising=False)
    with MemoryStore.open(db_path, embedder=None) as s:
        s.remember("moved to Porto", "ok", user_id="alice")
        s.recall("porto", user_id="alice")
        assert not s.tracing and s.recall_traces(user_id="alice") == []
    monkeypatch.setenv("MEMLENS_TRACE", "1")
    with MemoryStore.open(db_path, embedder=None) as s:
        s.recall("porto", user_id="alice")
        assert s.tracing and [t.query for t in s.recall_traces(user_id="alice")] == ["porto"]
    with MemoryStore.open(db_path, embedder=None, trace=False) as s:  # the switch beats the environment
        s.recall("lisbon", user_id="alice")
        assert not s.tracing
    with MemoryStore.open(db_path, embedder=None, read_only=True) as s:  # a read-only store never writes one
        assert not s.tracing


def test_a_bad_switch_is_refused(db_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_TRACE", "maybe")
    with pytest.raises(InvalidInputError, match="MEMLENS_TRACE"):
        MemoryStore.open(db_path, embedder=None)
    monkeypatch.delenv("MEMLENS_TRACE")
    MemoryStore.open(db_path, embedder=None).close()
    for bad in ({"trace": "yes"}, {"trace": True, "read_only": True}, {"traces_kept": 0}, {"trace_ttl": timedelta(0)}):
        with pytest.raises(InvalidInputError):
            MemoryStore.open(db_path, embedder=None, **bad)


def test_a_trace_holds_what_was_asked_and_what_came_back_never_the_text(backend_url):
    with traced(backend_url) as s:
        porto = s.remember("I moved to Porto last spring", "nice", user_id="alice", session_id="s1")
        s.remember("my cat is called Miso", "ok", user_id="alice", session_id="s2")
        hits = s.recall("where is Porto", user_id="alice", session_id="s1", limit=3, label="planner")
        facts = s.recall_facts("porto", user_id="alice")
        (fact_trace, trace) = s.recall_traces(user_id="alice")
        assert (trace.call, trace.query, trace.session_id, trace.label) == ("recall", "where is Porto", "s1", "planner")
        assert trace.arguments == {"kind": "episodic", "mode": "hybrid", "limit": 3, "prefix": False, "since": None, "until": None}
        assert [(h.kind, h.id, h.scores) for h in trace.hits] == [(h.kind, h.id, h.scores) for h in hits]
        assert trace.hits[0].id == porto.id and trace.took_ms > 0 and trace.user_id == "alice"
        assert (fact_trace.call, fact_trace.hits) == ("recall_facts", facts)
        assert s.get_recall_trace(trace.id, user_id="alice") == trace
        assert "last spring" not in trace.model_dump_json()  # a hit is named, never copied


def test_traces_are_the_tenants_own(backend_url):
    with traced(backend_url) as s:
        s.remember("alice's secret", "ok", user_id="alice")
        s.recall("secret", user_id="alice")
        s.recall("anything", user_id="bob")  # a tenant known only by its recall is listed, so it can be erased
        (mine,) = s.recall_traces(user_id="alice")
        assert [t.query for t in s.recall_traces(user_id="bob")] == ["anything"]
        assert "bob" in {t.user_id for t in s.tenants()}
        with pytest.raises(UnknownTraceError):
            s.get_recall_trace(mine.id, user_id="bob")
        assert s.forget(user_id="bob").counts["recall_traces"] == 1


def test_bad_input_traces_nothing(db_path):
    with traced(db_path) as s:
        s.remember("porto", "ok", user_id="alice")
        for bad in ({"label": 7}, {"label": "x" * 201}, {"limit": 0}, {"session_id": ""}):
            with pytest.raises(InvalidInputError):
                s.recall("porto", user_id="alice", **bad)
        assert s.recall_traces(user_id="alice") == []


def test_explaining_is_not_an_agents_recall(db_path):
    with traced(db_path) as s:
        e = s.remember("moved to Porto", "ok", user_id="alice")
        s.explain("porto", e.id, user_id="alice")
        assert s.recall_traces(user_id="alice") == []


def test_each_tenant_keeps_its_newest_traces_for_the_time_to_live(db_path, clock):
    with traced(db_path, traces_kept=3, trace_ttl=timedelta(days=30)) as s:
        for n in range(5):
            clock[0] = T0 + timedelta(minutes=n)
            s.recall(f"query {n}", user_id="alice")
        s.recall("bob's", user_id="bob")
        assert [t.query for t in s.recall_traces(user_id="alice")] == ["query 4", "query 3", "query 2"]
        assert [t.query for t in s.recall_traces(user_id="alice", limit=1)] == ["query 4"]
        clock[0] = T0 + timedelta(days=30, minutes=3)  # query 2 is past its time to live
        assert [t.query for t in s.recall_traces(user_id="alice")] == ["query 4", "query 3"]
        assert s.purge_expired() == 1  # query 2, still in the file until now
    conn = sqlite3.connect(db_path)
    assert [q for (q,) in conn.execute("SELECT query FROM recall_traces ORDER BY at, pk")] == ["query 3", "query 4", "bob's"]
    conn.close()


def test_a_trace_outlives_the_process_that_made_it(db_path):
    with traced(db_path) as s:
        for n in range(20):
            s.recall(f"query {n}", user_id="alice")
    with MemoryStore.open(db_path, embedder=None) as s:  # close wrote every trace handed over
        assert len(s.recall_traces(user_id="alice")) == 20


def test_the_async_twin_is_traced(db_path):
    async def run():
        s = await AsyncMemoryStore.open(db_path, embedder=None, trace=True)
        await s.recall("porto", user_id="alice", label="async agent")
        traces = await s.recall_traces(user_id="alice")
        await s.close()
        return traces

    assert [(t.query, t.label) for t in asyncio.run(run())] == [("porto", "async agent")]


def test_traces_travel_in_exports_and_time(db_path, tmp_path, clock):
    with traced(db_path) as s:
        s.remember("moved to Porto", "ok", user_id="alice", session_id="s1", occurred_at=T0)
        clock[0] = T0 + timedelta(hours=1)
        s.recall("porto", user_id="alice", session_id="s1")
        clock[0] = T0 + timedelta(hours=2)
        s.recall("lisbon", user_id="alice")
        halfway = s.snapshot(user_id="alice", as_of=T0 + timedelta(minutes=90))
        assert [t.query for t in halfway.recent_recalls] == ["porto"]
        exported = s.export(user_id="alice")
        assert [r["query"] for r in exported["recall_traces"]] == ["porto", "lisbon"]
        held = s.recall_traces(user_id="alice")
    with traced(tmp_path / "other.db") as other:
        report = other.import_(exported, as_user="carol")
        assert report.counts["recall_traces"] == 2
        assert [t.model_dump(exclude={"user_id"}) for t in other.recall_traces(user_id="carol")] == [
            t.model_dump(exclude={"user_id"}) for t in held
        ]
        again = other.import_(exported, as_user="carol")  # twice is once
        assert again.unchanged["recall_traces"] == 2 and len(other.recall_traces(user_id="carol")) == 2


@pytest.mark.parametrize("scope", ["tenant", "session", "before"])
def test_every_forget_scope_erases_its_traces_down_to_the_bytes(db_path, clock, scope):
    words = {name: token() for name in ("early_s1", "late_s1", "early_none", "late_none")}
    with traced(db_path) as s:
        s.remember("moved to Porto", "ok", user_id="alice", session_id="s1", occurred_at=T0)
        for name, word in words.items():
            clock[0] = T0 + timedelta(days=1 if name.startswith("early") else 3)
            s.recall(f"{word} where", user_id="alice", session_id="s1" if name.endswith("s1") else None)
        s.recall("bob's own", user_id="bob")
        args = {"tenant": {}, "session": {"session_id": "s1"}, "before": {"before": T0 + timedelta(days=2)}}[scope]
        erased = {
            "tenant": set(words),
            "session": {"early_s1", "late_s1"},
            "before": {"early_s1", "early_none"},
        }[scope]
        dry = s.forget(user_id="alice", dry_run=True, **args)
        receipt = s.forget(user_id="alice", **args)
        assert dry.counts["recall_traces"] == receipt.counts["recall_traces"] == len(erased)
        assert receipt.disk_scrubbed
        left = {t.query.split()[0] for t in s.recall_traces(user_id="alice")}
        assert left == {words[n] for n in set(words) - erased}
        raw = file_bytes(Path(db_path))
        assert [n for n in erased if words[n].encode() in raw] == []
        assert [n for n in set(words) - erased if words[n].encode() not in raw] == []
        assert [t.query for t in s.recall_traces(user_id="bob")] == ["bob's own"]


def test_a_session_known_only_by_its_recalls_can_be_erased(db_path):
    word = token()
    with traced(db_path) as s:
        s.remember("hello", "hi", user_id="alice")
        s.recall(word, user_id="alice", session_id="never-written")
        assert s.forget(user_id="alice", session_id="never-written").counts["recall_traces"] == 1
        assert word.encode() not in file_bytes(Path(db_path))


def test_a_replay_compares_then_with_now_and_shows_an_erased_memory_as_gone(db_path, clock):
    with traced(db_path) as s:
        porto = s.remember("I moved to Porto", "ok", user_id="alice", session_id="s1", occurred_at=T0)
        clock[0] = T0 + timedelta(hours=1)
        s.recall("porto move", user_id="alice", label="agent")
        (trace,) = s.recall_traces(user_id="alice")
        clock[0] = T0 + timedelta(hours=2)
        later = s.remember("another Porto move, back to Porto", "ok", user_id="alice", session_id="s2", occurred_at=clock[0])
        s.forget(user_id="alice", session_id="s1")  # the memory the agent had retrieved is erased
        now = s.replay(trace.id, user_id="alice")
        then = s.replay(trace.id, user_id="alice", then=True)
        assert [(r.id, r.traced_rank, r.replayed_rank, r.held) for r in now.rows] == [(later.id, None, 1, True), (porto.id, 1, None, False)]
        assert now.rows[1].text is None and "I moved to Porto" not in now.model_dump_json()
        assert then.as_of == trace.at and then.hits == []  # as of the recall's moment, the later episode had not occurred
        assert s.recall_traces(user_id="alice") == [trace]  # replaying is no agent's recall
        with pytest.raises(UnknownTraceError):
            s.replay(trace.id, user_id="bob")


def test_a_trace_waiting_to_be_written_never_outlives_an_erasure_by_another_process(db_path, monkeypatch):
    from store.tiers import traces

    monkeypatch.setattr(traces, "WRITE_EVERY", 30.0)  # the trace waits in the agent's process
    word = token()
    agent = traced(db_path)
    try:
        agent.remember("hello", "hi", user_id="alice")
        agent.recall(f"{word} where", user_id="alice")
        with MemoryStore.open(db_path, embedder=None) as dpo:  # another process: it cannot see the pending trace
            assert dpo.forget(user_id="alice").counts["recall_traces"] == 0
        agent.recall("after the erasure", user_id="alice")  # a new recall is new data
        assert [t.query for t in agent.recall_traces(user_id="alice")] == ["after the erasure"]
    finally:
        agent.close()
    assert word.encode() not in file_bytes(Path(db_path))


def test_a_recall_lists_a_new_tenant_but_is_no_activity_of_a_known_one(db_path, clock):
    with traced(db_path) as s:
        s.remember("hello", "hi", user_id="alice")
        clock[0] = T0 + timedelta(hours=1)
        s.recall("hello", user_id="alice")
        s.recall("anyone?", user_id="bob")
        s.recall_traces(user_id="alice")  # written now
        active = {t.user_id: t.last_activity for t in s.tenants()}
        assert active == {"alice": T0, "bob": T0 + timedelta(hours=1)}
