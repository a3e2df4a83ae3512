"""The demo store on either engine: the same story in a server database as in a file, built
only where it takes nothing of anyone's."""

from __future__ import annotations

import itertools
from urllib.parse import urlsplit, urlunsplit

import pytest

from inspector.cli.main import main
from store import MemoryStore
from store.demo import DEMO_NOW, build_demo_store
from store.embedding import FakeEmbedder
from store.errors import InvalidInputError, OutputExistsError
from store.tiers.common import set_id_source
from store.validation import set_clock


@pytest.fixture
def frozen():
    """The clock and the ids a build takes, the same for every build of the test."""

    def reset():
        counter = itertools.count(1)
        set_id_source(lambda: f"{next(counter):032x}")

    set_clock(lambda: DEMO_NOW)
    reset()
    yield reset
    set_clock(None)
    set_id_source(None)


def story(location) -> dict[str, dict]:
    """Every tenant's export with its digests; the manifest's name of the store aside."""
    with MemoryStore.open(location, read_only=True, embedder=FakeEmbedder()) as store:
        exports = {str(t.user_id): store.export(user_id=t.user_id, include_embeddings=True) for t in store.tenants()}
    for export in exports.values():
        assert export["manifest"].pop("source_store")
    return exports


def test_the_demo_on_postgresql_holds_what_the_demo_file_holds(frozen, tmp_path, pg_url):
    build_demo_store(tmp_path / "demo.db", size="compact", embedder=FakeEmbedder()).close()
    frozen()
    build_demo_store(pg_url, size="compact", embedder=FakeEmbedder()).close()
    in_file, on_server = story(tmp_path / "demo.db"), story(pg_url)
    assert sorted(on_server) == sorted(in_file) and len(in_file) == 4
    for name in in_file:
        assert on_server[name] == in_file[name], name


def test_a_server_database_that_holds_a_store_is_never_emptied_for_a_demo(pg_url, quiet_isolation):
    with MemoryStore.open(pg_url, embedder=FakeEmbedder()) as store:
        store.remember("the agent's real memory", user_id="dana")
    with pytest.raises(OutputExistsError, match="already holds a memlens store"):
        build_demo_store(pg_url, size="compact", embedder=FakeEmbedder())
    with pytest.raises(InvalidInputError, match="never empties a server database"):
        build_demo_store(pg_url, size="compact", embedder=FakeEmbedder(), force=True)
    with MemoryStore.open(pg_url, read_only=True, embedder=FakeEmbedder()) as store:
        assert [t.user_id for t in store.tenants()] == ["dana"]
        assert [e["input"] for e in store.export(user_id="dana")["episodes"]] == ["the agent's real memory"]


def test_memlens_demo_builds_in_a_server_database_and_never_prints_its_password(pg_url, capsys):
    # The test server trusts its socket, so it takes any password: the URL carries one, as a real one would.
    parts = urlsplit(pg_url)
    with_password = urlunsplit(parts._replace(netloc=f"{parts.username}:hunter2-secret@{parts.netloc.rpartition('@')[2]}"))
    assert "hunter2-secret" in with_password
    assert main(["demo", "--db", with_password, "--no-open"]) == 0
    printed = capsys.readouterr()
    assert "hunter2" not in printed.out + printed.err
    assert "building the demo store at postgresql://" in printed.err
    with MemoryStore.open(pg_url, read_only=True, embedder=FakeEmbedder()) as store:
        assert {t.user_id for t in store.tenants()} >= {"alice", "bob", "carol"}
    assert main(["demo", "--db", with_password, "--no-open"]) == 2  # a second build is refused
    refused = capsys.readouterr().err
    assert "already holds a memlens store" in refused and "hunter2" not in refused


def test_a_demo_is_not_built_into_another_librarys_memory(tmp_path):
    with pytest.raises(InvalidInputError, match="memlens's own"):
        build_demo_store(f"loomflow-sqlite:{tmp_path / 'bot.db'}", size="compact", embedder=FakeEmbedder())
    assert list(tmp_path.iterdir()) == []
