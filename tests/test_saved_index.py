"""The approximate index saved beside a store file: a new process maps it instead of building it,
only when it is exactly what the store holds, and no erasure leaves a saved copy behind.

The threshold is lowered so a few hundred rows get an index; each test checks whether the index
in use was mapped from the saved file or built, so none passes by silently building."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from store import MemoryStore, testing
from store.embedding import FakeEmbedder
from store.recall import approximate
from store.recall.saved_index import tenant_stem

from .conftest import T0
from .test_approximate import low_threshold, text  # noqa: F401 (an autouse fixture: a few hundred rows get an index)

ROOT = str(Path(__file__).resolve().parent.parent)
ROWS = 600


def fill(s: MemoryStore, user: str, rows: int = ROWS) -> None:
    s.remember_many(
        [{"input": text(i), "session_id": "old" if i < 100 else "s1", "occurred_at": T0 + timedelta(minutes=i)} for i in range(rows)],
        user_id=user,
    )


def folder(db_path: Path) -> Path:
    return Path(f"{db_path}-vectors")


def tenant_files(db_path: Path, user: str) -> list[Path]:
    return sorted(folder(db_path).glob(f"*{tenant_stem(user)}*"))


def index_in_use(s: MemoryStore, user: str):
    with testing.backend(s).read() as conn:
        return testing.vector_cache(s).searchable(conn, testing.tenant(s, user), "episode", s.embedder.dim).approximate


def rows_mapped(s: MemoryStore, user: str) -> int:
    """How many of the tenant's rows the cached matrix maps from the saved rows file (0: all in memory)."""
    matrix = testing.cached_matrices(testing.vector_cache(s))[(testing.tenant(s, user).key, "episode")]
    return 0 if matrix.saved is None else len(matrix.saved)


def build_and_save(db_path: Path, *users: str) -> None:
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        for user in users:
            fill(s, user)
            s.recall("w1 v1", user_id=user, mode="vector")
            assert testing.vector_cache(s).settle(timeout=120)
            assert not index_in_use(s, user).mapped  # built here
    for user in users:
        assert sorted(p.suffix for p in tenant_files(db_path, user)) == [".f32", ".json", ".usearch"]
    assert folder(db_path).stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in folder(db_path).iterdir()} == {0o600}


def vector_hits(s: MemoryStore, query: str, user: str) -> list[tuple[str, float]]:
    return [(h.text, round(h.scores.vector, 5)) for h in s.recall(query, user_id=user, mode="vector", limit=10)]


def scores(hits: list[tuple[str, float]]) -> list[float]:
    return [score for _, score in hits]  # tied rows may come in either order


def exact_hits(db_path: Path, query: str, user: str, monkeypatch) -> list[tuple[str, float]]:
    monkeypatch.setenv(approximate.MIN_ROWS_ENV, "0")
    try:
        with MemoryStore.open(db_path, embedder=FakeEmbedder(), read_only=True) as fresh:
            return vector_hits(fresh, query, user)
    finally:
        monkeypatch.setenv(approximate.MIN_ROWS_ENV, "200")


def test_a_new_store_maps_the_saved_index_at_its_first_search(db_path, monkeypatch):
    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        hits = vector_hits(s, "w5 v7 u3", "alice")
        index = index_in_use(s, "alice")  # no settle: in use from the first search on
        assert index is not None and index.mapped and index.covered == ROWS
        assert rows_mapped(s, "alice") == ROWS  # and the rows it re-ranks from are mapped, not read
    assert scores(hits) == scores(exact_hits(db_path, "w5 v7 u3", "alice", monkeypatch))


