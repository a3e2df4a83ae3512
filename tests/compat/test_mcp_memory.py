"""`memlens mcp` against the reference MCP memory server: the same script of calls to both, over
stdio with the official SDK's client, gives the same answers; a client of one tenant reaches no
other; a reference server's file imports whole and erases to the last byte.

The reference server (``@modelcontextprotocol/server-memory``) is installed from npm into a cache
the first time and run with node; without node and npm those tests skip, saying so."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_connected_server_and_client_session

from inspector.mcp_server import GRAPH_TOOLS, ToolHandlers, build_server
from store import MemoryStore
from store import open as store_open
from store.compat.knowledge_graph import GRAPH_SESSION, KnowledgeGraph, read_mcp_memory
from store.compat.loomflow_sqlite import import_loomflow_sqlite
from store.embedding import FakeEmbedder
from store.errors import ImportValidationError, InvalidInputError, ReadOnlyStoreError

from ..cli_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_VERSION = "2026.8.31"


@pytest.fixture(scope="session")
def reference_server() -> list[str]:
    """The command that runs the reference memory server (installed once per machine)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm run the reference MCP memory server; neither is installed here")
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memlens-tests" / f"server-memory-{REFERENCE_VERSION}"
    script = home / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    home.mkdir(parents=True, exist_ok=True)
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers install it once between them
        if not script.exists():
            package = f"@modelcontextprotocol/server-memory@{REFERENCE_VERSION}"
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(home), package], capture_output=True, text=True, timeout=600
            )
            if done.returncode != 0:
                pytest.skip(f"npm could not install {package}: {done.stderr.strip()[-300:]}")
    return [node, str(script)]


def memlens_command(db: Path, user: str) -> list[str]:
    return [sys.executable, "-m", "inspector.cli", "mcp", "--db", str(db), "--user", user, "--create"]


@asynccontextmanager
async def client(command: list[str], env: dict[str, str] | None = None):
    params = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, **(env or {})}, cwd=ROOT)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def answers(session: ClientSession, script: list[tuple[str, dict]]) -> list[tuple[bool, str, dict | None]]:
    out = []
    for tool, arguments in script:
        result = await session.call_tool(tool, arguments)
        out.append((result.isError, result.content[0].text, result.structuredContent))
    return out


def entity(name: str, kind: str, *observations: str) -> dict:
    return {"name": name, "entityType": kind, "observations": list(observations)}


def relation(a: str, kind: str, b: str) -> dict:
    return {"from": a, "to": b, "relationType": kind}


# A conversation's worth of calls: every tool, every edge the reference defines an answer for
# (a name already held, an observation already there, an unknown entity, a relation to a node
# outside the answer, a deletion that cascades, case-insensitive search of types and observations).
SCRIPT: list[tuple[str, dict]] = [
    ("read_graph", {}),
    (
        "create_entities",
        {
            "entities": [
                entity("Ada Lovelace", "person", "wrote the first program", "Likes poetry"),
                entity("Analytical Engine", "machine", "designed by Babbage"),
                entity("Charles Babbage", "person"),
            ]
        },
    ),
    ("create_entities", {"entities": [entity("Ada Lovelace", "person", "ignored"), entity("Zoë", "cat", "naps in the sun ☀")]}),
    (
        "create_relations",
        {
            "relations": [
                relation("Ada Lovelace", "wrote notes on", "Analytical Engine"),
                relation("Charles Babbage", "designed", "Analytical Engine"),
            ]
        },
    ),
    (
        "create_relations",
        {"relations": [relation("Ada Lovelace", "wrote notes on", "Analytical Engine"), relation("Ada Lovelace", "knows", "Nobody Yet")]},
    ),
    ("add_observations", {"observations": [{"entityName": "Charles Babbage", "contents": ["mathematician", "mathematician"]}]}),
    ("add_observations", {"observations": [{"entityName": "Ada Lovelace", "contents": ["wrote the first program", "born 1815"]}]}),
    ("add_observations", {"observations": [{"entityName": "Nobody Yet", "contents": ["x"]}]}),
    ("read_graph", {}),
    ("search_nodes", {"query": "PERSON"}),
    ("search_nodes", {"query": "poetry"}),
    ("search_nodes", {"query": "babbage"}),
    ("open_nodes", {"names": ["Ada Lovelace", "Not There"]}),
    ("open_nodes", {"names": []}),
    (
        "delete_observations",
        {
            "deletions": [
                {"entityName": "Ada Lovelace", "observations": ["Likes poetry", "never said"]},
                {"entityName": "Ghost", "observations": ["x"]},
            ]
        },
    ),
    ("delete_relations", {"relations": [relation("Ada Lovelace", "knows", "Nobody Yet"), relation("a", "b", "c")]}),
    ("read_graph", {}),
    ("delete_entities", {"entityNames": ["Analytical Engine", "Nobody"]}),
    ("read_graph", {}),
    ("create_entities", {"entities": [entity("Analytical Engine", "machine", "rebuilt")]}),
    ("read_graph", {}),
    ("delete_entities", {"entityNames": []}),
]


