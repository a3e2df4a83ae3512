"""Tests reach below the public API only through ``store.testing``.

A test that reads ``store._db`` pins how the store is composed today, and breaks when the
composition changes though no behaviour did. So no test names a private attribute, method,
function or class of the ``store`` package; what they need of those, ``store.testing`` hands
them. The scan covers test modules, the benchmarks, and the scripts they run in subprocesses
(string literals that parse as Python). Textual's private names are not the store's and are not counted here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import store

STORE = Path(store.__file__).parent
TESTS = Path(__file__).parent
VENDORED = TESTS / "compat" / "loomflow_upstream"


# Names a compatibility module must define because the library it stands in for uses them:
# public to that library's users, whatever the underscore says.
FOREIGN_API = {"_clear_expired_memory"}  # Arshai's; its documentation tells users to call it


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in FOREIGN_API


def store_private_names() -> set[str]:
    """Every private name the store defines: methods, functions, classes, module globals, and
    attributes set on ``self``/``cls``."""
    names: set[str] = set()
    for path in STORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and _private(node.name):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                if _private(node.attr):
                    names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _private(node.id):
                names.add(node.id)
    return names


def _trees(path: Path) -> list[ast.AST]:
    """The module, and every string in it that is a Python script of more than one line."""
    tree = ast.parse(path.read_text())
    trees: list[ast.AST] = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value and "import" in node.value:
            try:
                trees.append(ast.parse(node.value))
            except SyntaxError:
                continue
    return trees


def private_reads(path: Path, private: set[str]) -> list[str]:
    where = path.relative_to(TESTS.parent) if TESTS in path.parents else path.name
    found = []
    for tree in _trees(path):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append(f"{where}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("store"):
                found += [f"{where}:{node.lineno}: import {a.name}" for a in node.names if _private(a.name)]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "setattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in private
            ):
                found.append(f"{where}:{node.lineno}: setattr {node.args[1].value!r}")
    return found


def test_no_test_reads_a_private_name_of_the_store():
    private = store_private_names()
    # This file's own samples reach in on purpose; loomflow's vendored tests test loomflow.
    tests = [p for p in TESTS.rglob("*.py") if VENDORED not in p.parents and p != Path(__file__)]
    found = [line for path in sorted(tests) for line in private_reads(path, private)]
    assert found == [], "use store.testing instead:\n" + "\n".join(found)


def test_no_benchmark_reads_a_private_name_of_the_store():
    """The benchmarks too: they measure the store as it is composed, through the same door."""
    private = store_private_names()
    scripts = sorted((TESTS.parent / "bench").glob("*.py"))
    assert scripts, "no benchmark found beside the tests"
    found = [line for path in scripts for line in private_reads(path, private)]
    assert found == [], "use store.testing instead:\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The scan is not blind: each way of reaching in is caught, and the public door is not."""
    private = store_private_names()
    assert {"_db", "_indexer", "_tenant", "_matrices"} <= private
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "from store.rights.import_write import _SECRET\n"
        "def test(s, monkeypatch):\n"
        "    s._db.read()\n"
        "    monkeypatch.setattr(s, '_indexer', None)\n"
        "    testing.backend(s).read()\n"
        "SCRIPT = '''\nimport store\nstore.x._tenant(1)\n'''\n"
    )
    found = private_reads(sample, private | {"_SECRET"})
    assert sorted(line.split(": ", 1)[1] for line in found) == ["._db", "._tenant", "import _SECRET", "setattr '_indexer'"]
