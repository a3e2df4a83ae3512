"""The distribution as a user gets it: the wheel and sdist built from this tree, the wheel's
contents checked against the source, and the wheel installed into a fresh virtualenv where
`memlens --version`, `memlens demo --no-open` and a recall run from it, not from this tree.
A package-data file left out of pyproject.toml (the stylesheet, the demo vectors) fails here."""

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.model  # the demo and the recall use the real model


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    # From a copy of what a clone holds: a build/ or *.egg-info left in this tree (an earlier
    # build, the editable install) would hand setuptools stale files and hide a missing one.
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    for package in ("store", "inspector"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    # No isolation: the build backend (setuptools) is the test environment's, nothing is fetched.
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--sdist", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = out.glob("memlens-*.whl")
    (sdist,) = out.glob("memlens-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def test_the_wheel_holds_every_module_and_data_file_and_nothing_else(built):
    names = set(zipfile.ZipFile(built["wheel"]).namelist())
    wanted = {
        p.relative_to(ROOT).as_posix()
        for package in ("store", "inspector")
        for p in (ROOT / package).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".tcss", ".npz", ".typed")
    }
    assert "inspector/app.tcss" in wanted and any(n.endswith(".npz") for n in wanted)  # what this test guards
    assert wanted <= names, sorted(wanted - names)
    packaged = {n for n in names if not n.startswith("memlens-")}
    assert packaged == wanted, sorted(packaged - wanted)  # no tests, benchmarks or caches


def test_the_wheel_installed_in_a_fresh_virtualenv_runs_the_demo_and_a_recall(built, tmp_path):
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    python = fresh / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    # The dependencies come from this environment (a plain path: its .pth files, among them the
    # editable install of this tree, are not read); memlens itself only from the wheel.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(built["wheel"])],
        check=True,
        timeout=120,
    )

    def run(*command: str) -> str:
        done = subprocess.run(list(command), capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    from importlib.metadata import version

    assert run(str(fresh / "bin" / "memlens"), "--version") == f"memlens {version('memlens')}\n"
    run(str(fresh / "bin" / "memlens"), "demo", "--no-open", "--db", str(tmp_path / "demo.db"))
    found = run(
        str(python),
        "-c",
        "import store, sys; from store import MemoryStore; "
        "s = MemoryStore.open(sys.argv[1]); "
        "print(store.__file__); print(s.recall('where does alice live now', user_id='alice', limit=1)[0].episode.input)",
        str(tmp_path / "demo.db"),
    ).splitlines()
    assert found[0].startswith(str(site))  # the installed package, not this tree
    assert found[1]