@pytest.mark.model
async def test_the_nine_tools_answer_as_the_reference_server_does_call_by_call(reference_server, tmp_path):
    async with client(reference_server, {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}) as session:
        reference = await answers(session, SCRIPT)
        reference_tools = {t.name: t for t in (await session.list_tools()).tools}
    async with client(memlens_command(tmp_path / "memlens.db", "ada")) as session:
        ours = await answers(session, SCRIPT)
        our_tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(GRAPH_TOOLS) == set(reference_tools) <= set(our_tools)
    for name in GRAPH_TOOLS:
        assert our_tools[name].inputSchema["required"] == reference_tools[name].inputSchema.get("required", []), name
        assert set(our_tools[name].inputSchema["properties"]) == set(reference_tools[name].inputSchema["properties"]), name
    for (tool, arguments), theirs, mine in zip(SCRIPT, reference, ours, strict=True):
        assert mine[0] == theirs[0], (tool, arguments, theirs, mine)
        if tool == "search_nodes":
            # The reference's substring matches come first, in its order; memlens may add close ones.
            assert mine[2]["entities"][: len(theirs[2]["entities"])] == theirs[2]["entities"], (arguments, theirs, mine)
            assert all(r in mine[2]["relations"] for r in theirs[2]["relations"])
        else:
            assert mine[1:] == theirs[1:], (tool, arguments, theirs, mine)
    # The reference file, imported, is the graph memlens holds.
    store_path = tmp_path / "imported.db"
    with MemoryStore.open(store_path, embedder=FakeEmbedder()) as store:
        import_loomflow_sqlite(store, read_mcp_memory(tmp_path / "memory.jsonl", user_id="ada"))
        assert KnowledgeGraph(store, user_id="ada").read_graph() == reference[-2][2]
    # And opened where it lives, it is the same graph, as the anonymous tenant (the file names no user).
    before = (tmp_path / "memory.jsonl").read_bytes()
    with store_open(f"mcp-memory:{tmp_path / 'memory.jsonl'}", embedder=FakeEmbedder()) as view:
        assert KnowledgeGraph(view, user_id=None).read_graph() == reference[-2][2]
    assert (tmp_path / "memory.jsonl").read_bytes() == before


