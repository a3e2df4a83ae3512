"""store.compat.loomflow beyond loomflow's own tests: its embedders, its consolidator, import weight."""

import subprocess
import sys

import pytest

pytest.importorskip("loomflow")

from loomflow import Episode  # noqa: E402
from loomflow.memory import HashEmbedder  # noqa: E402

from store.compat.loomflow import LoomflowMemory  # noqa: E402


class CountingConsolidator:
    def __init__(self):
        self.calls = 0

    async def consolidate(self, episodes, *, store):
        from loomflow import Fact

        for e in episodes:
            self.calls += 1
            await store.append(Fact(user_id=e.user_id, subject="user", predicate="said", object=e.input))


async def test_three_rounds_cost_three_extractor_calls_across_tenants(tmp_path):
    consolidator = CountingConsolidator()
    mem = LoomflowMemory(tmp_path / "m.db", consolidator=consolidator)
    for n, user in enumerate(["alice", "bob", None]):
        await mem.remember(Episode(session_id="s", user_id=user, input=f"round {n}", output="ok"))
        await mem.consolidate()
    assert consolidator.calls == 3
    assert [f.object for f in await mem.facts.query(user_id="bob")] == ["round 1"]


async def test_loomflow_embedder_is_accepted_and_used(tmp_path):
    mem = LoomflowMemory(tmp_path / "m.db", embedder=HashEmbedder(dimensions=16))
    await mem.remember(Episode(session_id="s", user_id="u", input="docker networking", output=""))
    [match] = await mem.recall_scored("docker networking", user_id="u")
    assert match.vector_score is not None and match.vector_score > 0.99  # same text, same hash vector
    assert mem.store.embedder.dim == 16


async def test_remember_of_an_existing_id_replaces_it(tmp_path):
    mem = LoomflowMemory(tmp_path / "m.db")
    await mem.remember(Episode(id="ep1", session_id="s", user_id="u", input="first", output="a"))
    await mem.remember(Episode(id="ep1", session_id="s", user_id="u", input="second", output="b"))
    assert [e.input for e in (await mem.export(user_id="u")).episodes] == ["second"]


def test_import_store_does_not_import_loomflow_or_arshai():
    code = "import store, store.compat, sys; print(any(m.split('.')[0] in ('loomflow', 'arshai') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


async def test_the_fact_store_is_loomflows_fact_store(tmp_path):
    """loomflow's FactStore protocol includes all_facts() (Agent.consolidate and the
    ConsolidationWorker read it); query() without valid_at and count() include superseded
    facts, and a predicate is matched in loomflow's canonical form, as loomflow's stores do."""
    from datetime import UTC, datetime

    from loomflow import Fact

    mem = LoomflowMemory(tmp_path / "m.db", embedder=HashEmbedder())
    try:
        lisbon = Fact(user_id="alice", subject="alice", predicate="lives_in", object="Lisbon", valid_from=datetime(2025, 1, 1, tzinfo=UTC))
        porto = Fact(user_id="alice", subject="alice", predicate="lives_in", object="Porto", valid_from=datetime(2026, 1, 1, tzinfo=UTC))
        dog = Fact(user_id="bob", subject="bob", predicate="owns", object="a dog")
        for fact in (lisbon, porto, dog):
            await mem.facts.append(fact)
        assert sorted(f.object for f in await mem.facts.all_facts()) == ["Lisbon", "Porto", "a dog"]
        assert sorted(f.object for f in await mem.facts.query(user_id="alice")) == ["Lisbon", "Porto"]
        now = await mem.facts.query(user_id="alice", valid_at=datetime(2026, 6, 1, tzinfo=UTC))
        assert [f.object for f in now] == ["Porto"]
        assert await mem.facts.count(user_id="alice") == 2
        assert (await mem.profile(user_id="alice")).fact_count == 2
        assert sorted(f.object for f in await mem.facts.query(user_id="alice", predicate="Lives In")) == ["Lisbon", "Porto"]
        assert {f.id for f in await mem.facts.all_facts()} == {lisbon.id, porto.id, dog.id}  # the caller's ids are kept
    finally:
        await mem.aclose()