def test_another_process_maps_it_and_finds_rows_added_since(db_path):
    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.remember("zebra giraffe okapi", "noted", user_id="alice")  # past what the saved index covers
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {ROOT!r})
        from store import MemoryStore, testing
        from store.embedding import FakeEmbedder
        with MemoryStore.open({str(db_path)!r}, embedder=FakeEmbedder()) as s:
            hits = s.recall("zebra giraffe okapi", user_id="alice", mode="vector")
            with testing.backend(s).read() as conn:
                index = testing.vector_cache(s).searchable(conn, testing.tenant(s, "alice"), "episode", s.embedder.dim).approximate
            matrix = testing.cached_matrices(testing.vector_cache(s))[(testing.tenant(s, "alice").key, "episode")]
            print(json.dumps([hits[0].text, index is not None and index.mapped, index.covered, len(matrix.saved), matrix.size]))
    """)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    first, mapped, covered, rows_mapped, rows = json.loads(out)
    assert first.startswith("zebra giraffe okapi") and mapped and covered == ROWS
    assert (rows_mapped, rows) == (ROWS, ROWS + 1)  # the new row read into memory, beside the mapped ones


@pytest.mark.parametrize("scope", ["tenant", "session", "before", "facts_only"])
def test_every_forget_deletes_the_tenants_saved_index_and_no_other(db_path, scope):
    build_and_save(db_path, "alice", "bob")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.add_fact("alice", "likes", "tea", user_id="alice")
        options = {"tenant": {}, "session": {"session_id": "old"}, "before": {"before": T0 + timedelta(minutes=50)}}
        s.forget(user_id="alice", **options.get(scope, {"facts_only": True}))
    assert tenant_files(db_path, "alice") == []
    assert len(tenant_files(db_path, "bob")) == 3
    assert not [p for p in folder(db_path).iterdir() if p.name.startswith(".")]  # no partial save left


def test_an_erasure_between_loading_and_saving_leaves_no_saved_copy(db_path, monkeypatch):
    """The erasure commits and deletes the files while the builder still holds the matrix it
    loaded before it; the builder's save comes after, and must take itself back."""
    from store.recall.saved_index import SavedIndexes

    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "alice")
    real_save = SavedIndexes.save

    def erase_first(self, *args, **kwargs):
        with MemoryStore.open(db_path, embedder=FakeEmbedder()) as other:
            other.forget(user_id="alice", session_id="old")
        real_save(self, *args, **kwargs)

    monkeypatch.setattr(SavedIndexes, "save", erase_first)
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.recall("w1 v1", user_id="alice", mode="vector")
        assert testing.vector_cache(s).settle(timeout=120)
        assert testing.vector_cache(s).index_failure is None
    assert tenant_files(db_path, "alice") == []


def test_a_saved_index_older_than_an_erasure_of_its_tenant_is_not_used(db_path):
    """As if the erasing process died after its commit and before deleting the files: the rows
    the index covers are unchanged (only facts were erased), yet the erasure recorded after the
    index was saved rules it out, and a read-write open deletes it."""
    build_and_save(db_path, "alice")
    kept = db_path.parent / "kept"
    shutil.copytree(folder(db_path), kept)
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.add_fact("alice", "likes", "tea", user_id="alice")
        s.forget(user_id="alice", facts_only=True)
    shutil.rmtree(folder(db_path))
    shutil.copytree(kept, folder(db_path))
    old_graph = [p for p in tenant_files(db_path, "alice") if p.suffix == ".usearch"][0]
    with MemoryStore.open(db_path, embedder=FakeEmbedder(), read_only=True) as s:
        s.recall("w1 v1", user_id="alice", mode="vector")
        assert index_in_use(s, "alice") is None  # being built: the saved one was refused
        assert testing.vector_cache(s).settle(timeout=120)
        assert old_graph.exists()  # a read-only open writes nothing
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.recall("w1 v1", user_id="alice", mode="vector")
        assert index_in_use(s, "alice") is None
        assert testing.vector_cache(s).settle(timeout=120)
    described = json.loads((folder(db_path) / f"{tenant_stem('alice')}.episode.json").read_text())
    assert described["erasure_mark"] > 0  # saved again, after the erasure


