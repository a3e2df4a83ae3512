"""The approximate vector index: found as well as the exact scan, and in step with every write
and erasure, from this process or another, with the index warm.

The threshold is lowered so a few hundred rows take the approximate path; each test checks
that the index really was in use, so none passes by silently scanning exactly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from store import MemoryStore, testing
from store.embedding import FakeEmbedder
from store.recall import approximate
from store.recall.approximate import ApproximateIndex
from store.recall.vectors import top_k

ROOT = str(Path(__file__).resolve().parent.parent)
ROWS = 600


@pytest.fixture(autouse=True)
def low_threshold(monkeypatch):
    monkeypatch.setenv(approximate.MIN_ROWS_ENV, "200")  # read by this process and the ones it starts


def text(i: int) -> str:
    return f"note {i} about w{i % 97} and v{i % 89} with u{i % 83}"


def fill(s: MemoryStore, user: str, rows: int = ROWS, session: str = "s1") -> None:
    s.remember_many([{"input": text(i), "session_id": session} for i in range(rows)], user_id=user)


def warm_index(s: MemoryStore, user: str):
    """Search once (which queues the build), wait for it, and return the index now in use."""
    s.recall("w1 v1", user_id=user, mode="vector")
    assert testing.vector_cache(s).settle(timeout=120)
    with testing.backend(s).read() as conn:
        vectors = testing.vector_cache(s).searchable(conn, testing.tenant(s, user), "episode", s.embedder.dim)
    assert vectors.approximate is not None and vectors.approximate.covered == len(vectors.pks)
    return vectors.approximate


def in_another_process(db_path: Path, body: str) -> None:
    code = f"import sys\nsys.path.insert(0, {ROOT!r})\nfrom store import MemoryStore\nfrom store.embedding import FakeEmbedder\n"
    code += f"s = MemoryStore.open({str(db_path)!r}, embedder=FakeEmbedder())\n" + textwrap.dedent(body) + "\ns.close()\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def vector_hits(s: MemoryStore, query: str, user: str, limit: int = 10) -> list[tuple[str, float]]:
    return [(h.text, round(h.scores.vector, 5)) for h in s.recall(query, user_id=user, mode="vector", limit=limit)]


def scores(hits: list[tuple[str, float]]) -> list[float]:
    return [score for _, score in hits]


def exact_hits(db_path: Path, query: str, user: str, monkeypatch, limit: int = 10) -> list[tuple[str, float]]:
    monkeypatch.setenv(approximate.MIN_ROWS_ENV, "0")
    try:
        with MemoryStore.open(db_path, embedder=FakeEmbedder()) as fresh:
            return vector_hits(fresh, query, user, limit)
    finally:
        monkeypatch.setenv(approximate.MIN_ROWS_ENV, "200")


def clustered(rows: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors around a few dozen topics, as sentence embeddings are (on uniform random
    vectors every neighbour is about as far as any other, which no graph index is built for).
    A query's 10 nearest score about 0.6, as real MiniLM queries' do over their memories."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    points = centres[rng.integers(0, 40, rows)] + 1.0 * rng.normal(size=(rows, dim))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def test_recall_at_10_against_the_exact_scan():
    both = clustered(4200, 384, seed=13)  # queries from the same topics, held out of the index
    matrix, queries = both[:4000], both[4000:]
    index = ApproximateIndex(384)
    index.extend(matrix, approximate.BUILD_STEP, lambda: True)
    found = []
    for q in queries:
        exact, exact_scores = top_k(matrix, q, 10)
        best, scores = index.top_k(matrix, q, 10)
        found.append(len(set(best.tolist()) & set(exact.tolist())) / 10)
        # Re-ranked from the float32 rows: the scores are the exact cosines, not the graph's int8 ones.
        assert np.allclose(scores, matrix[best] @ q)
    assert np.mean(found) >= 0.995


def test_rows_appended_after_a_search_took_its_view_are_not_returned_from_that_view():
    """The builder extends the index while searches run: a search over an older, shorter view
    must not get row positions beyond it (they would index past its end, or be rows it never saw)."""
    matrix = clustered(1020, 64, seed=3)
    matrix, queries = matrix[:1000], matrix[1000:]
    index = ApproximateIndex(64)
    index.extend(matrix, 256, lambda: True)
    older = matrix[:500]
    for q in queries:
        best, scores = index.top_k(older, q, 10)
        assert best.max() < 500
        assert set(best.tolist()) == set(top_k(older, q, 10)[0].tolist())


def test_rows_the_index_does_not_cover_yet_are_scanned_exactly():
    matrix = clustered(1000, 64, seed=5)
    index = ApproximateIndex(64)
    index.extend(matrix[:700], 256, lambda: True)
    for q in matrix[800:820]:  # each query is a row only the exact tail scan can see
        best, _ = index.top_k(matrix, q, 5)
        assert best[0] >= 700 and np.isclose(matrix[best[0]] @ q, 1.0)


def test_rows_written_by_another_process_are_found_with_the_index_warm(db_path):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
        index = warm_index(s, "alice")
        in_another_process(db_path, 's.remember("zebra giraffe okapi", "noted", user_id="alice")')
        hits = s.recall("zebra giraffe okapi", user_id="alice", mode="vector")
        assert hits[0].text.startswith("zebra giraffe okapi") and hits[0].scores.vector > 0.8
        with testing.backend(s).read() as conn:  # found past the index, which did not have to be rebuilt
            assert testing.vector_cache(s).searchable(conn, testing.tenant(s, "alice"), "episode", s.embedder.dim).approximate is index


@pytest.mark.parametrize("erase", ["session", "tenant"])
def test_vectors_erased_by_another_process_never_come_back_from_a_warm_index(db_path, monkeypatch, erase):
    """The erased rows are the newest and as many new rows follow, so they take the same keys
    and row versions again (SQLite hands out max(key) + 1): the table's signature is what it was,
    and only the erasure counter tells the warm process that its matrix and index are stale."""
    query = "zebra giraffe okapi"
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
        s.remember_many([{"input": f"zebra giraffe okapi secret {i}", "session_id": "s2"} for i in range(50)], user_id="alice")
        warm_index(s, "alice")
        assert vector_hits(s, query, "alice")[0][0].startswith("zebra giraffe okapi secret")
        target, refill = ('session_id="s2"', 50) if erase == "session" else ("", ROWS + 50)
        in_another_process(
            db_path,
            f"""
            s.forget(user_id="alice", {target})
            s.remember_many([{{"input": f"plain words {{i}}", "session_id": "s3"}} for i in range({refill})], user_id="alice")
        """,
        )
        right_after = vector_hits(s, query, "alice")
        rebuilt = warm_index(s, "alice")  # the next index is built from what the table holds now
        assert rebuilt.covered == ROWS + 50
        later = vector_hits(s, query, "alice")
    expected = exact_hits(db_path, query, "alice", monkeypatch)
    # Scores, not texts: the fake embedder ties many rows, and ties may fall either way. A stale
    # vector under a reused key would score ~1.0 here; every row now in the table scores less.
    assert scores(right_after) == scores(later) == scores(expected) and max(scores(expected)) < 0.9
    assert not any("secret" in t for t, _ in right_after + later)


def test_an_index_never_answers_for_another_tenant(db_path, monkeypatch):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
        s.remember_many([{"input": f"zebra giraffe okapi of bob {i}"} for i in range(300)], user_id="bob")
        alice_index, bob_index = warm_index(s, "alice"), warm_index(s, "bob")
        assert alice_index is not bob_index
        hits = vector_hits(s, "zebra giraffe okapi of bob", "alice", limit=20)
        assert hits and not any("bob" in t for t, _ in hits)
        assert all("bob" in t for t, _ in vector_hits(s, "note about w1", "bob", limit=20))
    assert scores(hits) == scores(exact_hits(db_path, "zebra giraffe okapi of bob", "alice", monkeypatch, limit=20))


def test_a_filtered_search_with_the_index_on_is_exact(db_path, monkeypatch):
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
        fill(s, "alice", rows=100, session="other")
        warm_index(s, "alice")
        hits = s.recall("note about w3 and v3", user_id="alice", mode="vector", session_id="other", limit=10)
        got = [(h.text, round(h.scores.vector, 5)) for h in hits]
    monkeypatch.setenv(approximate.MIN_ROWS_ENV, "0")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as fresh:
        hits = fresh.recall("note about w3 and v3", user_id="alice", mode="vector", session_id="other", limit=10)
        assert got == [(h.text, round(h.scores.vector, 5)) for h in hits]


def test_a_build_that_fails_leaves_the_tenant_searched_exactly_and_says_why(db_path, monkeypatch):
    attempts = []

    def broken(self, matrix, step, keep_going):
        attempts.append(len(matrix))
        raise MemoryError("no room for the graph")

    monkeypatch.setattr(ApproximateIndex, "extend", broken)
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
        first = vector_hits(s, "note about w3 and v3", "alice")
        assert testing.vector_cache(s).settle(timeout=120)
        assert isinstance(testing.vector_cache(s).index_failure, MemoryError)
        assert vector_hits(s, "note about w3 and v3", "alice") == first
        assert testing.vector_cache(s).settle(timeout=120) and attempts == [ROWS]  # not retried on every search
        with testing.backend(s).read() as conn:
            assert testing.vector_cache(s).searchable(conn, testing.tenant(s, "alice"), "episode", s.embedder.dim).approximate is None


@pytest.mark.model  # imports the model's runtime (onnxruntime), in a subprocess
def test_the_query_encoder_can_still_load_after_an_index_was_built():
    """A large tenant's index can be built before the model is first used (a search in keyword
    mode, an inspector opening on it): the encoder's runtime must still import afterwards."""
    code = (
        f"import sys; sys.path.insert(0, {ROOT!r})\n"
        "from store.recall.approximate import ApproximateIndex\n"
        "ApproximateIndex(8)\n"
        "import onnxruntime\n"
        "print('loaded')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "loaded", done.stderr[-2000:]


def test_no_builder_thread_outlives_its_work(db_path):
    import threading

    def builders():
        return [t for t in threading.enumerate() if t.name == "memlens-vector-index"]

    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
        warm_index(s, "alice")
    for thread in builders():  # it returns once nothing is queued; a thread left waiting never would
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in builders())


