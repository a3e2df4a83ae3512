"""`memlens mcp`: a Model Context Protocol server on stdio, the memory of any MCP agent.

It is bound to one store and one tenant, both given on its command line: no tool takes a user
id, so a client can reach no other tenant. It offers

- the reference memory server's nine tools (``@modelcontextprotocol/server-memory``) under the
  same names, argument shapes and answers, so a client configured for it switches by changing
  the command; its knowledge graph is kept as :mod:`store.compat.knowledge_graph` keeps it, and
  ``search_nodes`` adds hybrid matches to the reference's substring ones;
- memlens's own: ``remember``, ``recall`` and ``explain`` (why a memory did not come back), ``add_fact``, ``end_fact`` and
  ``facts``, ``get_block`` and ``update_block``, and ``forget_preview``, which counts what an
  erasure of the tenant would take and erases nothing: erasing stays a person's act, in the
  inspector or with ``memlens forget``.

The graph is also the resource ``memory://knowledge-graph``, as the reference serves it (to read;
the reference's change notifications to subscribers are not offered).

A tool's failure (bad input, an unknown entity, a busy store) is answered as an error result
with the store's message; the server goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

GRAPH_TOOLS = (
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
)

GRAPH_RESOURCE = "memory://knowledge-graph"
"""The whole graph as a resource, at the reference server's address (read; not subscribable)."""

# The reference server's tools whose text is one field of their structured answer.
ANSWERED_BY = {
    "create_entities": "entities",
    "create_relations": "relations",
    "add_observations": "results",
    "delete_entities": "message",
    "delete_observations": "message",
    "delete_relations": "message",
}

_TEXT = {"type": "string"}
_TEXTS = {"type": "array", "items": _TEXT}
_ENTITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The name of the entity"},
        "entityType": {"type": "string", "description": "The type of the entity"},
        "observations": {"type": "array", "items": _TEXT, "description": "An array of observation contents associated with the entity"},
    },
    "required": ["name", "entityType", "observations"],
}
_RELATION = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "description": "The name of the entity where the relation starts"},
        "to": {"type": "string", "description": "The name of the entity where the relation ends"},
        "relationType": {"type": "string", "description": "The type of the relation"},
    },
    "required": ["from", "to", "relationType"],
}
_GRAPH = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": _ENTITY}, "relations": {"type": "array", "items": _RELATION}},
}
_DONE = {
    "type": "object",
    "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}},
    "required": ["success", "message"],
}


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required}


