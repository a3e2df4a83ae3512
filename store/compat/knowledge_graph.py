"""The knowledge graph of the Model Context Protocol's reference memory server
(``@modelcontextprotocol/server-memory``) kept in a memlens tenant.

The reference server keeps entities (a name, a type, a list of observations) and relations (from,
type, to) in one JSONL file. Here each is a session key of one tenant, in the session
``mcp-memory``:

- an entity under the key ``entity:`` plus its name, its value ``{"name", "entityType",
  "observations"}``, searched by its name, type and observations (hybrid: meaning and words);
- a relation under ``relation:`` plus a digest of its three parts (names may be long), its value
  ``{"from", "to", "relationType"}``, found through the entities it joins.

Session keys already are JSON documents under a key with creation times, export, import, erasure,
checkpoints and a place in the inspector, which is all a graph node needs; a tier of its own would
repeat them. The graph's order is the keys' creation order (a node rewritten keeps its place, one
deleted and made again goes last), as the reference server's file order is.

:class:`KnowledgeGraph` gives the reference server's nine operations with its answers;
``search_nodes`` answers what the reference's substring match finds, in the same order, and then
adds the best hybrid matches it missed (a paraphrase, a word in another form).
:func:`read_mcp_memory` reads a reference server's file (never changing it) for
``memlens import --from mcp-memory``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from .. import SessionMemory
from ..errors import ImportValidationError, InvalidInputError, SourceChangedError, UnrecognizedSourceError
from ..models import KeyValueEntry
from ..views import StoreView
from .loomflow_sqlite import EXPORT_FORMAT, EXPORT_VERSION, LoomflowSource, source_stamp

__all__ = ["GRAPH_SESSION", "KnowledgeGraph", "read_mcp_memory"]

T = TypeVar("T")

GRAPH_SESSION = "mcp-memory"
"""The session of a tenant that holds its knowledge graph."""

ENTITY = "entity:"
RELATION = "relation:"
# A session key holds at most 512 characters; an entity's key is readable, so its name is bounded.
MAX_NAME = 512 - len(ENTITY)
SEMANTIC_EXTRAS = 5
READ_ATTEMPTS = 20
# A search's extra matches must hold a word of the query (in any form) or be this close in
# meaning (cosine, the default model): hybrid search ranks every node, and without a floor a
# graph of a few nodes would answer every query with all of them. Measured on a graph of six
# nodes: the related node of "animals", "hospital job", "blacksmith tools", "deadline" scored
# 0.26-0.34 (an entity's text is its name, type and observations together), unrelated ones at
# most 0.15; 0.4 missed all four.
RELATED = 0.25


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be text, not {type(value).__name__}")
    return value


def _listed(value: Any, field: str, what: str) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{field} must be a list of {what}")
    return list(value)


def _texts(value: Any, field: str) -> list[str]:
    return [_text(v, f"{field}[{i}]") for i, v in enumerate(_listed(value, field, "texts"))]


def _objects(value: Any, field: str) -> list[Mapping[str, Any]]:
    items = _listed(value, field, "objects")
    if not all(isinstance(v, Mapping) for v in items):
        raise InvalidInputError(f"{field} must be a list of objects")
    return items


def _per_entity(value: Any, field: str, texts: str) -> list[tuple[str, list[str]]]:
    """``[{"entityName": ..., texts: [...]}, ...]`` checked, as (name, texts) pairs."""
    return [
        (_text(item.get("entityName"), f"{field}[{i}].entityName"), _texts(item.get(texts), f"{field}[{i}].{texts}"))
        for i, item in enumerate(_objects(value, field))
    ]


def _entity(item: Mapping[str, Any], field: str) -> dict[str, Any]:
    name = _text(item.get("name"), f"{field}.name")
    if not name or len(name) > MAX_NAME:
        raise InvalidInputError(f"{field}.name must be 1 to {MAX_NAME} characters")
    return {
        "name": name,
        "entityType": _text(item.get("entityType"), f"{field}.entityType"),
        "observations": _texts(item.get("observations"), f"{field}.observations"),
    }


def _relation(item: Mapping[str, Any], field: str) -> dict[str, str]:
    return {
        "from": _text(item.get("from"), f"{field}.from"),
        "to": _text(item.get("to"), f"{field}.to"),
        "relationType": _text(item.get("relationType"), f"{field}.relationType"),
    }


def entity_key(name: str) -> str:
    return ENTITY + name


def relation_key(relation: Mapping[str, str]) -> str:
    parts = json.dumps([relation["from"], relation["relationType"], relation["to"]], ensure_ascii=False)
    return RELATION + hashlib.sha256(parts.encode("utf-8")).hexdigest()[:40]


def search_text(entity: Mapping[str, Any]) -> str:
    return "\n".join([entity["name"], entity["entityType"], *entity["observations"]])


def _unseen(items: list[T], key: Callable[[T], str], known: set[str]) -> list[T]:
    """``items`` whose key is neither in ``known`` nor an earlier item's, in order."""
    out = []
    for item in items:
        if key(item) not in known:
            known.add(key(item))
            out.append(item)
    return out


