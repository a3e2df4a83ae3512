"""`store` is headless and cheap to import: a subprocess proves what loads."""

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import store

HEAVY = ["torch", "sentence_transformers", "transformers", "textual", "rich", "onnxruntime"]


def loaded_after(code: str) -> list[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_store_loads_nothing_heavy():
    assert loaded_after("import store") == []


def test_opening_a_store_loads_nothing_heavy(tmp_path):
    code = f"from store import MemoryStore\ns = MemoryStore.open({str(tmp_path / 'x.db')!r})\ns.working(user_id='a')"
    assert loaded_after(code) == []


def test_no_store_module_imports_textual_or_rich():
    root = Path(store.__file__).parent
    names = [m.name for m in pkgutil.walk_packages([str(root)], prefix="store.")]
    assert "store.memory" in names
    code = "\n".join(f"import {name}" for name in names)
    assert not {"textual", "rich"} & set(loaded_after(code))


def test_a_subprocess_of_a_unit_test_cannot_load_the_model_runtime():
    """The fence around unit tests reaches their subprocesses: loading the model there fails."""
    for name in ("onnxruntime", "torch", "sentence_transformers"):
        done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True)
        assert done.returncode != 0 and "not marked `model`" in done.stderr, (name, done.stderr[-500:])


def test_the_file_or_server_rule_is_one_and_needs_no_sqlalchemy():
    """The CLI, the UI and the backend ask one rule whether an address is a server; the
    inspector asks it before its first frame, so it loads nothing but the standard library."""
    import inspector.locations
    import store.backend
    from store.locations import is_server_url

    assert inspector.locations.is_server_url is is_server_url
    assert store.backend.scheme("postgresql+psycopg://u@h/db") == "postgresql"
    for address, server in [
        ("memory.db", False),
        ("/data/memory.db", False),
        ("sqlite:////data/memory.db", False),
        ("sqlite+pysqlite:///memory.db", False),
        ("SQLite:///memory.db", False),
        ("postgresql://u@h/db", True),
        ("postgresql+psycopg://u@h/db", True),
        ("postgres://u@h/db", True),
    ]:
        assert is_server_url(address) is server, address
    probe = "import sys, inspector.locations; print('sqlalchemy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
