"""Every operation that spans tenants, on a PostgreSQL store of many small tenants with the
server's default settings: does it work, and how long does it take?

    python bench/pg_tenant_ops.py                   # 1,100 tenants (about 4 minutes to build)
    python bench/pg_tenant_ops.py --tenants 100     # quicker

One LIST partition per tenant and table means a statement over every tenant locks every
tenant's partitions until its transaction ends, and the server's lock table is shared and holds
about 6,400 locks at default settings: past about 1,000 tenants such a statement fails with
"out of shared memory". This runs each such operation once and prints ok (with its time) or the
error. Each tenant holds one episode and a session key (half of them expired); vectors come from
the fake embedder. The embedded PostgreSQL of the test extra, started in a temporary folder.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store import MemoryStore  # noqa: E402
from store.embedding import FakeEmbedder  # noqa: E402


def build(url: str, tenants: int) -> float:
    """``tenants`` tenants of one episode and one session key each; returns seconds a tenant, last tenth."""
    with MemoryStore.open(url, embedder=FakeEmbedder()) as s:
        took = []
        for i in range(tenants):
            started = time.perf_counter()
            s.remember(f"memory of user {i}", user_id=f"user-{i:05d}", session_id="s")
            s.session("s", user_id=f"user-{i:05d}").set("k", "v", ttl=3600 if i % 2 else 0.001)
            took.append(time.perf_counter() - started)
            if (i + 1) % 250 == 0:
                print(f"  {i + 1:,} tenants built", file=sys.stderr, flush=True)
    tenth = max(1, tenants // 10)
    return sum(took[-tenth:]) / tenth


def run(what: str, call: Callable[[], object]) -> None:
    started = time.perf_counter()
    try:
        result = call()
        said = f" ({result:,})" if isinstance(result, int) and not isinstance(result, bool) else ""
        print(f"| {what} | ok{said} | {time.perf_counter() - started:.2f} s |", flush=True)
    except Exception as error:  # the point is to report what fails, with its words
        print(f"| {what} | **failed**: {type(error).__name__}: {str(error).splitlines()[0][-120:]} | |", flush=True)


def command(*arguments: str) -> None:
    done = subprocess.run([sys.executable, "-m", "inspector.cli", *arguments], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1100)
    args = parser.parse_args()
    from tests import pg_support

    server, handle = pg_support.start()
    try:
        url = server.fresh_database()
        per_tenant = build(url, args.tenants)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        print(
            f"`python bench/pg_tenant_ops.py --tenants {args.tenants}` · commit {commit or '?'} · {time.strftime('%Y-%m-%d')} · "
            f"load {os.getloadavg()[0]:.2f} · creating a tenant (last tenth): {per_tenant * 1000:.0f} ms\n"
        )
        print(f"| {args.tenants:,} tenants, default settings | result | time |")
        print("|---|---|---|")
        users = [f"user-{i:05d}" for i in range(args.tenants)]
        with MemoryStore.open(url, embedder=FakeEmbedder()) as s, tempfile.TemporaryDirectory() as out:
            run("`tenant_names()`", s.tenant_names)
            run("`tenants()` (every tenant counted)", s.tenants)
            run("`stats()`", s.stats)
            run("`tenants(user_ids=...)`, 200 tenants", lambda: s.tenants(user_ids=users[:200]))
            run("recall in one tenant", lambda: s.recall("memory", user_id=users[3]))
            run("export one tenant", lambda: s.export(user_id=users[3]))
            run("export every tenant", lambda: s.export_to(io.StringIO()))
            run("the audit log of every tenant", lambda: s.audit_log(all_tenants=True))
            run(f"`purge_expired()` ({(args.tenants + 1) // 2:,} tenants' keys expired)", s.purge_expired)
            run("forget one tenant", lambda: s.forget(user_id=users[4], actor="bench"))
            run("forget another", lambda: s.forget(user_id=users[6], actor="bench"))
            run("open the store again", lambda: MemoryStore.open(url, embedder=FakeEmbedder()).close())
            run("`memlens stats`", lambda: command("stats", url))
            run("`memlens export --all`", lambda: command("export", "--db", url, "--all", "-o", os.path.join(out, "all.jsonl")))
            copy = os.path.join(out, "copy.db")

            def migrate_out() -> None:
                with MemoryStore.open(copy, embedder=FakeEmbedder()) as file:
                    file.migrate_from(s)

            def migrate_in() -> None:
                with (
                    MemoryStore.open(copy, embedder=FakeEmbedder()) as file,
                    MemoryStore.open(server.fresh_database(), embedder=FakeEmbedder()) as back,
                ):
                    back.migrate_from(file)

            run("migrate PostgreSQL -> SQLite", migrate_out)
            run("migrate SQLite -> PostgreSQL", migrate_in)
    finally:
        pg_support.stop(server, handle)


if __name__ == "__main__":
    main()
