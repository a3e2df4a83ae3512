"""`memlens stats` at 80 columns: the counts table whole, the tier sizes as bars that read
without colour and in proportion."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from inspector.cli.stats import BAR_WIDTH, summary, tiers
from store import MemoryStore
from store.demo import build_demo_store
from store.embedding import FakeEmbedder

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = set("█▉▊▋▌▍▎▏▐")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = tmp_path_factory.mktemp("stats") / "demo.db"
    build_demo_store(path, size="compact", embedder=FakeEmbedder()).close()
    return path


def render(path: Path, width: int = 80) -> list[str]:
    out = io.StringIO()
    with MemoryStore.open(path, read_only=True, embedder=None, check_model=False) as store:
        Console(file=out, width=width, no_color=True, color_system=None, force_terminal=False).print(summary(store))
    return out.getvalue().splitlines()


def bar_cells(line: str) -> float:
    """A bar's length in cells: a full block is one, any partial block half (enough to compare)."""
    return sum(1 if c == "█" else 0.5 for c in line if c in BLOCKS)


def test_stats_fits_80_columns_with_every_count_whole(demo):
    lines = render(demo)
    assert all(len(line.rstrip()) <= 80 for line in lines)
    assert not any("\x1b" in line for line in lines)  # monochrome: no escape codes at all
    rows = {
        line.split()[0]: line.split()[1:] for line in lines if line.split() and line.split()[0] in ("alice", "bob", "carol", "(anonymous)")
    }
    # alice in the compact demo: 3 blocks, 15 episodes, 6 facts, 4 sessions, 4 keys, 3 notes, 2 checkpoints.
    assert rows["alice"][:7] == ["3", "15", "6", "4", "4", "3", "2"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", rows["alice"][7])
    assert set(rows) == {"alice", "bob", "carol", "(anonymous)"}


def test_tier_sizes_are_bars_in_proportion(demo):
    lines = render(demo)
    start = lines.index(next(line for line in lines if line.startswith("tier sizes")))
    bars = {line.split()[0]: (int(line.split()[1]), bar_cells(line)) for line in lines[start + 1 : start + 1 + len(tiers())]}
    assert list(bars) == [header for header, _ in tiers()]
    largest = max(total for total, _ in bars.values())
    for tier, (total, cells) in bars.items():
        if total == largest:
            assert cells == BAR_WIDTH, tier
        elif total:
            assert cells > 0 and abs(cells - total / largest * BAR_WIDTH) <= 1, tier  # a sliver at least, else to scale
    assert bars["episodes"][0] == 37  # 15 + 12 + 7 + 3 over every tenant


def test_the_command_prints_it_at_80_columns_when_piped(demo):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "inspector.cli", "stats", str(demo)], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    lines = result.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80 and "tier sizes, all tenants" in result.stdout
    assert any(line.split()[:2] == ["alice", "3"] for line in lines if line.split())