@pytest.mark.model
async def test_a_client_of_one_tenant_reaches_no_other(tmp_path):
    db = tmp_path / "shared.db"
    async with client(memlens_command(db, "alice")) as alice:
        await alice.call_tool("create_entities", {"entities": [entity("diagnosis", "secret", "alice has gout")]})
        await alice.call_tool("remember", {"input": "my pin is 4321"})
    async with client(memlens_command(db, "bob")) as bob:
        # A user id in the arguments is not a tool's argument: it is ignored, never obeyed.
        for tool, arguments in [
            ("read_graph", {}),
            ("read_graph", {"user_id": "alice"}),
            ("search_nodes", {"query": "gout"}),
            ("open_nodes", {"names": ["diagnosis"]}),
            ("recall", {"query": "pin 4321"}),
            ("recall", {"query": "gout", "kind": "all"}),
        ]:
            result = await bob.call_tool(tool, arguments)
            assert "gout" not in result.content[0].text and "4321" not in result.content[0].text, (tool, result)
        preview = await bob.call_tool("forget_preview", {})
        assert preview.structuredContent["erased"] is False and not any(preview.structuredContent["would_erase"].values())
        await bob.call_tool("delete_entities", {"entityNames": ["diagnosis"]})
    with MemoryStore.open(db, check_model=False) as store:
        assert KnowledgeGraph(store, user_id="alice").open_nodes(["diagnosis"])["entities"][0]["observations"] == ["alice has gout"]
        assert store.tenant_names() == ["alice"]  # bob's calls wrote nothing, not even a tenant


@pytest.mark.model
async def test_with_trace_every_recall_the_client_makes_is_kept_under_its_tenant(tmp_path):
    db = tmp_path / "traced.db"
    async with client([*memlens_command(db, "alice"), "--trace"]) as alice:
        await alice.call_tool("create_entities", {"entities": [entity("porto", "city", "alice moved to Porto")]})
        await alice.call_tool("recall", {"query": "where did I move"})
        await alice.call_tool("search_nodes", {"query": "city by the sea"})
    async with client(memlens_command(db, "bob")) as bob:  # without --trace nor MEMLENS_TRACE: not kept
        await bob.call_tool("recall", {"query": "anything"})
    with MemoryStore.open(db, check_model=False, embedder=None) as store:
        kept = store.recall_traces(user_id="alice")
        assert [(t.call, t.query, t.label) for t in kept] == [
            ("search_keys", "city by the sea", "mcp-memory"),
            ("recall", "where did I move", "mcp"),
        ]
        assert store.recall_traces(user_id="bob") == []


@pytest.mark.model
def test_search_adds_what_is_close_in_meaning_and_leaves_out_what_is_not(tmp_path):
    with MemoryStore.open(tmp_path / "meaning.db") as store:
        graph = KnowledgeGraph(store, user_id="u")
        graph.create_entities(
            [
                entity("Tom", "person", "owns two cats", "works as a nurse"),
                entity("Acme", "company", "makes anvils"),
                entity("Lisbon", "city", "capital of Portugal"),
                entity("Rex", "dog", "barks at the mailman"),
                entity("Quarterly report", "document", "due in March"),
                entity("Maria", "person", "is allergic to peanuts"),
            ]
        )
        for query, wanted in {
            "blacksmith tools": ["Acme"],  # no word in common: meaning alone
            "deadline": ["Quarterly report"],
            "food allergy": ["Maria"],
            "Portuguese city": ["Lisbon"],
        }.items():
            assert [e["name"] for e in graph.search_nodes(query)["entities"]] == wanted, query
        assert {"Rex", "Tom"} <= {e["name"] for e in graph.search_nodes("pets")["entities"]}


# --- in one process, with the fast fake embedder -----------------------------------------------


@pytest.fixture
def graph(tmp_path):
    with MemoryStore.open(tmp_path / "kg.db", embedder=FakeEmbedder()) as store:
        yield KnowledgeGraph(store, user_id="u")


def test_bad_input_is_refused_with_a_typed_error_and_changes_nothing(graph):
    graph.create_entities([entity("a", "t", "first")])
    before = graph.read_graph()
    for call in (
        lambda: graph.create_entities([entity("b", "t"), {"name": "c", "entityType": "t", "observations": "not a list"}]),
        lambda: graph.create_entities([entity("", "t")]),
        lambda: graph.create_entities([entity("x" * 600, "t")]),
        lambda: graph.create_relations([relation("a", "r", "b"), {"from": "a", "to": 3, "relationType": "r"}]),
        lambda: graph.add_observations([{"entityName": "a", "contents": ["new"]}, {"entityName": "missing", "contents": ["x"]}]),
        lambda: graph.delete_entities("a"),
        lambda: graph.search_nodes(None),
    ):
        with pytest.raises(InvalidInputError):
            call()
        assert graph.read_graph() == before


