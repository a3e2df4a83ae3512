"""A tenant's server-side vector index on PostgreSQL (MemoryStore.build_vector_index): recall
then searches the server instead of loading the tenant's vectors, finds what the in-memory
search finds, never returns an erased row, sees other connections' writes at once, and is
refused with a typed error where it cannot exist."""

from __future__ import annotations

import pytest

from store import MemoryStore
from store.errors import UnknownTenantError, UnsupportedByBackendError

pytest.importorskip("psycopg")
from store import testing
from store.backend.postgres import vectors as pg_vectors  # noqa: E402

TOPICS = ["invoice", "train", "garden", "printer", "holiday", "recipe", "football", "dentist"]


def fill(store: MemoryStore, user: str, n: int = 80) -> None:
    store.remember_many(
        [{"input": f"note {i} about the {TOPICS[i % len(TOPICS)]} number {i * 7}", "output": f"answer {i}"} for i in range(n)], user_id=user
    )


def ranking(hits) -> list[tuple[str, float]]:
    return [(h.id, round(h.scores.score, 4)) for h in hits]


def assert_same_ranking(got, want) -> None:
    """The same scores in the same order, and the same memories above the last score: the test
    embedder gives many memories equal vectors, and the server breaks such ties by row key, the
    in-memory scan by position, so only the members of the tie at the cut may differ."""
    assert [score for _, score in got] == [score for _, score in want]
    last = want[-1][1] if want else None
    assert {i for i, score in got if score != last} == {i for i, score in want if score != last}


@pytest.fixture
def searched(monkeypatch):
    """Every search the server's index answers, by tenant: the index provably in effect."""
    calls: list[str] = []
    real = pg_vectors.nearest

    def counted(conn, tenant, kind, query, k, **options):
        if options.get("approximate"):
            calls.append(tenant.key)
        return real(conn, tenant, kind, query, k, **options)

    monkeypatch.setattr(pg_vectors, "nearest", counted)
    return calls


QUERIES = ["the printer number", "garden", "invoice 147", "a holiday by train", "dentist appointment"]


@pytest.mark.usefixtures("pg_vector_ops")
def test_recall_with_the_index_finds_what_the_in_memory_search_finds_and_never_loads_the_vectors(pg_url, searched):
    with MemoryStore.open(pg_url) as s:
        # Fewer memories than a recall's vector candidates (50): both searches then hand fusion
        # every one of alice's cosines. With more, which of the test embedder's equal cosines fill
        # the list's last places differs between them, and hybrid's vector standout, measured over
        # the candidates, moves every score a little.
        fill(s, "alice", 40)
        fill(s, "bob", 20)
        before = {
            (q, mode): ranking(s.recall(q, user_id="alice", limit=10, mode=mode, kind="all"))
            for q in QUERIES
            for mode in ("hybrid", "vector")
        }
        assert not searched
    # A fresh process's store: nothing of alice's is in memory yet.
    with MemoryStore.open(pg_url) as s:
        report = s.build_vector_index(user_id="alice", sample=20)
        assert report.user_id == "alice" and report.vectors == 40 and report.queries == 20
        assert report.recall_at_10 == pytest.approx(1.0)  # 40 vectors, ef_search 100: the whole graph is searched
        searched.clear()
        after = {
            (q, mode): ranking(s.recall(q, user_id="alice", limit=10, mode=mode, kind="all"))
            for q in QUERIES
            for mode in ("hybrid", "vector")
        }
        for key in before:
            assert_same_ranking(after[key], before[key])
        assert searched and set(searched) == {"alice"}
        assert s.warm_vectors(user_id="alice") == 0  # the server holds them
        assert s.warm_vectors(user_id="bob") == 20  # bob has no index: in memory, as before
        assert s.drop_vector_index(user_id="alice") is True
        searched.clear()
        assert ranking(s.recall(QUERIES[0], user_id="alice", limit=10)) == before[(QUERIES[0], "hybrid")]
        assert not searched
        assert s.drop_vector_index(user_id="alice") is False