def _graph(entities: list[dict[str, Any]], relations: list[dict[str, str]]) -> dict[str, Any]:
    return {"entities": entities, "relations": relations}


class KnowledgeGraph:
    """The reference memory server's graph operations on one tenant of a memlens store (or, to
    read, of a view: ``store.open("mcp-memory:memory.jsonl")`` shows a reference server's file).

    Each operation reads the graph and then writes key by key, as the reference server reads its
    file and writes it whole: two callers at once can interleave (the reference can lose a
    write). Every argument is checked before anything is written, so bad input changes nothing."""

    def __init__(self, store: StoreView, *, user_id: str | None) -> None:
        self._store = store
        self.user_id = user_id

    @property
    def _session(self) -> SessionMemory:
        return self._store.session(GRAPH_SESSION, user_id=self.user_id)

    def _entries(self) -> list[KeyValueEntry]:
        # Creation order, as the reference server's file order; the key breaks a tie within one
        # microsecond (writes of one call are separate transactions, so one rarely happens).
        epoch = datetime.min.replace(tzinfo=UTC)
        return sorted(self._session.entries(), key=lambda e: (e.created_at or epoch, e.key))

    def _split(self) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        entities: list[dict[str, Any]] = []
        relations: list[dict[str, str]] = []
        for entry in self._entries():
            if entry.key.startswith(ENTITY) and isinstance(entry.value, dict):
                entities.append(_entity(entry.value, entry.key))
            elif entry.key.startswith(RELATION) and isinstance(entry.value, dict):
                relations.append(_relation(entry.value, entry.key))
        return entities, relations

    def _put_entity(self, entity: dict[str, Any]) -> None:
        self._session.set(entity_key(entity["name"]), entity, search_text=search_text(entity))

    def create_entities(self, entities: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Add the entities whose names the graph does not hold; returns those added."""
        wanted = [_entity(e, f"entities[{i}]") for i, e in enumerate(_objects(entities, "entities"))]
        # A name given twice in one call is made once (the reference makes two nodes of one name).
        added = _unseen(wanted, lambda e: e["name"], {e["name"] for e in self._split()[0]})
        for entity in added:
            self._put_entity(entity)
        return added

    def create_relations(self, relations: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
        """Add the relations the graph does not hold (its endpoints need not exist, as in the
        reference); returns those added."""
        wanted = [_relation(r, f"relations[{i}]") for i, r in enumerate(_objects(relations, "relations"))]
        added = _unseen(wanted, relation_key, {relation_key(r) for r in self._split()[1]})  # made once, as a name is
        for relation in added:
            self._session.set(relation_key(relation), relation)
        return added

    def add_observations(self, observations: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Add each entity's new observations; an entity the graph does not hold raises
        :class:`~store.errors.InvalidInputError` (``Entity with name X not found``, the reference's
        words) and nothing is written."""
        asked = _per_entity(observations, "observations", "contents")
        entities = {e["name"]: e for e in self._split()[0]}
        results = []
        for name, contents in asked:
            entity = entities.get(name)
            if entity is None:
                raise InvalidInputError(f"Entity with name {name} not found")
            new = [c for c in contents if c not in entity["observations"]]
            entity["observations"].extend(new)
            results.append({"entityName": name, "addedObservations": new})
        for name in dict.fromkeys(name for name, _ in asked):
            self._put_entity(entities[name])
        return results

    def delete_entities(self, entity_names: Iterable[str]) -> None:
        """Delete the named entities and every relation from or to them (absent names are no error)."""
        names = set(_texts(entity_names, "entityNames"))
        entities, relations = self._split()
        doomed = [entity_key(e["name"]) for e in entities if e["name"] in names]
        doomed += [relation_key(r) for r in relations if r["from"] in names or r["to"] in names]
        self._delete(doomed)

    def delete_observations(self, deletions: Iterable[Mapping[str, Any]]) -> None:
        """Remove the given observations from their entities (absent ones are no error)."""
        asked = _per_entity(deletions, "deletions", "observations")
        entities = {e["name"]: e for e in self._split()[0]}
        changed = []
        for name, gone in asked:
            entity = entities.get(name)
            if entity is not None:
                entity["observations"] = [o for o in entity["observations"] if o not in gone]
                changed.append(name)
        for name in dict.fromkeys(changed):
            self._put_entity(entities[name])

    def delete_relations(self, relations: Iterable[Mapping[str, Any]]) -> None:
        """Delete the given relations (absent ones are no error)."""
        self._delete([relation_key(_relation(r, f"relations[{i}]")) for i, r in enumerate(_objects(relations, "relations"))])

    def _delete(self, keys: list[str]) -> None:
        if keys:
            session = self._session
            for key in keys:
                session.delete(key)

    def read_graph(self) -> dict[str, Any]:
        return _graph(*self._split())

    def open_nodes(self, names: Iterable[str]) -> dict[str, Any]:
        """The named entities, and every relation with at least one end among them."""
        wanted = set(_texts(names, "names"))
        entities, relations = self._split()
        return self._with_relations([e for e in entities if e["name"] in wanted], relations)

    def search_nodes(self, query: str, *, semantic: int = SEMANTIC_EXTRAS) -> dict[str, Any]:
        """The entities whose name, type or an observation holds ``query`` (any case), in the
        graph's order, as the reference finds them; then up to ``semantic`` more that the store's
        hybrid search ranks best for it, if they hold a word of it in any form or are close to
        it in meaning (none when ``semantic`` is 0); and every relation with at
        least one end among them."""
        query = _text(query, "query")
        entities, relations = self._split()
        needle = query.lower()
        found = [
            e
            for e in entities
            if needle in e["name"].lower() or needle in e["entityType"].lower() or any(needle in o.lower() for o in e["observations"])
        ]
        if semantic > 0 and query.strip() and len(found) < len(entities):
            by_key = {entity_key(e["name"]): e for e in entities}
            held = {e["name"] for e in found}
            among = [(GRAPH_SESSION, key) for key, e in by_key.items() if e["name"] not in held]
            hits = self._store.search_keys(query, user_id=self.user_id, among=among, limit=semantic, label="mcp-memory")
            found += [
                by_key[h.entry.key]
                for h in hits
                if h.entry is not None and h.entry.key in by_key and ((h.scores.coverage or 0) > 0 or (h.scores.vector or 0) >= RELATED)
            ]
        return self._with_relations(found, relations)

    @staticmethod
    def _with_relations(entities: list[dict[str, Any]], relations: list[dict[str, str]]) -> dict[str, Any]:
        names = {e["name"] for e in entities}
        return _graph(entities, [r for r in relations if r["from"] in names or r["to"] in names])


def read_mcp_memory(path: str | Path, *, user_id: str | None = None) -> LoomflowSource:
    """Read a reference memory server's JSONL file (never changing it) as the session keys
    :class:`KnowledgeGraph` would hold for ``user_id``: for ``memlens import --from mcp-memory``.
    Lines that are neither an entity nor a relation are skipped, as the reference skips them; a
    line that is not JSON, or an entity or relation of the wrong shape, raises
    :class:`~store.errors.ImportValidationError` naming the line."""
    source = Path(path)
    for _ in range(READ_ATTEMPTS):
        before = source_stamp(source)
        try:
            raw = source.read_bytes()
        except FileNotFoundError:
            raise UnrecognizedSourceError(f"{source}: no such file") from None
        except OSError as error:
            raise UnrecognizedSourceError(f"{source}: cannot be read ({error.strerror})") from None
        if source_stamp(source) == before:
            break
        # The server rewrites the whole file at each change (truncate, then write): read it again.
        time.sleep(0.02)
    else:
        raise SourceChangedError(f"{source} changed during each of {READ_ATTEMPTS} readings; try again once the server is idle")
    try:
        return _graph_source(source, raw, user_id)
    except ImportValidationError:
        if source_stamp(source) != before:  # torn by a write that began after the reading
            raise SourceChangedError(f"{source} changed while it was read; try again") from None
        raise


def _graph_source(source: Path, raw: bytes, user_id: str | None) -> LoomflowSource:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportValidationError(f"{source}: not a reference memory server's file (not UTF-8 text)") from None
    # key -> (value, search text, line): the first line of a name wins, as the reference's own
    # reads find the first; the graph's order is the file's.
    nodes: dict[str, tuple[dict[str, Any], str | None, str]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        here = f"{source.name}:{number}"
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise ImportValidationError(f"{here}: not a JSON line") from None
        if not isinstance(item, dict):
            raise ImportValidationError(f"{here}: not an entity or a relation")
        try:
            if item.get("type") == "entity":
                entity = _entity(item, here)
                nodes.setdefault(entity_key(entity["name"]), (entity, search_text(entity), here))
            elif item.get("type") == "relation":
                relation = _relation(item, here)
                nodes.setdefault(relation_key(relation), (relation, None, here))
        except InvalidInputError as error:
            raise ImportValidationError(str(error)) from None
    if not nodes:
        manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "tenants": [], "counts": {}}
        return LoomflowSource(source, {"records": [], "manifest": manifest}, [], 0, ())
    start = datetime.now(UTC)
    stamp = start.isoformat()
    records: list[dict[str, Any]] = [
        {"type": "session", "user_id": user_id, "session_id": GRAPH_SESSION, "created_at": stamp, "updated_at": stamp}
    ]
    where = [source.name]
    for position, (key, (value, searched, here)) in enumerate(nodes.items()):
        # One microsecond apart: the graph's order is the keys' creation order.
        created = (start + timedelta(microseconds=position)).isoformat()
        records.append(
            {
                "type": "kv",
                "user_id": user_id,
                "session_id": GRAPH_SESSION,
                "key": key,
                "value": value,
                "expires_at": None,
                "updated_at": created,
                "created_at": created,
                "ttl_seconds": None,
                "search_text": searched,
            }
        )
        where.append(here)
    counts = {"sessions": 1, "kv_entries": len(nodes)}
    manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "tenants": [user_id], "counts": counts}
    return LoomflowSource(source, {"records": records, "manifest": manifest}, where, 0, ())