# name -> (description, input schema, output schema or None, read only)
TOOLS: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None, bool]] = {
    "create_entities": (
        "Create multiple new entities in the knowledge graph",
        _schema({"entities": {"type": "array", "items": _ENTITY}}),
        _schema({"entities": {"type": "array", "items": _ENTITY}}),
        False,
    ),
    "create_relations": (
        "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
        _schema({"relations": {"type": "array", "items": _RELATION}}),
        _schema({"relations": {"type": "array", "items": _RELATION}}),
        False,
    ),
    "add_observations": (
        "Add new observations to existing entities in the knowledge graph",
        _schema(
            {
                "observations": {
                    "type": "array",
                    "items": _schema(
                        {
                            "entityName": {"type": "string", "description": "The name of the entity to add the observations to"},
                            "contents": {"type": "array", "items": _TEXT, "description": "An array of observation contents to add"},
                        }
                    ),
                }
            }
        ),
        _schema({"results": {"type": "array", "items": _schema({"entityName": _TEXT, "addedObservations": _TEXTS})}}),
        False,
    ),
    "delete_entities": (
        "Delete multiple entities and their associated relations from the knowledge graph",
        _schema({"entityNames": {"type": "array", "items": _TEXT, "description": "An array of entity names to delete"}}),
        _DONE,
        False,
    ),
    "delete_observations": (
        "Delete specific observations from entities in the knowledge graph",
        _schema(
            {
                "deletions": {
                    "type": "array",
                    "items": _schema(
                        {
                            "entityName": {"type": "string", "description": "The name of the entity containing the observations"},
                            "observations": {"type": "array", "items": _TEXT, "description": "An array of observations to delete"},
                        }
                    ),
                }
            }
        ),
        _DONE,
        False,
    ),
    "delete_relations": (
        "Delete multiple relations from the knowledge graph",
        _schema({"relations": {"type": "array", "items": _RELATION, "description": "An array of relations to delete"}}),
        _DONE,
        False,
    ),
    "read_graph": ("Read the entire knowledge graph", _schema({}), _GRAPH, True),
    "search_nodes": (
        "Search for nodes in the knowledge graph based on a query: the nodes whose name, type or an observation "
        "holds it, then the closest in meaning (memlens's hybrid search)",
        _schema(
            {"query": {"type": "string", "description": "The search query to match against entity names, types, and observation content"}}
        ),
        _GRAPH,
        True,
    ),
    "open_nodes": (
        "Open specific nodes in the knowledge graph by their names",
        _schema({"names": {"type": "array", "items": _TEXT, "description": "An array of entity names to retrieve"}}),
        _GRAPH,
        True,
    ),
    "remember": (
        "Keep one exchange (what the user said and what the agent answered) as an episode of memory",
        _schema({"input": _TEXT, "output": _TEXT, "session_id": _TEXT}, ["input"]),
        None,
        False,
    ),
    "recall": (
        "Search memory, best first (hybrid: meaning and words). kind: episodic, facts, working or all",
        _schema(
            {
                "query": _TEXT,
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "kind": {"type": "string", "enum": ["episodic", "facts", "working", "all"]},
                "session_id": _TEXT,
            },
            ["query"],
        ),
        None,
        True,
    ),
    "explain": (
        "Why a memory (an episode's or fact's id) did or did not come back from a recall with these arguments: "
        "its rank, its scores against the last hit returned, the query words it lacks, and each filter that left it out",
        _schema(
            {
                "query": _TEXT,
                "memory_id": _TEXT,
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "kind": {"type": "string", "enum": ["episodic", "facts", "all"]},
                "session_id": _TEXT,
            },
            ["query", "memory_id"],
        ),
        None,
        True,
    ),
    "add_fact": (
        "Record a fact (subject, predicate, object); it supersedes the open fact of the same subject and predicate, "
        "which stays in the history",
        _schema({"subject": _TEXT, "predicate": _TEXT, "object": _TEXT}),
        None,
        False,
    ),
    "end_fact": (
        "Stop believing a fact (by its id), with nothing in its place; it stays in the history",
        _schema({"id": _TEXT}),
        None,
        False,
    ),
    "facts": ("The facts believed now, optionally of one subject", _schema({"subject": _TEXT}, []), None, True),
    "get_block": ("Read a working-memory block by its name", _schema({"name": _TEXT}), None, True),
    "update_block": (
        "Write a working-memory block (its earlier contents stay in its history)",
        _schema({"name": _TEXT, "content": _TEXT}),
        None,
        False,
    ),
    "forget_preview": (
        "Count what erasing this memory would take, per tier. It erases nothing: erasure is done by a person, "
        "with `memlens forget` or in the memlens inspector",
        _schema({}),
        None,
        True,
    ),
}