def test_a_name_given_twice_in_one_call_is_one_node(graph):
    assert graph.create_entities([entity("a", "t", "1"), entity("a", "t", "2")]) == [entity("a", "t", "1")]
    assert graph.create_relations([relation("a", "r", "a")] * 2) == [relation("a", "r", "a")]
    assert graph.read_graph() == {"entities": [entity("a", "t", "1")], "relations": [relation("a", "r", "a")]}


def test_search_adds_a_word_in_another_form_after_the_references_matches(graph):
    graph.create_entities(
        [entity("Tom", "person", "runs every morning"), entity("Ann", "person", "was running late"), entity("Bob", "person", "reads")]
    )
    found = [e["name"] for e in graph.search_nodes("running")["entities"]]
    assert found[0] == "Ann" and "Tom" in found and "Bob" not in found  # "runs" and "running" share a stem
    assert [e["name"] for e in graph.search_nodes("running", semantic=0)["entities"]] == ["Ann"]


def test_the_graph_is_session_keys_of_its_tenant_exported_and_erased_to_the_last_byte(tmp_path):
    path = tmp_path / "kg.db"
    with MemoryStore.open(path, embedder=FakeEmbedder()) as store:
        KnowledgeGraph(store, user_id="eve").create_entities([entity("eve", "person", "allergic to penicillin-zq7")])
        KnowledgeGraph(store, user_id="sam").create_entities([entity("sam", "person", "plays chess-k2v")])
        keys = store.session(GRAPH_SESSION, user_id="eve").list_keys()
        assert keys == ["entity:eve"]
        assert "penicillin-zq7" in json.dumps(store.export(user_id="eve"), default=str)
        receipt = store.forget(user_id="eve")
        assert receipt.counts["kv_entries"] == 1
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("kg.db"))
    assert b"penicillin-zq7" not in data and b"chess-k2v" in data


def test_a_reference_file_imports_in_its_order_and_a_hostile_one_is_refused_whole(tmp_path):
    good = tmp_path / "memory.jsonl"
    lines = [
        {"type": "entity", "name": "b", "entityType": "t", "observations": ["two"]},
        {"type": "entity", "name": "a", "entityType": "t", "observations": ["one"]},
        {"type": "relation", "from": "a", "to": "b", "relationType": "knows"},
        {"type": "something else"},
    ]
    good.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    before = good.read_bytes()
    with MemoryStore.open(tmp_path / "s.db", embedder=FakeEmbedder()) as store:
        import_loomflow_sqlite(store, read_mcp_memory(good, user_id="kim"))
        assert KnowledgeGraph(store, user_id="kim").read_graph() == {
            "entities": [entity("b", "t", "two"), entity("a", "t", "one")],
            "relations": [relation("a", "knows", "b")],
        }
        assert good.read_bytes() == before
        for name, body in {
            "torn.jsonl": json.dumps(lines[0]) + "\n{not json",
            "shape.jsonl": json.dumps({"type": "entity", "name": "x", "entityType": "t", "observations": [1]}),
            "array.jsonl": "[1, 2]",
            "deep.jsonl": "[" * 100_000 + "]" * 100_000,
        }.items():
            (tmp_path / name).write_text(body, encoding="utf-8")
            with pytest.raises(ImportValidationError, match=name):
                read_mcp_memory(tmp_path / name, user_id="kim")
        assert store.tenant_names() == ["kim"]


