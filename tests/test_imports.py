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
