"""Inspector benchmark on a 100k-episode store, side by side with a bare Textual app.

    python bench/inspector_bench.py

1. Time to first paint: a fresh process each run, from launch until the first frame reaches the
   (headless) driver, for a
   bare Textual app showing one line and for the memlens inspector on the store.
2. Keystroke to updated results (model warm): each character typed into the search box,
   until the results table holds that query's results.
3. Episode pages: one page of 100 rows, near the top and 50k rows deep.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import PrecomputedEmbedder, embeddings, memories, queries  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.embedding import LocalModelEmbedder, cache_dir  # noqa: E402

N = 100_000
RUNS = 7

HARNESS = r'''
import sys, time
start = float(sys.argv[2])
kind = sys.argv[1]
if kind == "bare":
    from textual.app import App
    from textual.widgets import Static

    class Target(App):
        def compose(self):
            yield Static("hello")
else:
    sys.path.insert(0, sys.argv[4])
    from inspector.app import MemlensApp

    class Target(MemlensApp):
        pass

class Measured(Target):
    """Reports the moment the first frame reaches the (headless) driver, then quits."""

    _painted = False

    def _display(self, screen, renderable):
        super()._display(screen, renderable)
        if renderable is not None and not self._painted:
            self._painted = True
            print(f"PAINT {time.time() - start:.4f}", flush=True)
            self.call_later(self.exit)

app = Measured() if kind == "bare" else Measured(sys.argv[3], poll_seconds=0)
app.run(headless=True, size=(150, 45))
'''


def first_paint(kind: str, db: Path) -> float:
    start = time.time()
    out = subprocess.run([sys.executable, "-c", HARNESS, kind, repr(start), str(db), str(ROOT)], capture_output=True, text=True, check=True)
    return float(next(line for line in out.stdout.splitlines() if line.startswith("PAINT")).split()[1])


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def build(path: Path) -> None:
    real = LocalModelEmbedder()
    texts = memories(N)
    vectors = embeddings(texts, real, cache_dir() / "bench")
    store = MemoryStore.open(path, embedder=PrecomputedEmbedder(real, texts, vectors))
    for start in range(0, N, 10_000):
        store.remember_many([{"input": t, "session_id": f"s{i % 40}"} for i, t in enumerate(texts[start : start + 10_000])], user_id="agent")
    store.close()


async def keystrokes(db: Path) -> list[float]:
    from inspector.app import make_app
    from inspector.views import SearchView

    app = make_app(db, poll_seconds=0)
    shown: list[tuple[float, str]] = []
    original = SearchView.show

    def recording(self, hits, status):
        original(self, hits, status)
        shown.append((time.perf_counter(), app.query_one("#query").value))

    SearchView.show = recording
    try:
        async with app.run_test(size=(150, 45)) as pilot:
            while not (app.store and app.store.model_ready and app.user_id == "agent"):
                await pilot.pause(0.05)
            await pilot.pause(1.0)
            app.query_one("#query").focus()
            latencies = []
            for query in queries(12, seed=3):
                app.query_one("#query").value = ""
                await pilot.pause(0.2)
                typed = ""
                for char in query[:18]:
                    typed += char
                    before = len(shown)
                    start = time.perf_counter()
                    await pilot.press(char if char != " " else "space")
                    while not any(value == typed for _, value in shown[before:]):
                        await asyncio.sleep(0.0005)
                    latencies.append(next(t for t, value in shown[before:] if value == typed) - start)
            return latencies
    finally:
        SearchView.show = original


def pages(db: Path) -> tuple[list[float], list[float]]:
    with MemoryStore.open(db, read_only=True, embedder=None, check_model=False) as store:
        top, deep, cursor = [], [], None
        for i in range(600):
            start = time.perf_counter()
            page = store.episodes(user_id="agent", limit=100, cursor=cursor)
            elapsed = time.perf_counter() - start
            (top if i < 50 else deep if i >= 500 else []).append(elapsed)
            cursor = page.next_cursor
    return top, deep


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, help="reuse (or build once at) this path instead of a temporary store")
    args = parser.parse_args()
    print("# memlens inspector benchmark\n")
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "inspector-100k.db"
        if not db.exists():
            build(db)
        bare = [first_paint("bare", db) for _ in range(RUNS)]
        ours = [first_paint("memlens", db) for _ in range(RUNS)]
        ratio = statistics.median(ours) / statistics.median(bare)
        print(f"## Time to first paint ({RUNS} fresh processes each, headless, median)\n")
        print("| app | median | min | ratio |\n|---|---|---|---|")
        print(f"| bare Textual app, one static line | {statistics.median(bare) * 1000:.0f} ms | {min(bare) * 1000:.0f} ms | 1.00x |")
        print(f"| memlens inspector on {N:,} episodes | {statistics.median(ours) * 1000:.0f} ms | {min(ours) * 1000:.0f} ms | {ratio:.2f}x (target <= 1.5x) |")
        latencies = asyncio.run(keystrokes(db))
        print(f"\n## Keystroke to updated results, model warm ({len(latencies)} keystrokes)\n")
        print("| p50 | p95 | max | target |\n|---|---|---|---|")
        print(f"| {pct(latencies, 50) * 1000:.1f} ms | {pct(latencies, 95) * 1000:.1f} ms | {max(latencies) * 1000:.1f} ms | p95 <= 50 ms |")
        top, deep = pages(db)
        print("\n## One page of 100 episodes\n")
        print("| where | p50 | p95 | target |\n|---|---|---|---|")
        print(f"| first 5,000 rows | {pct(top, 50) * 1000:.2f} ms | {pct(top, 95) * 1000:.2f} ms | <= 20 ms |")
        print(f"| 50,000-60,000 rows deep | {pct(deep, 50) * 1000:.2f} ms | {pct(deep, 95) * 1000:.2f} ms | <= 20 ms |")


if __name__ == "__main__":
    main()