@pytest.mark.usefixtures("pg_vector_ops")
def test_an_erased_memory_never_comes_back_and_another_connections_write_is_found_at_once(pg_url, searched):
    secret = "the spare key of the red van is under the third flowerpot"
    with MemoryStore.open(pg_url) as s:
        fill(s, "alice")
        s.remember(secret, "noted", user_id="alice", session_id="to-erase")
        s.build_vector_index(user_id="alice", sample=5)
        # Warm this store's search of alice first: anything cached would be cached now.
        assert s.recall(secret, user_id="alice", limit=1, mode="vector")[0].text.startswith(secret)
        with MemoryStore.open(pg_url) as other:
            assert other.forget(user_id="alice", session_id="to-erase").counts["episodes"] == 1
            other.remember("the quokka ledger is kept in the blue drawer", "noted", user_id="alice")
        searched.clear()
        for mode in ("vector", "hybrid"):
            texts = [h.text for h in s.recall(secret, user_id="alice", limit=100, mode=mode, kind="all")]
            assert texts and not any(t.startswith(secret) for t in texts)
        assert s.recall("where is the quokka ledger", user_id="alice", limit=1, mode="vector")[0].text.startswith("the quokka ledger")
        assert searched
        # A session filter is applied by the server's search too: only that session's memories.
        s.remember("the printer in room 4 jams on thick paper", "noted", user_id="alice", session_id="office")
        searched.clear()
        hits = s.recall("the printer number", user_id="alice", limit=10, mode="vector", session_id="office")
        assert [h.text.split(" on ")[0] for h in hits] == ["the printer in room 4 jams"] and searched


def test_refused_where_it_cannot_exist_and_for_a_tenant_the_store_does_not_hold(pg_url, tmp_path):
    with MemoryStore.open(tmp_path / "file.db") as s:
        fill(s, "alice", 5)
        with pytest.raises(UnsupportedByBackendError):
            s.build_vector_index(user_id="alice")
        with pytest.raises(UnsupportedByBackendError):
            s.drop_vector_index(user_id="alice")
    with MemoryStore.open(pg_url) as s:
        fill(s, "alice", 5)
        with pytest.raises(UnknownTenantError):
            s.build_vector_index(user_id="alcie")
        with testing.backend(s).read() as conn:  # nothing was made for the typo
            from store.tenancy import Tenant

            assert not pg_vectors.has_index(conn, Tenant("alcie"))
            assert not pg_vectors.has_index(conn, Tenant("alice"))


def test_a_forget_by_another_process_between_check_and_build_is_not_undone(pg_url, monkeypatch):
    """The service looks the tenant up, then builds; a whole-tenant forget that commits in
    between used to be undone: the build made the tenant's tables again and reported success."""
    from store.backend.postgres import partitions
    from store.recall import service
    from store.tenancy import Tenant

    with MemoryStore.open(pg_url) as writer:
        fill(writer, "alice", 5)
    looked_up = service.require_tenant

    def erased_right_after(conn, tenant, **options):
        found = looked_up(conn, tenant, **options)
        with MemoryStore.open(pg_url) as other:  # another process: its own connections and caches
            other.forget(user_id="alice", actor="dpo")
        return found

    monkeypatch.setattr(service, "require_tenant", erased_right_after)
    with MemoryStore.open(pg_url) as s:
        with pytest.raises(UnknownTenantError):
            s.build_vector_index(user_id="alice")
        assert "alice" not in s.tenants()
        with testing.backend(s).read() as conn:
            tables = set(partitions.names(Tenant("alice")).values())
            left = conn.exec_driver_sql("SELECT relname FROM pg_class WHERE relname = ANY(%(names)s)", {"names": list(tables)}).all()
            assert left == []


@pytest.mark.usefixtures("pg_vector_ops")
def test_the_index_command_builds_reports_and_drops_and_refuses_a_sqlite_store(pg_url, tmp_path, capsys):
    from inspector.cli.main import main

    with MemoryStore.open(pg_url) as s:
        fill(s, "alice", 30)
    assert main(["index", "--db", pg_url, "--user", "alice", "--sample", "10"]) == 0
    out = capsys.readouterr().out
    assert "indexed 30 episode vectors" in out and "recall@10 against exact search: 1.000 over 10" in out
    assert main(["index", "--db", pg_url, "--user", "alice", "--drop"]) == 0
    assert "dropped" in capsys.readouterr().out
    assert main(["index", "--db", pg_url, "--user", "alcie"]) == 2
    assert "did you mean 'alice'" in capsys.readouterr().err
    with MemoryStore.open(tmp_path / "file.db") as s:
        fill(s, "alice", 3)
    assert main(["index", "--db", str(tmp_path / "file.db"), "--user", "alice"]) == 2
    assert "need PostgreSQL" in capsys.readouterr().err
