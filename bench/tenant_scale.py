"""Many small tenants: what one tenant costs in a store of thousands, against a few-tenant store.

    python bench/tenant_scale.py                                   # 1,000 tenants of 50-500 episodes, SQLite
    python bench/tenant_scale.py --tenants 10000 --episodes 50-100
    python bench/tenant_scale.py --tenants 1000 --engine postgres  # the embedded PostgreSQL of the test extra

Each tenant holds episodes of synthetic text (words drawn from a Zipf-like vocabulary of 3,000,
so every tenant shares the common words and holds rare ones of its own), two facts, a block and
a session's key; vectors come from the fake embedder, so they cost nothing to make and the
figures are the store's. The baseline is a few-tenant store holding only the PROBES tenants
measured (the same rows), built in the same run, and every timing alternates between the two.

Measured: creating a tenant (its first and its last tenth), the store's size against the raw
text; a recall in one tenant (keyword and hybrid, queries of two words from the tenant's own
memories), and the first recall after another tenant's commit; listing and counting tenants;
finding a tenant by a mistyped name (the close-match suggestion); erasing one tenant (total,
and the p99 wait of a writer of other tenants during it, against its p99 before); and a fresh
``memlens`` process's tenant names on screen in a pty.

The built store is kept under ``bench/.cache/`` (``--rebuild`` builds it again): the first run
builds it at about 35 ms a tenant plus a quarter of a millisecond an episode (9 minutes for
10,000 tenants of 50-100 episodes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from store import MemoryStore  # noqa: E402
from store.embedding import FakeEmbedder  # noqa: E402
from store.errors import UnknownTenantError  # noqa: E402

CACHE = ROOT / "bench" / ".cache" / "tenant_scale"
PROBES = 5
VOCABULARY = [f"w{i}" for i in range(3000)]
WEIGHTS = [1.0 / (i + 1) for i in range(3000)]
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT)}


def name(i: int) -> str:
    return f"user{i:06d}"


def rows_of(i: int, low: int, high: int) -> list[dict]:
    rng = random.Random(i)
    return [
        {"input": " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(6, 20))), "output": "ok", "session_id": f"s{rng.randint(0, 2)}"}
        for _ in range(rng.randint(low, high))
    ]


def fill(store: MemoryStore, i: int, low: int, high: int) -> int:
    """Tenant ``i``'s memory; the bytes of its text."""
    user = name(i)
    rows = rows_of(i, low, high)
    store.remember_many(rows, user_id=user)
    store.add_fact("user", "lives_in", f"city{i % 97}", user_id=user)
    store.add_fact("user", "works_at", f"company{i % 89}", user_id=user)
    store.update_block("persona", f"tenant {i}: prefers short answers", user_id=user)
    store.session("s0", user_id=user).set("cart", {"items": i % 7})
    return sum(len(r["input"]) + len(r["output"]) for r in rows)


def probes(tenants: int) -> list[int]:
    return [round(k * (tenants - 1) / (PROBES - 1)) for k in range(PROBES)]