def erase_alices_secrets_and_refill(s: MemoryStore) -> None:
    """Alice's newest 50 rows erased, then 50 new ones under the same keys and row versions."""
    s.forget(user_id="alice", session_id="s2")
    s.remember_many([{"input": f"plain words {i}", "session_id": "s3"} for i in range(50)], user_id="alice")


@pytest.mark.parametrize("where", ["another process", "this process"])
def test_an_erasure_keeps_other_tenants_indexes_and_never_returns_what_it_erased(db_path, monkeypatch, where):
    """Bob's graph survives Alice's erasure (rebuilding one takes a minute of a core at 100k),
    while Alice's erased vectors, whose keys the refill reuses, still never come back."""
    query = "zebra giraffe okapi"
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "bob")
        fill(s, "alice")
        s.remember_many([{"input": f"zebra giraffe okapi secret {i}", "session_id": "s2"} for i in range(50)], user_id="alice")
        bob_index, alice_index = warm_index(s, "bob"), warm_index(s, "alice")
        bob_before = vector_hits(s, query, "bob")
        assert vector_hits(s, query, "alice")[0][0].startswith("zebra giraffe okapi secret")
        if where == "another process":
            in_another_process(
                db_path, "from tests.test_approximate import erase_alices_secrets_and_refill\nerase_alices_secrets_and_refill(s)"
            )
        else:
            erase_alices_secrets_and_refill(s)
        right_after = vector_hits(s, query, "alice")
        assert warm_index(s, "bob") is bob_index  # the same graph object: never dropped, never rebuilt
        assert vector_hits(s, query, "bob") == bob_before
        assert warm_index(s, "alice") is not alice_index
        later = vector_hits(s, query, "alice")
    expected = exact_hits(db_path, query, "alice", monkeypatch)
    assert scores(right_after) == scores(later) == scores(expected) and max(scores(expected)) < 0.9
    assert not any("secret" in t for t, _ in right_after + later)