async def test_facts_delete_is_loomflows_gdpr_surface_and_a_memlens_erasure(tmp_path):
    """delete(user_id=, before=) erases that tenant's facts recorded before ``before`` (all of
    them without it), as loomflow's fact stores do; the rest of the tenant and every other
    tenant stay, and the erasure is audited like any forget."""
    from datetime import timedelta

    from loomflow import Fact
    from loomflow.memory.facts import FactStore

    mem = LoomflowMemory(tmp_path / "m.db", embedder=HashEmbedder())
    try:
        assert isinstance(mem.facts, FactStore)
        await mem.remember(Episode(user_id="alice", session_id="s", input="hello", output="hi"))
        await mem.facts.append(Fact(user_id="alice", subject="alice", predicate="likes", object="tea"))
        await mem.facts.append(Fact(user_id="bob", subject="bob", predicate="likes", object="coffee"))
        (first,) = await mem.facts.query(user_id="alice")
        assert await mem.facts.delete(user_id="alice", before=first.recorded_at) == 0  # recorded at, not before
        await mem.facts.append(Fact(user_id="alice", subject="alice", predicate="owns", object="a cat"))
        assert await mem.facts.delete(user_id="alice", before=first.recorded_at + timedelta(microseconds=1)) == 1
        assert [f.object for f in await mem.facts.query(user_id="alice")] == ["a cat"]
        assert await mem.facts.delete(user_id="alice") == 1
        assert await mem.facts.count(user_id="alice") == 0
        assert await mem.facts.count(user_id="bob") == 1
        assert len(await mem.recall("hello", user_id="alice")) == 1  # the episode stays
        assert await mem.facts.delete(user_id="nobody") == 0
        entries = mem.store.audit_log(user_id="alice")
        assert [(e.action, e.actor, e.counts["facts"]) for e in entries[:2]] == [("forget", "loomflow", 1), ("forget", "loomflow", 1)]
    finally:
        await mem.aclose()


async def test_a_fact_store_of_the_callers_holds_the_facts(tmp_path):
    """``fact_store=`` (as loomflow's backends take it): facts go to that store and every fact
    path reads it (recall, profile, export); consolidation fills it, each episode once; forget
    erases through its delete()."""
    from loomflow import Fact, ScriptedModel, ScriptedTurn
    from loomflow.memory import Consolidator, InMemoryFactStore
    from loomflow.memory.facts import FactStore

    facts = InMemoryFactStore()
    extracted = '[{"subject":"alice","predicate":"likes","object":"green tea"}]'
    consolidator = Consolidator(model=ScriptedModel([ScriptedTurn(text=extracted)] * 5))
    mem = LoomflowMemory(tmp_path / "m.db", embedder=HashEmbedder(), consolidator=consolidator, fact_store=facts)
    try:
        assert mem.facts is facts and isinstance(mem.facts, FactStore)
        await mem.facts.append(Fact(user_id="alice", subject="alice", predicate="lives_in", object="Porto"))
        await mem.remember(Episode(user_id="alice", session_id="s", input="I like green tea", output="noted"))
        await mem.consolidate()
        await mem.consolidate()  # each episode is shown to the consolidator once
        assert sorted(f.object for f in await facts.query(user_id="alice")) == ["Porto", "green tea"]
        assert mem.store.facts(user_id="alice", include_history=True) == []  # none in the memlens store
        assert [f.object for f in await mem.recall_facts("Porto", user_id="alice")] == ["Porto"]
        profile = await mem.profile(user_id="alice")
        assert profile.fact_count == 2 and profile.episode_count == 1
        assert len((await mem.export(user_id="alice")).facts) == 2
        assert await mem.forget(user_id="alice") == 1 + 2  # the episode, then the fact store's two
        assert await facts.count(user_id="alice") == 0
    finally:
        await mem.aclose()