def _garbage_graph(graph: Path, described: dict) -> None:
    graph.write_bytes(b"\x00\x01" * (described["graph_bytes"] // 2))


def _truncated_graph(graph: Path, described: dict) -> None:
    graph.write_bytes(graph.read_bytes()[: described["graph_bytes"] // 2])


def _rows_file(graph: Path, described: dict) -> Path:
    return graph.parent / described["rows_file"]


def _garbage_rows(graph: Path, described: dict) -> None:
    """Rows of the right size whose values are not the store's (a damaged disk, or planted)."""
    _rows_file(graph, described).write_bytes(b"\x00\x00\x80\x3f" * (described["rows_file_bytes"] // 4))


def _consistent_garbage_rows(graph: Path, described: dict) -> dict:
    """A hostile folder: the rows replaced and their description rewritten to match them."""
    from store.recall.saved_index import file_digest

    rows = _rows_file(graph, described)
    rows.write_bytes(b"\x00\x00\x80\x3f" * (described["rows_file_bytes"] // 4))
    return described | {"rows_file_digest": file_digest(rows)}


def _short_rows(graph: Path, described: dict) -> dict:
    """Rows cut short, with a description that says so: fewer bytes than its rows need."""
    from store.recall.saved_index import file_digest

    rows = _rows_file(graph, described)
    rows.write_bytes(rows.read_bytes()[:4096])
    return described | {"rows_file_bytes": 4096, "rows_file_digest": file_digest(rows)}


def _consistent_garbage(graph: Path, described: dict) -> dict:
    """A hostile folder: the graph replaced and its description rewritten to match it."""
    from store.recall.saved_index import file_digest

    graph.write_bytes(b"USEARCH" + b"\xff" * 5000)
    return described | {"graph_bytes": graph.stat().st_size, "graph_digest": file_digest(graph)}


HOSTILE = {
    "garbage graph": lambda g, d: _garbage_graph(g, d),
    "truncated graph": lambda g, d: _truncated_graph(g, d),
    "garbage with a matching description": _consistent_garbage,
    "a path outside the folder": lambda g, d: d | {"graph": "../../../etc/passwd"},
    "another tenant's graph": lambda g, d: d | {"graph": g.name.replace(tenant_stem("alice"), tenant_stem("bob"))},
    "wrong types": lambda g, d: d | {"rows": "600"},
    "an older format (blake2b digests)": lambda g, d: d | {"format": 2},
    "fewer rows than it covers": lambda g, d: d | {"rows": 100},
    "not JSON": lambda g, d: "{not json",
    "garbage rows": _garbage_rows,
    "garbage rows with a matching description": _consistent_garbage_rows,
    "truncated rows": lambda g, d: _rows_file(g, d).write_bytes(_rows_file(g, d).read_bytes()[:-4]) and None,
    "short rows with a matching description": _short_rows,
    "rows a path outside the folder": lambda g, d: d | {"rows_file": "../../" + d["rows_file"]},
    "another tenant's rows": lambda g, d: d | {"rows_file": d["rows_file"].replace(tenant_stem("alice"), tenant_stem("bob"))},
    "rows file missing": lambda g, d: _rows_file(g, d).unlink(),
}


# A rows file that is not the one described: its rows are read from the store instead, and the
# graph (checked apart, and re-ranked from those rows) is still mapped. Rows that are described
# right but are not the store's (the sampled comparison) rule the whole saved index out.
ROWS_ONLY = {"garbage rows", "truncated rows", "short rows with a matching description", "rows file missing"}


@pytest.mark.parametrize("damage", HOSTILE, ids=list(HOSTILE))
def test_a_damaged_or_hostile_saved_index_is_ignored_and_rebuilt(db_path, monkeypatch, damage):
    build_and_save(db_path, "alice", "bob")
    description = folder(db_path) / f"{tenant_stem('alice')}.episode.json"
    described = json.loads(description.read_text())
    changed = HOSTILE[damage](folder(db_path) / described["graph"], described)
    if changed is not None:
        description.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        hits = vector_hits(s, "w5 v7 u3", "alice")
        assert rows_mapped(s, "alice") == 0  # the rows were read from the store
        if damage in ROWS_ONLY:
            assert index_in_use(s, "alice").mapped
        else:
            assert index_in_use(s, "alice") is None  # refused: built again instead
            assert testing.vector_cache(s).settle(timeout=120)
            assert not index_in_use(s, "alice").mapped
        assert vector_hits(s, "w5 v7 u3", "bob") and rows_mapped(s, "bob") == ROWS  # bob's are untouched
    assert scores(hits) == scores(exact_hits(db_path, "w5 v7 u3", "alice", monkeypatch))


@pytest.mark.parametrize("change", ["replaced", "deleted"])
def test_rows_changed_under_a_saved_index_rule_it_out(db_path, change):
    """A replaced row gets a new row version; a deleted one shifts every later row's position."""
    from sqlalchemy import text as sql_text

    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s, testing.backend(s).write() as conn:
        first = "(SELECT min(rowid) FROM vectors)"
        if change == "replaced":
            conn.execute(sql_text(f"INSERT OR REPLACE INTO vectors SELECT * FROM vectors WHERE rowid = {first}"))
        else:
            conn.execute(sql_text(f"DELETE FROM vectors WHERE rowid = {first}"))
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.recall("w1 v1", user_id="alice", mode="vector")
        assert index_in_use(s, "alice") is None


def test_a_read_only_open_maps_the_saved_index_and_writes_nothing(db_path):
    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        fill(s, "carol")  # no saved index yet
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder(db_path).iterdir()}
    with MemoryStore.open(db_path, embedder=FakeEmbedder(), read_only=True) as s:
        s.recall("w1 v1", user_id="alice", mode="vector")
        assert index_in_use(s, "alice").mapped
        s.recall("w1 v1", user_id="carol", mode="vector")
        assert testing.vector_cache(s).settle(timeout=120)
        assert not index_in_use(s, "carol").mapped  # built in memory, not saved
    assert {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder(db_path).iterdir()} == before


def stored_vectors(s: MemoryStore, user: str) -> set[bytes]:
    from store.schema import vectors_t

    with testing.backend(s).read() as conn:
        return {bytes(v) for v in conn.execute(testing.tenant(s, user).select(vectors_t, vectors_t.c.vector)).scalars()}


def folder_bytes(db_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder(db_path).iterdir()))


def test_after_a_forget_no_erased_vector_is_left_in_the_index_folder(db_path):
    """The byte scan of the erasure tests, over the index folder: the saved rows hold every row as
    raw float32, so the scan first finds alice's vectors there, then none of them after her forget."""
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.remember_many([{"input": f"bob's own {i} x{i % 71} y{i % 67}", "session_id": "s1"} for i in range(ROWS)], user_id="bob")
    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.recall("x1", user_id="bob", mode="vector")
        assert testing.vector_cache(s).settle(timeout=120) and len(tenant_files(db_path, "bob")) == 3
        mine, theirs = stored_vectors(s, "alice"), stored_vectors(s, "bob")
        mine -= theirs  # the fake embedder can give two texts the same vector: bob's copy rightly stays
        assert mine and all(v in folder_bytes(db_path) for v in mine)
        s.forget(user_id="alice")
    raw = folder_bytes(db_path)
    assert not [v for v in mine if v in raw]
    assert all(v in raw for v in theirs)


def test_a_later_save_copies_the_split_rows_and_a_new_process_maps_it(db_path, monkeypatch):
    """A process that mapped the saved rows and then took in more rows saves a larger index: the
    mapped rows are copied from their file, the new ones from memory, in order."""
    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.recall("w1 v1", user_id="alice", mode="vector")
        assert rows_mapped(s, "alice") == ROWS
        s.remember_many([{"input": f"later {text(i)}", "session_id": "s2"} for i in range(ROWS)], user_id="alice")
        s.recall("w1 v1", user_id="alice", mode="vector")  # queues the catch-up, which saves
        assert testing.vector_cache(s).settle(timeout=120)
    described = json.loads((folder(db_path) / f"{tenant_stem('alice')}.episode.json").read_text())
    assert described["rows"] == 2 * ROWS and len(tenant_files(db_path, "alice")) == 3  # the older files are gone
    with MemoryStore.open(db_path, embedder=FakeEmbedder(), read_only=True) as s:
        hits = vector_hits(s, "later note 7 about w7", "alice")
        assert rows_mapped(s, "alice") == 2 * ROWS and index_in_use(s, "alice").mapped
    assert scores(hits) == scores(exact_hits(db_path, "later note 7 about w7", "alice", monkeypatch))


def test_a_reader_with_the_rows_mapped_never_returns_what_another_process_erased(db_path):
    build_and_save(db_path, "alice")
    with MemoryStore.open(db_path, embedder=FakeEmbedder(), read_only=True) as reader:
        before = reader.recall("note 5 about w5", user_id="alice", mode="vector", limit=50)
        assert rows_mapped(reader, "alice") == ROWS and any(h.session_id == "old" for h in before)
        with MemoryStore.open(db_path, embedder=FakeEmbedder()) as other:
            other.forget(user_id="alice", session_id="old")
        after = reader.recall("note 5 about w5", user_id="alice", mode="vector", limit=50)
        assert after and not [h for h in after if h.session_id == "old"]
        assert rows_mapped(reader, "alice") == 0  # its files were deleted with the erasure: read from the store