def test_a_reference_file_is_shown_where_it_lives_follows_its_server_and_is_never_changed(tmp_path):
    path = tmp_path / "memory.jsonl"

    def write(*entities: dict) -> None:  # as the reference server writes: the whole file at once
        path.write_text("\n".join(json.dumps({"type": "entity", **e}) for e in entities), encoding="utf-8")

    write(entity("a", "t", "first"))
    with store_open(f"mcp-memory:{path}", embedder=FakeEmbedder()) as view:
        assert view.read_only and not view.erases_in_place and "delete_entities" in view.read_only_reason
        graph = KnowledgeGraph(view, user_id=None)
        assert graph.read_graph()["entities"] == [entity("a", "t", "first")]
        seen = view.data_version()
        write(entity("a", "t", "first"), entity("b", "t", "second"))
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
        assert view.data_version() != seen
        assert [e["name"] for e in graph.read_graph()["entities"]] == ["a", "b"]
        assert [e["name"] for e in graph.search_nodes("second")["entities"]] == ["b"]
        with pytest.raises(ReadOnlyStoreError):
            graph.create_entities([entity("c", "t")])
        written = path.read_bytes()
    assert path.read_bytes() == written
    done = run_cli("forget", "--db", f"mcp-memory:{path}", "--anonymous", "--yes")
    assert done.returncode != 0 and "delete_entities" in done.stderr and path.read_bytes() == written


def test_the_command_line_imports_a_reference_file_into_the_named_tenant(tmp_path):
    source = tmp_path / "memory.jsonl"
    source.write_text(json.dumps({"type": "entity", "name": "n", "entityType": "t", "observations": ["o"]}) + "\n", encoding="utf-8")
    done = run_cli("import", "--db", tmp_path / "s.db", "--create", "--from", "mcp-memory", source, "--as-user", "lee")
    assert done.returncode == 0, done.stderr
    assert "MCP memory server" in done.stdout and "lee" in done.stdout
    with MemoryStore.open(tmp_path / "s.db", embedder=FakeEmbedder()) as store:
        assert KnowledgeGraph(store, user_id="lee").read_graph()["entities"] == [entity("n", "t", "o")]


async def test_memlens_own_tools_over_the_protocol_and_a_preview_that_erases_nothing(tmp_path):
    with MemoryStore.open(tmp_path / "own.db", embedder=FakeEmbedder()) as store:
        server = build_server(ToolHandlers(store, "ivy"))
        async with create_connected_server_and_client_session(server) as session:
            await session.call_tool("remember", {"input": "I moved to Lisbon", "output": "noted"})
            fact = (await session.call_tool("add_fact", {"subject": "ivy", "predicate": "lives in", "object": "Lisbon"})).structuredContent
            await session.call_tool("update_block", {"name": "persona", "content": "likes brevity"})
            hits = (await session.call_tool("recall", {"query": "Lisbon", "kind": "all"})).structuredContent["hits"]
            assert {h["kind"] for h in hits} >= {"episode", "fact"}
            episode_id = next(h["id"] for h in hits if h["kind"] == "episode")
            why = (
                await session.call_tool("explain", {"query": "Lisbon", "memory_id": episode_id, "session_id": "elsewhere"})
            ).structuredContent
            assert why["returned"] is False and [c["cause"] for c in why["causes"]] == ["session"]
            preview = (await session.call_tool("forget_preview", {})).structuredContent
            assert preview["erased"] is False and preview["would_erase"]["episodes"] == 1
            ended = await session.call_tool("end_fact", {"id": fact["fact"]["id"]})
            assert ended.structuredContent["fact"]["valid_until"] is not None
            unknown = await session.call_tool("end_fact", {"id": "nope"})
            assert unknown.isError and "nope" in unknown.content[0].text
            assert (await session.call_tool("get_block", {"name": "persona"})).structuredContent["block"]["content"] == "likes brevity"
            assert (await session.call_tool("no_such_tool", {})).isError
            await session.call_tool("create_entities", {"entities": [entity("ivy", "person", "moved to Lisbon")]})
            (resource,) = (await session.list_resources()).resources
            assert str(resource.uri) == "memory://knowledge-graph" and resource.mimeType == "application/json"
            (contents,) = (await session.read_resource(resource.uri)).contents
            assert json.loads(contents.text) == KnowledgeGraph(store, user_id="ivy").read_graph() != {"entities": [], "relations": []}
        assert store.tenant_names() == ["ivy"] and len(store.episodes(user_id="ivy").items) == 1
