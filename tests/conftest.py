from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import sys
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from store import MemoryStore
from store.backend import engine_names

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

# The suite keeps bytecode caches even where PYTHONDONTWRITEBYTECODE is set (it is on the CI
# machine): without them every process it starts (4 workers, some 200 commands and helpers)
# compiled the store, the inspector and the rewritten test modules from source again, about 6 s of
# CPU per worker to collect and 0.2 s per command here. The caches sit in __pycache__ folders,
# which git ignores; pytest rewrites the test modules imported after this line from cache too.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture
def clock():
    """The store's clock held at T0; set ``clock[0]`` to move it."""
    from store.validation import set_clock

    now = [T0]
    set_clock(lambda: now[0])
    yield now
    set_clock(None)


def dump(path: Path) -> list[str]:
    """Every row of every table, as SQL text: equal dumps mean an unchanged store."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


MODEL_MODULES = ("onnxruntime", "sentence_transformers", "torch")


@pytest.fixture(scope="session")
def model_runtime_blocker(tmp_path_factory) -> str:
    """A folder of stand-ins for the model's runtime that raise when imported: put first on a
    subprocess's PYTHONPATH, it makes a process that loads the model fail loudly."""
    folder = tmp_path_factory.mktemp("no-model-runtime")
    for name in MODEL_MODULES:
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(
            f"raise RuntimeError('a test not marked `model` loaded {name} in a subprocess: mark it `model` or give it the fake')\n"
        )
    return str(folder)


@pytest.fixture(autouse=True)
def fake_default_embedder(request, monkeypatch):
    """Unit tests embed with a fast deterministic fake; tests marked `model` get the real model.

    The fake is provably in effect: a test not marked `model` that loads the model's runtime
    fails, in this process (checked after it) and in any Python subprocess it starts (the
    stand-ins of ``model_runtime_blocker`` come first on their PYTHONPATH)."""
    if request.node.get_closest_marker("model"):
        yield
        return
    blocker = request.getfixturevalue("model_runtime_blocker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [blocker, os.environ.get("PYTHONPATH")])))
    import store.recall.indexing
    from store.embedding import FakeEmbedder

    real = store.recall.indexing.make_embedder
    monkeypatch.setattr(store.recall.indexing, "make_embedder", lambda spec: FakeEmbedder() if spec == "default" else real(spec))
    before = {name for name in MODEL_MODULES if name in sys.modules}
    yield
    loaded = {name for name in MODEL_MODULES if name in sys.modules} - before
    assert not loaded, f"a unit test loaded {sorted(loaded)}: mark it `model` or give it the fake embedder"


@pytest.fixture(autouse=True)
def inspector_config_dir(tmp_path, monkeypatch):
    """The inspector keeps settings (the theme) in the user's config directory: tests never read
    or write the real one, and none sees another's."""
    monkeypatch.setenv("MEMLENS_CONFIG_DIR", str(tmp_path / "memlens-config"))
    # The notes of in-place erasures under way (store.compat.erasure_journal): never the user's.
    monkeypatch.setenv("MEMLENS_STATE_DIR", str(tmp_path / "memlens-state"))


# Demo stores built under a frozen clock, by that clock's time: such a build is the same file
# every time (tests/test_demo.py holds it byte for byte), so each worker builds it once and
# every later test gets a copy (a build is about 0.7 s of CPU; some 70 tests use one).
_DEMO_BUILDS: dict[datetime, Path] = {}


@pytest.fixture
def demo(tmp_path: Path, tmp_path_factory) -> Path:
    """The compact demo store the inspector's tests are built on, on the fake embedder: a fresh
    file of this test's own, built now or copied from this worker's build at the same frozen time."""
    from store.validation import utcnow

    from .inspector_support import make_demo

    now = utcnow()
    built = _DEMO_BUILDS.get(now)
    if built is None:
        built = make_demo(tmp_path_factory.mktemp("demo-build") / "demo.db")
        if utcnow() == now:  # the clock is frozen: the next test at this time gets the same file
            _DEMO_BUILDS[now] = built
    target = tmp_path / "demo.db"
    shutil.copy2(built, target)  # with its permission bits: a new store is its owner's alone
    return target


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A file the whole run shares, built by ``build(path)`` the first time any xdist worker asks
    for it; the others wait for that build and get the same file (read it, or copy it to change it).

    For fixtures that cost seconds of the real model each (the full demo store, the quality set's
    evaluation): module-scoped, they were built again on every worker that ran one of their tests."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' folders sit side by side in the run's own folder
    path = root / "built-once" / name
    path.parent.mkdir(exist_ok=True)
    with open(path.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = path.parent / f"{name}.partial"
            build(partial)
            partial.rename(path)  # only a finished build is ever seen
    return path


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def backend() -> str:
    """The backend a test's store is on: each of them in turn (see :func:`pytest_generate_tests`);
    SQLite for a test marked ``sqlite_only``."""
    return "sqlite"


@pytest.fixture
def store(backend_url: str):
    s = MemoryStore.open(backend_url)
    yield s
    s.close()


@pytest.fixture
def quiet_isolation():
    """For tests that use the anonymous bucket beside named users on purpose, without user_id."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=__import__("store.errors").errors.IsolationWarning)
        yield


# --- PostgreSQL (tests/pg_support.py) ------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server for the session: the embedded one, or ``MEMLENS_PG_URL``."""
    if not __import__("os").environ.get("MEMLENS_PG_URL"):
        pytest.importorskip("pgserver", reason="the embedded PostgreSQL comes with the test extra")
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    from . import pg_support

    server, handle = pg_support.start()
    yield server
    pg_support.stop(server, handle)


@pytest.fixture
def pg_vector_ops(pg_server) -> None:
    """For tests of the server's own vector search (pgvector's distances, its HNSW index):
    skipped, with the reason, where the test server cannot run them."""
    if pg_server.vector_ops_unavailable:
        pytest.skip(pg_server.vector_ops_unavailable)


@pytest.fixture
def pg_url(pg_server) -> Iterator[str]:
    """The SQLAlchemy URL of a new, empty database (pgvector available) for this test alone,
    dropped after it."""
    url = pg_server.fresh_database()
    yield url
    pg_server.drop_database(url)


def pytest_generate_tests(metafunc):
    """Every test that takes the ``backend`` fixture (through ``store`` or ``backend_url``) runs
    once per backend, with ``backend`` set to its name, unless it is marked ``sqlite_only`` with
    a reason (or parametrises a ``backend`` of its own, as loomflow's vendored tests do)."""
    if "backend" not in metafunc.fixturenames or metafunc.definition.get_closest_marker("sqlite_only"):
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if "backend" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)):
            return
    metafunc.parametrize("backend", engine_names())


@pytest.fixture
def backend_url(request, backend, db_path) -> str:
    """A fresh store location on ``backend``: a SQLite file path or a PostgreSQL database URL."""
    if backend == "sqlite":
        return f"sqlite:///{db_path}"
    return request.getfixturevalue("pg_url")


def pytest_collection_modifyitems(config, items):
    """A test kept to SQLite says why: ``@pytest.mark.sqlite_only(reason=...)``."""
    for item in items:
        mark = item.get_closest_marker("sqlite_only")
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid} is marked sqlite_only without a reason")