class ToolHandlers:
    """What each tool does, on one tenant of one store; each returns the structured answer."""

    def __init__(self, store: Any, user_id: str | None) -> None:
        from store.compat.knowledge_graph import KnowledgeGraph

        self.store = store
        self.user_id = user_id
        self.graph = KnowledgeGraph(store, user_id=user_id)

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        handler: Callable[[dict[str, Any]], dict[str, Any]] = getattr(self, "tool_" + name)
        return handler(arguments)

    # --- the reference server's nine ------------------------------------------------------

    def tool_create_entities(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"entities": self.graph.create_entities(a["entities"])}

    def tool_create_relations(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"relations": self.graph.create_relations(a["relations"])}

    def tool_add_observations(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"results": self.graph.add_observations(a["observations"])}

    def tool_delete_entities(self, a: dict[str, Any]) -> dict[str, Any]:
        self.graph.delete_entities(a["entityNames"])
        return {"success": True, "message": "Entities deleted successfully"}

    def tool_delete_observations(self, a: dict[str, Any]) -> dict[str, Any]:
        self.graph.delete_observations(a["deletions"])
        return {"success": True, "message": "Observations deleted successfully"}

    def tool_delete_relations(self, a: dict[str, Any]) -> dict[str, Any]:
        self.graph.delete_relations(a["relations"])
        return {"success": True, "message": "Relations deleted successfully"}

    def tool_read_graph(self, a: dict[str, Any]) -> dict[str, Any]:
        return self.graph.read_graph()

    def tool_search_nodes(self, a: dict[str, Any]) -> dict[str, Any]:
        return self.graph.search_nodes(a["query"])

    def tool_open_nodes(self, a: dict[str, Any]) -> dict[str, Any]:
        return self.graph.open_nodes(a["names"])

    # --- memlens's own ----------------------------------------------------------------------

    def tool_remember(self, a: dict[str, Any]) -> dict[str, Any]:
        episode = self.store.remember(a["input"], a.get("output", ""), user_id=self.user_id, session_id=a.get("session_id"))
        return {"id": episode.id, "occurred_at": episode.occurred_at.isoformat()}

    def tool_recall(self, a: dict[str, Any]) -> dict[str, Any]:
        hits = self.store.recall(
            a["query"],
            user_id=self.user_id,
            limit=a.get("limit", 5),
            kind=a.get("kind", "episodic"),
            session_id=a.get("session_id"),
            label="mcp",
        )
        return {
            "hits": [
                {
                    "kind": h.kind,
                    "id": h.id,
                    "text": h.text,
                    "session_id": h.session_id,
                    "occurred_at": None if h.occurred_at is None else h.occurred_at.isoformat(),
                    "score": round(h.scores.score, 4),
                }
                for h in hits
            ]
        }

    def tool_explain(self, a: dict[str, Any]) -> dict[str, Any]:
        answer = self.store.explain(
            a["query"],
            a["memory_id"],
            user_id=self.user_id,
            limit=a.get("limit", 5),
            kind=a.get("kind", "episodic"),
            session_id=a.get("session_id"),
        )
        return answer.model_dump(mode="json")

    def tool_add_fact(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"fact": self.store.add_fact(a["subject"], a["predicate"], a["object"], user_id=self.user_id).model_dump(mode="json")}

    def tool_end_fact(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"fact": self.store.end_fact(a["id"], user_id=self.user_id).model_dump(mode="json")}

    def tool_facts(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"facts": [f.model_dump(mode="json") for f in self.store.facts(user_id=self.user_id, subject=a.get("subject"))]}

    def tool_get_block(self, a: dict[str, Any]) -> dict[str, Any]:
        block = self.store.get_block(a["name"], user_id=self.user_id)
        return {"block": None if block is None else block.model_dump(mode="json")}

    def tool_update_block(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"block": self.store.update_block(a["name"], a["content"], user_id=self.user_id).model_dump(mode="json")}

    def tool_forget_preview(self, a: dict[str, Any]) -> dict[str, Any]:
        receipt = self.store.forget(user_id=self.user_id, dry_run=True, missing_ok=True, actor="mcp-preview")
        return {
            "would_erase": receipt.counts,
            "erased": False,
            "how": "a person erases with `memlens forget --db STORE --user USER` or the inspector's forget key",
        }


def build_server(handlers: ToolHandlers):
    """The MCP server (the official SDK's low-level server: the tools' schemas and answers are
    the reference server's own, which its decorators would rewrite)."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from pydantic import AnyUrl

    from store.errors import MemlensError

    server: Server = Server("memlens")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(
                name=name,
                description=description,
                inputSchema=schema,
                outputSchema=output,
                annotations=types.ToolAnnotations(readOnlyHint=read_only, destructiveHint=name.startswith("delete_"), openWorldHint=False),
            )
            for name, (description, schema, output, read_only) in TOOLS.items()
        ]

    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        return [
            types.Resource(
                name="knowledge-graph",
                title="Knowledge Graph",
                uri=AnyUrl(GRAPH_RESOURCE),
                description="The full knowledge graph with all entities and relations",
                mimeType="application/json",
            )
        ]

    @server.read_resource()
    async def read_resource(uri: AnyUrl) -> list[ReadResourceContents]:
        if str(uri) != GRAPH_RESOURCE:
            raise ValueError(f"Unknown resource: {uri}")
        graph = await anyio.to_thread.run_sync(handlers.graph.read_graph)
        return [ReadResourceContents(json.dumps(graph, indent=2, ensure_ascii=False), "application/json")]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if name not in TOOLS:
            return _error(types, f"Unknown tool: {name}")
        try:
            # The store blocks; the event loop keeps reading the client meanwhile.
            result = await anyio.to_thread.run_sync(handlers.call, name, arguments)
        except MemlensError as error:
            return _error(types, str(error))
        # The reference's text is the answer's one field where it has one ("Entities deleted
        # successfully", the list of entities made), else the whole of it.
        inner = result[ANSWERED_BY[name]] if name in ANSWERED_BY else result
        text = inner if isinstance(inner, str) else json.dumps(inner, indent=2, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structuredContent=result)

    return server


def _error(types: Any, message: str):
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], isError=True)


def serve_stdio(store: Any, user_id: str | None) -> None:
    """Serve ``user_id``'s memory in ``store`` to one client on stdin and stdout until it leaves."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(ToolHandlers(store, user_id))

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
