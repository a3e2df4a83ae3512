"""A mem0 agent's memory, written with mem0's own Memory (a local Qdrant folder and its SQLite
history; a hash embedder stands in for the hosted one), imported into memlens, never changed."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import pytest

# mem0 reads these when it is first imported: no telemetry, and its home in a folder of the tests'.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-home-"))
pytest.importorskip("mem0")

from mem0 import Memory  # noqa: E402
from mem0.utils.factory import EmbedderFactory  # noqa: E402

import store  # noqa: E402
from store.compat.mem0_source import import_mem0, read_mem0  # noqa: E402
from store.errors import InvalidInputError, ReadOnlyStoreError, SourceNotFoundError, UnrecognizedSourceError  # noqa: E402
from store.memory import MemoryStore  # noqa: E402
from tests.cli_process import run_cli  # noqa: E402
from tests.compat.mem0_support import local_config  # noqa: E402


def fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def agent(tmp_path, monkeypatch) -> tuple[dict, dict]:
    """mem0's memory of two users, one memory updated twice, one deleted; its config and the ids."""
    monkeypatch.setitem(EmbedderFactory.provider_to_class, "openai", "tests.compat.mem0_support.HashEmbedding")
    config = local_config(tmp_path)
    memory = Memory.from_config(config)
    ids = {
        "pizza": memory.add("I love pizza in Lisbon", user_id="alice", infer=False)["results"][0]["id"],
        "dog": memory.add("my dog is called Rex", user_id="alice", agent_id="planner", infer=False)["results"][0]["id"],
        "sushi": memory.add("prefers sushi", user_id="bob", infer=False)["results"][0]["id"],
        "gone": memory.add("a memory bob took back", user_id="bob", infer=False)["results"][0]["id"],
    }
    memory.update(ids["pizza"], "I love pizza in Porto")
    memory.update(ids["pizza"], "I love pizza in Naples")
    memory.delete(ids["gone"])
    memory.close()
    (tmp_path / "mem0.json").write_text(json.dumps(config))
    return config, ids


def test_mem0s_memory_is_imported_with_its_history_never_changed(agent, tmp_path):
    config, ids = agent
    before = fingerprint(tmp_path / "qdrant") | {"history": hashlib.sha256((tmp_path / "history.db").read_bytes()).hexdigest()}
    with MemoryStore.open(tmp_path / "memlens.db", embedder=None) as store:
        report = import_mem0(store, config)
        assert report.tiers["facts"].read == report.tiers["facts"].written == 5  # pizza's three texts, the dog, the sushi
        assert set(store.tenant_names()) == {"alice", "bob"}
        current = {f.subject: (f.predicate, f.object) for f in store.facts(user_id="alice")}
        assert current == {
            ids["pizza"]: ("memory", "I love pizza in Naples"),
            ids["dog"]: ("memory (agent planner)", "my dog is called Rex"),
        }
        history = sorted(
            (f for f in store.facts(user_id="alice", include_history=True) if f.subject == ids["pizza"]), key=lambda f: f.valid_from
        )
        assert [f.object for f in history] == ["I love pizza in Lisbon", "I love pizza in Porto", "I love pizza in Naples"]
        assert [f.valid_until is None for f in history] == [False, False, True]
        assert [f.object for f in store.facts(user_id="bob")] == ["prefers sushi"]  # the deleted memory is not imported
        again = import_mem0(store, config)
        assert again.tiers["facts"].written == 0 and again.tiers["facts"].unchanged == 5
    after = fingerprint(tmp_path / "qdrant") | {"history": hashlib.sha256((tmp_path / "history.db").read_bytes()).hexdigest()}
    assert after == before


@pytest.mark.model  # the command embeds the imported facts with the packaged model
def test_the_command_line_imports_from_a_mem0_config(agent, tmp_path):
    done = run_cli("import", "--db", tmp_path / "memlens.db", "--create", "--from", "mem0", tmp_path / "mem0.json")
    assert done.returncode == 0, done.stderr
    assert "mem0 Memory" in done.stdout and "facts" in done.stdout


def test_what_memlens_cannot_read_is_refused_with_nothing_read(agent, tmp_path):
    config, _ = agent
    with pytest.raises(InvalidInputError, match="local Qdrant"):
        read_mem0({**config, "vector_store": {"provider": "chroma", "config": {}}})
    with pytest.raises(InvalidInputError, match="server"):
        read_mem0({**config, "vector_store": {"provider": "qdrant", "config": {"host": "example.org"}}})
    with pytest.raises(SourceNotFoundError):
        read_mem0({**config, "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "nowhere")}}})
    (tmp_path / "qdrant" / "link").symlink_to(tmp_path / "history.db")
    with pytest.raises(UnrecognizedSourceError, match="a link"):
        read_mem0(config)


def test_mem0s_memory_is_shown_where_it_lives_and_followed(agent, tmp_path):
    config, ids = agent
    address = f"mem0:{tmp_path / 'mem0.json'}"
    with store.open(address, embedder=None) as view:
        assert set(view.tenant_names()) == {"alice", "bob"}
        assert {f.object for f in view.facts(user_id="alice")} == {"I love pizza in Naples", "my dog is called Rex"}
        assert [h.fact.object for h in view.recall_facts("pizza", user_id="alice", mode="keyword")] == ["I love pizza in Naples"]
        version = view.data_version()
        memory = Memory.from_config(config)  # the agent writes on
        memory.add("has a cat named Tom", user_id="carol", infer=False)
        memory.close()
        assert view.data_version() != version
        assert [f.object for f in view.facts(user_id="carol")] == ["has a cat named Tom"]
        with pytest.raises(ReadOnlyStoreError, match="history database"):
            view.forget(user_id="alice")
        with pytest.raises(ReadOnlyStoreError):
            view.add_fact("x", "y", "z", user_id="alice")