def build(location: str, tenants: list[int], low: int, high: int, timed: bool) -> tuple[int, list[float]]:
    raw, seconds = 0, []
    with MemoryStore.open(location, embedder=FakeEmbedder()) as store:
        for i in tenants:
            started = time.perf_counter()
            raw += fill(store, i, low, high)
            seconds.append(time.perf_counter() - started)
            if timed and len(seconds) % max(1, len(tenants) // 10) == 0:
                print(f"  {len(seconds):,} / {len(tenants):,} tenants", file=sys.stderr, flush=True)
    return raw, seconds


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 10 else f"{value:.1f} s"


def queries_for(i: int, low: int, high: int, n: int) -> list[str]:
    rng = random.Random(i * 7 + 1)
    texts = [r["input"].split() for r in rows_of(i, low, high)]
    return [" ".join(rng.sample(rng.choice(texts), 2)) for _ in range(n)]


def best_of_three(what: str, mine, few) -> tuple[str, str, str, str]:
    """A row: the quickest of three calls on each store, and their ratio."""
    a, b = min(timed(mine) for _ in range(3)), min(timed(few) for _ in range(3))
    return (what, ms(a), ms(b), f"{a / b:.1f}x")


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def recalls(big: MemoryStore, few: MemoryStore, probe_ids: list[int], low: int, high: int, mode: str) -> tuple[list[float], list[float]]:
    mine, alone = [], []
    for round_number in range(3):
        for i in probe_ids:
            for q in queries_for(i, low, high, 10):
                pair = [(big, mine), (few, alone)]
                for store, into in pair if round_number % 2 == 0 else pair[::-1]:
                    into.append(timed(lambda s=store, q=q: s.recall(q, user_id=name(i), mode=mode, limit=10)))
    return mine, alone


def after_commits(
    big: MemoryStore, few: MemoryStore, big_writer: MemoryStore, few_writer: MemoryStore, probe_ids: list[int], low: int, high: int
):
    """The first recall in a tenant after another tenant wrote (what a busy fleet's searches meet)."""
    mine, alone = [], []
    for n in range(20):
        i, other = probe_ids[n % len(probe_ids)], probe_ids[(n + 1) % len(probe_ids)]
        q = queries_for(i, low, high, 1)[0]
        for store, writer, into in ((big, big_writer, mine), (few, few_writer, alone)):
            writer.remember(f"another tenant's note {n}", output="ok", user_id=name(other))
            into.append(timed(lambda s=store, q=q: s.recall(q, user_id=name(i), mode="hybrid", limit=10)))
    return mine, alone


def mistyped(store: MemoryStore, user: str) -> float:
    started = time.perf_counter()
    try:
        store.profile(user_id=user[:-2] + user[-1] + user[-2])  # two letters swapped
    except UnknownTenantError as error:
        assert user in error.close_matches, error
    return time.perf_counter() - started


WRITER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from store import MemoryStore
from store.embedding import FakeEmbedder
others = sys.argv[3].split(",")
with MemoryStore.open(sys.argv[2], embedder=FakeEmbedder()) as store, open(sys.argv[4], "w") as log:
    print("open", flush=True)
    n = 0
    while True:
        started = time.time()
        store.remember(f"writer note {n}", output="ok", user_id=others[n % len(others)])
        log.write(f"{started} {time.time()}\\n")
        log.flush()
        n += 1
        time.sleep(0.01)
"""


def erase_beside_writers(location: str, victim: str, others: list[str]) -> tuple[float, list[float], list[float]]:
    """Seconds to forget ``victim``; the waits of an agent writing other tenants (in a process of
    its own, as agents are) before the forget and while it runs."""
    log = Path(location + ".writes")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(ROOT), location, ",".join(others), str(log)], stdout=subprocess.PIPE, text=True, env=ENV
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "open"
        time.sleep(2.0)
        with MemoryStore.open(location, embedder=FakeEmbedder()) as store:
            began = time.time()
            store.forget(user_id=victim, actor="bench")
            ended = time.time()
        time.sleep(0.5)
    finally:
        writer.terminate()
        writer.wait()
    writes = [tuple(map(float, line.split())) for line in log.read_text().splitlines() if len(line.split()) == 2]
    before = [end - start for start, end in writes if end < began]
    during = [end - start for start, end in writes if end >= began and start <= ended]
    return ended - began, before, during


def names_on_screen(location: str, needle: str) -> float:
    from terminal import Terminal

    terminal = Terminal([sys.executable, "-m", "inspector.cli", "open", location], ENV)
    try:
        return terminal.wait_for_text(needle, timeout=120)
    finally:
        terminal.close()


class Rows(list):
    """The table's rows, each printed as soon as it is measured (a later failure keeps them)."""

    def append(self, row: tuple[str, str, str, str]) -> None:
        print("| " + " | ".join(row) + " |", flush=True)
        super().append(row)


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def sqlite_locations(tenants: int, low: int, high: int, rebuild: bool) -> tuple[str, str, dict]:
    CACHE.mkdir(parents=True, exist_ok=True)
    big, few = CACHE / f"sqlite-{tenants}-{low}-{high}.db", CACHE / f"sqlite-{tenants}-{low}-{high}-few.db"
    facts_file = big.parent / (big.name + ".facts.json")
    if rebuild or not big.exists() or not facts_file.exists():
        for p in (big, few):
            for side in p.parent.glob(p.name + "*"):
                side.unlink()
        print(
            f"building {tenants:,} tenants of {low}-{high} episodes (about {tenants * (35 + 0.25 * (low + high) / 2) / 1000 / 60:.0f} min)",
            file=sys.stderr,
        )
        raw, seconds = build(str(big), list(range(tenants)), low, high, timed=True)
        build(str(few), probes(tenants), low, high, timed=False)
        facts = {"raw": raw, "create": seconds}
        facts_file.write_text(json.dumps(facts))
    else:
        facts = json.loads(facts_file.read_text())
    return str(big), str(few), facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--episodes", default="50-500", help="episodes a tenant, LOW-HIGH")
    parser.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--no-terminal", action="store_true", help="skip the names-on-screen rounds")
    args = parser.parse_args()
    low, high = map(int, args.episodes.split("-"))
    if args.engine != "sqlite":
        raise SystemExit("PostgreSQL: not measured by this script yet (see docs/benchmarks.md)")
    big_location, few_location, facts = sqlite_locations(args.tenants, low, high, args.rebuild)
    load = os.getloadavg()  # after the build, which loads the machine itself
    probe_ids = probes(args.tenants)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip() or "?"
    print(f"# tenant scale: {args.tenants:,} tenants of {low}-{high} episodes, {args.engine}")
    print(
        f"\n`python bench/tenant_scale.py --tenants {args.tenants} --episodes {args.episodes}` · commit {commit} · "
        f"{time.strftime('%Y-%m-%d')} · {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs · "
        f"load {load[0]:.2f} before\n"
    )
    print(f"| {args.tenants:,} tenants | this store | few-tenant store ({PROBES} tenants) | ratio |")
    print("|---|---|---|---|", flush=True)
    rows = Rows()
    create = facts["create"]
    tenth = max(1, len(create) // 10)
    rows.append(
        (
            "creating a tenant (its episodes, facts, block, key)",
            f"{ms(statistics.median(create[-tenth:]))} (last tenth)",
            f"{ms(statistics.median(create[:tenth]))} (first tenth)",
            f"{statistics.median(create[-tenth:]) / statistics.median(create[:tenth]):.2f}x",
        )
    )
    size = size_of(Path(big_location))
    rows.append(
        ("store size against its raw text", f"{size / 1e6:.0f} MB", f"{facts['raw'] / 1e6:.0f} MB of text", f"{size / facts['raw']:.1f}x")
    )
    with MemoryStore.open(big_location, embedder=FakeEmbedder()) as big, MemoryStore.open(few_location, embedder=FakeEmbedder()) as few:
        for store in (big, few):
            store.recall("w1 w2", user_id=name(probe_ids[0]), mode="hybrid")
        for mode in ("keyword", "hybrid"):
            mine, alone = recalls(big, few, probe_ids, low, high, mode)
            for p in (50, 95):
                rows.append(
                    (f"recall in one tenant, {mode}, p{p}", ms(pct(mine, p)), ms(pct(alone, p)), f"{pct(mine, p) / pct(alone, p):.2f}x")
                )
        with (
            MemoryStore.open(big_location, embedder=FakeEmbedder()) as big_writer,
            MemoryStore.open(few_location, embedder=FakeEmbedder()) as few_writer,
        ):
            mine, alone = after_commits(big, few, big_writer, few_writer, probe_ids, low, high)
        rows.append(
            (
                "first hybrid recall after another tenant's commit, p50",
                ms(pct(mine, 50)),
                ms(pct(alone, 50)),
                f"{pct(mine, 50) / pct(alone, 50):.2f}x",
            )
        )
        first = big.tenant_names()[:200]
        for what, mine_call, few_call in (
            ("`tenants()` (every tenant with its counts)", big.tenants, few.tenants),
            ("`tenant_names()` (every name, nothing counted)", big.tenant_names, few.tenant_names),
            (
                "`tenants(user_ids=...)`: the inspector's first screenful counted (200 tenants; the few: all 5)",
                lambda: big.tenants(user_ids=first),
                lambda: few.tenants(user_ids=few.tenant_names()),
            ),
            ("`stats()`", big.stats, few.stats),
        ):
            rows.append(best_of_three(what, mine_call, few_call))
        finding = [mistyped(big, name(i)) for i in probe_ids]
        finding_few = [mistyped(few, name(i)) for i in probe_ids]
        rows.append(
            (
                "a mistyped tenant refused with the close match",
                ms(statistics.median(finding)),
                ms(statistics.median(finding_few)),
                f"{statistics.median(finding) / statistics.median(finding_few):.1f}x",
            )
        )
    with tempfile.TemporaryDirectory() as scratch:
        copies = []
        for location in (big_location, few_location):
            copy = Path(scratch) / Path(location).name
            for side in Path(location).parent.glob(Path(location).name + "*"):
                if not side.name.endswith(".facts.json"):  # the build's figures, not the store
                    shutil.copy(side, Path(scratch) / side.name)
            copies.append(str(copy))
        others = [name(i) for i in probe_ids[1:]]
        erased = [erase_beside_writers(location, name(probe_ids[0]), others) for location in copies]
    (big_s, big_before, big_during), (few_s, few_before, few_during) = erased
    rows.append(("forget one tenant (total)", ms(big_s), ms(few_s), f"{big_s / few_s:.1f}x"))
    rows.append(
        (
            "another tenant's writer, p99 wait during the forget",
            ms(pct(big_during, 99)),
            ms(pct(few_during, 99)),
            f"before it: {ms(pct(big_before, 99))} / {ms(pct(few_before, 99))}",
        )
    )
    if not args.no_terminal:
        with MemoryStore.open(big_location, embedder=None) as big:
            shown_first = big.tenant_names()[0] or "(anonymous)"
        with MemoryStore.open(few_location, embedder=None) as few:
            shown_first_few = few.tenant_names()[0] or "(anonymous)"
        names_on_screen(few_location, shown_first_few)  # untimed: warms the disk cache and bytecode
        mine, alone = [], []
        for round_number in range(5):
            pair = [(big_location, shown_first, mine), (few_location, shown_first_few, alone)]
            for location, needle, into in pair if round_number % 2 == 0 else pair[::-1]:
                into.append(names_on_screen(location, needle))
        rows.append(
            (
                "a fresh `memlens` process: tenant names on screen, median of 5",
                ms(statistics.median(mine)),
                ms(statistics.median(alone)),
                f"{statistics.median(mine) / statistics.median(alone):.2f}x",
            )
        )
    print(f"\nLoad {os.getloadavg()[0]:.2f} after.")


if __name__ == "__main__":
    with suppress(KeyboardInterrupt):
        main()