def test_erasures_the_audit_entries_do_not_account_for_drop_every_tenant():
    """The counter moved by two but one entry names a tenant (an entry lost, or a counter bumped
    by a file replaced underneath): nothing tells which other tenant lost rows, so all go."""
    from store.recall.tenant_matrix import TenantMatrix
    from store.recall.vectors import VectorCache

    counter, entries = [0], []
    cache = VectorCache(None, lambda conn: counter[0], lambda conn, after: [e for e in entries if e[0] > after])
    cache.notice_erasures(None)

    def cached():
        testing.cached_matrices(cache).update({(user, "episode"): TenantMatrix(dim=4) for user in ("alice", "bob", "carol")})
        return testing.cached_matrices(cache)

    cached()
    counter[0], entries[:] = 1, [(7, "alice")]
    cache.notice_erasures(None)
    assert sorted(k[0] for k in testing.cached_matrices(cache)) == ["bob", "carol"]
    cached()
    counter[0], entries[:] = 3, entries + [(9, "bob")]
    cache.notice_erasures(None)
    assert testing.cached_matrices(cache) == {}
    cached()
    counter[0], entries[:] = 4, entries + [(12, "carol")]  # in step again: only carol's go
    cache.notice_erasures(None)
    assert sorted(k[0] for k in testing.cached_matrices(cache)) == ["alice", "bob"]


@pytest.mark.parametrize("ending", ["exit", "close, then exit"])
def test_a_process_that_exits_while_an_index_builds_exits_cleanly(tmp_path, ending):
    """Searching a large tenant once queues its build; a script that then exits (with or without
    close()) died with SIGABRT ("terminate called without an active exception"), usearch's
    native worker torn down mid-step. A build is long enough to be caught mid-step at 20k rows."""
    if not approximate.available():
        pytest.skip("usearch is not installed")
    db = tmp_path / "big.db"
    with MemoryStore.open(db, embedder=FakeEmbedder(dim=384)) as s:
        s.remember_many([{"input": text(i), "output": "ok"} for i in range(20_000)], user_id="big")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        from store import MemoryStore
        from store.embedding import FakeEmbedder
        s = MemoryStore.open({str(db)!r}, embedder=FakeEmbedder(dim=384))
        import time
        s.recall("w1 v1", user_id="big")
        time.sleep(0.5)  # the build is under way (it takes seconds here): usearch is adding rows
        if {ending == "close, then exit"}:
            s.close()
        print("searched")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "searched", (done.returncode, done.stderr)
    assert "terminate called" not in done.stderr
