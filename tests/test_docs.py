"""The README stays an introduction, and the prose says what is true now, not how it came to be.

History belongs in CHANGELOG.md: a document that compares with "the previous run" or "last
session" goes stale the day it is written and sends a newcomer looking for a run that is not
there. A short list of such phrases is looked for in the README, the documentation and every
comment and docstring of the code (this file, which names them, aside)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()

DIARY = (
    "last session",
    "previous session",
    "earlier session",
    "this session's",
    "earlier run",
    "previous run",
    "the run before",
    "rerun after",
    "before this change",
    "earlier today",
    "decisive run",
    "before/after",
)


def prose_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for folder in ("store", "inspector", "tests", "bench", "screenshots"):
        # loomflow's own tests, vendored as they are, are not our prose.
        files += [p for p in sorted((ROOT / folder).rglob("*.py")) if p.resolve() != HERE and "loomflow_upstream" not in p.parts]
    return files


def test_the_readme_is_an_introduction_of_at_most_250_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail into docs/"
    readme = "\n".join(lines)
    assert "<!-- test-command -->" in readme and "mkdocs build --strict" in readme


def test_no_prose_tells_the_history_of_runs_or_sessions():
    found = []
    for path in prose_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for phrase in DIARY:
                if phrase in line.lower():
                    found.append(f"{path.relative_to(ROOT)}:{number}: {phrase!r}")
    assert found == [], "history belongs in CHANGELOG.md:\n" + "\n".join(found)


def test_every_page_is_in_the_navigation_and_every_link_between_pages_resolves():
    """mkdocs --strict checks this too, in the test command; this is the quick check for a
    test run without the docs extra installed."""
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert [p for p in pages if p not in nav] == []
    for page in pages:
        text = (ROOT / "docs" / page).read_text()
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
            assert ((ROOT / "docs" / page).parent / target).resolve().is_file(), f"{page} links to {target}"
