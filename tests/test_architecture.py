"""The layout holds by machine check, not by convention.

Import contract (every import counts, ``TYPE_CHECKING`` ones and those inside functions too;
no modules import each other round):
inspector -> store's public API (``store``, ``store.memory``, ``store.aio``) -> services
(``store.recall``, ``store.rights``, ``store.consolidation``) -> tiers / backend -> schema, models, errors, validation,
tenancy, embedding. Nothing imports upwards; ``store`` never imports textual or rich;
``store.compat`` imports only the public API (and its own modules). And no module outside ``store/backend/sqlite/``
knows the store is SQLite.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BASE = {"store.errors", "store.models", "store.validation", "store.tenancy", "store.schema", "store.embedding", "store.locations"}
PUBLIC = {"store", "store.memory", "store.aio", "store.aio_methods", "store.opening", "store.views"}


def layer(module: str) -> int:
    """0 base, 1 tiers and backend, 2 services, 3 the public API, 4 the inspector."""
    if module.startswith("inspector"):
        return 4
    # store.testing is the tests' door below the public API, so it stands beside it.
    if (
        module in PUBLIC
        or module in ("store.demo", "store.compat", "store.testing")
        or module.startswith(("store.compat.", "store.demo_data"))
    ):
        return 3
    if module.startswith(("store.recall", "store.rights")) or module == "store.consolidation":
        return 2
    if module.startswith(("store.tiers", "store.backend")):
        return 1
    return 0


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the file, wherever it stands."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if node.module:
                found.append((node.lineno, base))
            # `from . import x` imports the module x when there is one.
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if (root / Path(*sub.split("."))).with_suffix(".py").exists() or (root / Path(*sub.split(".")) / "__init__.py").exists():
                    found.append((node.lineno, sub))
    return found


def violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.parts[len(root.parts)] not in ("store", "inspector"):
            continue
        me = module_name(path, root)
        for line, target in imports(path, root):
            where = f"{path.relative_to(root)}:{line} imports {target}"
            if me.startswith("store") and target.split(".")[0] in ("textual", "rich"):
                found.append(f"{where}: store is headless")
            if not target.startswith("store"):
                continue
            if layer(target) > layer(me) or (me.startswith("store.") and target == "store"):
                found.append(f"{where}: an upward import (layer {layer(me)} -> {layer(target)})")
            if me.startswith("store.recall") and target.startswith("store.rights"):
                found.append(f"{where}: recall must not depend on data rights")
            if me.startswith("store.backend") and target.startswith("store.tiers"):
                found.append(f"{where}: the tiers build on the backend, not the other way")
            # store.locations: how an address is told apart and shown without its password.
            compat_ok = PUBLIC | {"store.errors", "store.models", "store.locations"}
            if me.startswith("store.compat") and target not in compat_ok and not target.startswith("store.compat"):
                found.append(f"{where}: compat adapters use only the public API (and each other)")
            # The inspector uses the public API, plus the tier registry (names and labels for its columns)
            # the loomflow and LangGraph importers, shipped public modules (`memlens import --from
            # loomflow-sqlite|langgraph-sqlite|chroma`),
            # and store.glance (the tenant names for its first frame, without SQLAlchemy's import);
            # the in-place erasure and the sweep of leftover copies, shipped public modules
            # (`memlens forget --db loomflow-sqlite:F`, every command's start).
            allowed = (
                PUBLIC
                | BASE
                | {"store.demo", "store.tiers.registry", "store.compat.loomflow_sqlite", "store.compat.chroma_source", "store.glance"}
                | {"store.compat.loomflow_erase", "store.compat.private_copies", "store.compat.langgraph_sqlite"}
                | {"store.compat.langgraph_erase", "store.compat.mem0_source", "store.compat.langgraph_postgres"}
                | {"store.compat.erasure_journal", "store.compat.loomflow_view", "store.compat.knowledge_graph"}
            )
            if me.startswith("inspector") and target not in allowed:
                found.append(f"{where}: the inspector uses the store's public API")
    return found


def test_the_import_contract_holds():
    assert violations(ROOT) == []


def import_cycles(root: Path) -> list[list[str]]:
    """The sets of store and inspector modules that import each other round (every import counts,
    those inside functions and behind ``TYPE_CHECKING`` too), each sorted."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if path.parts[len(root.parts)] not in ("store", "inspector"):
            continue
        graph[module_name(path, root)] = {target for _, target in imports(path, root) if target.split(".")[0] in ("store", "inspector")}
    # Tarjan's strongly connected components, iteratively (the graph is a few hundred modules).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: list[str] = []
    cycles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        on_stack.append(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    on_stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = on_stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_no_modules_import_each_other_round():
    assert import_cycles(ROOT) == []


def test_the_cycle_check_sees_a_cycle_through_an_import_inside_a_function(tmp_path):
    (tmp_path / "store" / "compat").mkdir(parents=True)
    (tmp_path / "store" / "__init__.py").write_text("")
    (tmp_path / "store" / "compat" / "__init__.py").write_text("")
    (tmp_path / "store" / "memory.py").write_text("def open():\n    from .compat.view import View\n")
    (tmp_path / "store" / "compat" / "view.py").write_text("from ..memory import open\n")
    (tmp_path / "store" / "compat" / "other.py").write_text("from ..memory import open\n")
    assert import_cycles(tmp_path) == [["store.compat.view", "store.memory"]]


def test_the_contract_catches_the_backend_reaching_into_a_tier(tmp_path):
    (tmp_path / "store" / "backend").mkdir(parents=True)
    (tmp_path / "store" / "tiers").mkdir(parents=True)
    for package in ("store", "store/backend", "store/tiers"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "store" / "tiers" / "episodes.py").write_text("")
    (tmp_path / "store" / "backend" / "keyword.py").write_text("from ..tiers.episodes import filtered\n")
    assert any("keyword.py:1 imports store.tiers.episodes: the tiers build on the backend" in v for v in violations(tmp_path))


def test_the_contract_catches_a_back_import_hidden_behind_type_checking(tmp_path):
    (tmp_path / "store" / "recall").mkdir(parents=True)
    (tmp_path / "store" / "__init__.py").write_text("")
    (tmp_path / "store" / "memory.py").write_text("from .recall import hits\n")
    (tmp_path / "store" / "recall" / "__init__.py").write_text("")
    (tmp_path / "store" / "recall" / "hits.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..memory import MemoryStore\ndef f():\n    import textual\n"
    )
    found = violations(tmp_path)
    assert any("hits.py:3 imports store.memory: an upward import" in v for v in found)
    assert any("imports textual: store is headless" in v for v in found)
    assert not any("memory.py" in v for v in found)


# Words that mean a module knows its engine is SQLite, in code (imports, names, string literals);
# docstrings and comments may mention SQLite to explain a choice.
ENGINE = re.compile(r"sqlite|pragma|fts5|rowid", re.IGNORECASE)
ALLOWED = {
    # The registry of engines: it maps the name "sqlite" to store.backend.sqlite.
    "store/backend/__init__.py",
    # The address rule (a path or an sqlite:/// URL is a file, anything else a server), with the
    # standard library alone: the inspector asks it before its first frame, the registry after.
    "store/locations.py",
    # A type variant: SQLite keeps INTEGER (rowid alias) where other engines get BIGINT.
    "store/schema.py",
    # The demo checks a file's header read-only before replacing it (SQLite's own header, read
    # with sqlite3); moving that check behind the backend is open work.
    "store/demo.py",
    # Conversation text, not engine knowledge: the compact demo's developer asks about SQLite
    # (frozen, since the snapshot baselines are built on it).
    "store/demo_data/compact.py",
    # Read a file loomflow wrote (show it live, erase from it in place): SQLite is that file's format, not memlens's backend.
    "store/compat/loomflow_sqlite.py",
    "store/compat/loomflow_view.py",
    "store/compat/loomflow_erase.py",
    # Reads a loomflow Chroma directory through the loomflow file importer's record shape.
    "store/compat/chroma_source.py",
    # Read a file LangGraph's SqliteStore wrote; the adapter names that reader and LangGraph's SQLite store.
    "store/compat/langgraph_sqlite.py",
    "store/compat/langgraph_erase.py",
    "store/compat/langgraph.py",
    # Reads LangGraph's PostgresStore into the SqliteStore reader's record shape.
    "store/compat/langgraph_postgres.py",
    # Reads mem0's memory through the loomflow file importer's record shape (and mem0's SQLite history).
    "store/compat/mem0_source.py",
    # Reads an MCP memory server's file into the loomflow file importer's record shape.
    "store/compat/knowledge_graph.py",
    # The tenant names with the standard library's sqlite3 alone, for the inspector's first frame:
    # anything under store/backend/ imports SQLAlchemy (~0.4 s), which this module exists to avoid.
    "store/glance.py",
}


POSTGRES = re.compile(
    r"psycopg|pgvector|pgserver|tsvector|tsquery|\bpg_[a-z]|dialects\.postgresql|\bjsonb\b|on conflict|advisory_", re.IGNORECASE
)
POSTGRES_ALLOWED = {
    # The registry of engines: it maps "postgresql" URLs to store.backend.postgres.
    "store/backend/__init__.py",
    # The address rule: anything but a path or an sqlite:/// URL is a server.
    "store/locations.py",
    # A type variant: the vector column is pgvector's type on PostgreSQL.
    "store/schema.py",
    # Reads a database LangGraph's PostgresStore wrote (psycopg, its jsonb): PostgreSQL is that
    # database's engine, not memlens's backend.
    "store/compat/langgraph_postgres.py",
}


def engine_words(path: Path, engine: re.Pattern[str] = ENGINE) -> list[str]:
    tree = ast.parse(path.read_text())
    # A string standing alone as a statement documents (a module, class, function or attribute).
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        texts = []
        if isinstance(node, ast.Import):
            texts = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            texts = [node.module or "", *(a.name for a in node.names)]
        elif isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts = [node.value]
        found += [f"{path}:{getattr(node, 'lineno', '?')}: {t[:60]!r}" for t in texts if engine.search(t)]
    return found


ENGINES = {
    "sqlite": (ENGINE, "store/backend/sqlite/", ALLOWED),
    "postgres": (POSTGRES, "store/backend/postgres/", POSTGRES_ALLOWED),
}


@pytest.mark.parametrize("engine", ENGINES)
def test_only_each_backend_knows_its_engine(engine):
    words, home, allowed = ENGINES[engine]
    found = []
    for path in sorted((ROOT / "store").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(home) or rel in allowed:
            continue
        found += engine_words(path, words)
    assert found == []


@pytest.mark.parametrize(
    ("engine", "line"),
    [
        ("sqlite", "import sqlite3"),
        ("sqlite", "conn.exec_driver_sql('PRAGMA wal_checkpoint')"),
        ("sqlite", "x = 'episodes_fts5'"),
        ("sqlite", "literal_column('vectors.rowid')"),
        ("sqlite", "from sqlalchemy.dialects.sqlite import insert"),
        ("postgres", "from psycopg import sql"),
        ("postgres", "conn.execute(text('SELECT pg_advisory_xact_lock(1)'))"),
        ("postgres", "x = \"to_tsvector('simple', text)\""),
        ("postgres", "from sqlalchemy.dialects.postgresql import insert"),
    ],
)
def test_the_engine_check_sees_each_form(tmp_path, engine, line):
    path = tmp_path / "m.py"
    path.write_text(f'"""Docstrings may say SQLite and PostgreSQL."""\n# comments too: PRAGMA, pg_dump\n{line}\n')
    assert engine_words(path, ENGINES[engine][0])
