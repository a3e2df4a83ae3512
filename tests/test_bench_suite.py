"""``python -m bench all`` runs every benchmark the results page documents: a benchmark added
without a declaration, a declaration left behind by a removed script, or a documented command the
declarations do not run would make the one command run less than the page claims."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
# Modules the benchmarks share or a person runs by hand to compare commits, not benchmarks of the page.
HELPERS = {"__main__.py", "suite.py", "corpus.py", "terminal.py", "hybrid_stages.py", "recall_ab.py", "public_data.py"}


def declared() -> dict[str, tuple[str, ...]]:
    sys.path.insert(0, str(ROOT))
    try:
        from bench.suite import BENCHMARKS
    finally:
        sys.path.remove(str(ROOT))
    return {b.script: b.arguments for b in BENCHMARKS}


def test_every_benchmark_script_is_declared_and_every_declaration_has_its_script():
    scripts = {p.name for p in BENCH.glob("*.py")} - HELPERS
    assert set(declared()) == scripts


def test_every_command_the_results_page_documents_is_one_the_suite_runs():
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    documented = set(re.findall(r"`python bench/(\w+\.py)", page))
    assert documented and documented <= set(declared())
    for script, arguments in declared().items():
        command = " ".join(["python", f"bench/{script}", *arguments])
        if script in documented:
            assert f"`{command}`" in page or f"`{command} " in page, f"the page does not document `{command}`"


def test_the_list_names_every_benchmark_with_its_command():
    listing = subprocess.run([sys.executable, "-m", "bench", "list"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for script, arguments in declared().items():
        assert " ".join(["python", f"bench/{script}", *arguments]) in listing
