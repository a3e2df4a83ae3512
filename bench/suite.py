"""Every benchmark of docs/benchmarks.md, declared once: its script, its documented arguments, the
smaller arguments a smoke run uses (an approximate index needs 20,000 rows), what it needs, and about how long it takes at full size on a
two-core machine (what ``python -m bench all`` says before it starts).

The order is the one a fresh clone needs: the recall benchmark computes and caches the real
model's vectors of the 100k corpus (about 8 minutes, once) that the others read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Benchmark:
    name: str
    script: str
    arguments: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()
    minutes: float = 1.0  # at full size, with the vector cache built
    postgres: bool = False  # needs the embedded PostgreSQL of the test extra
    pg_vectors: bool = False  # and its pgvector's distance functions, which die on some CPUs
    public_data: bool = False  # needs clones of the public sets' repositories (bench/public_data.py)

    def command(self, quick: bool = False) -> str:
        return " ".join(["python", f"bench/{self.script}", *(self.quick if quick else self.arguments)])


BENCHMARKS = (
    Benchmark("recall", "recall_bench.py", quick=("--quick",), minutes=12),
    Benchmark(
        "recall-targets", "recall_targets.py", ("--no-ingest",), quick=("--size", "3000", "--queries", "20", "--typed", "4"), minutes=15
    ),
    Benchmark("opening", "opening_bench.py", quick=("--rows", "20000", "--rounds", "1"), minutes=6),
    Benchmark("peers", "peers_bench.py", quick=("--rows", "20000", "--queries", "20"), minutes=8),
    Benchmark("ann", "ann_bench.py", quick=("--sizes", "3000", "--no-chroma"), minutes=15),
    Benchmark("inspector", "inspector_bench.py", ("--runs", "7"), quick=("--runs", "1", "--names-only"), minutes=5),
    Benchmark("recall-quality", "recall_quality.py", minutes=2),
    # The first full run embeds LongMemEval's 57,000 turns with the real model (about 40 minutes), once.
    Benchmark("public-recall", "public_recall.py", ("--per-class", "20"), quick=("--sets", "cisi"), minutes=5, public_data=True),
    Benchmark("fusion-fit", "fusion_fit.py", ("--per-class", "20"), quick=("--sets", "cisi,hard"), minutes=5, public_data=True),
    Benchmark("rare-words", "keyword_rare_words.py", quick=("--episodes", "3000"), minutes=5),
    Benchmark(
        "keyword-tenants",
        "keyword_tenants.py",
        ("--episodes", "20000", "--rounds", "4"),
        quick=("--episodes", "3000", "--rounds", "1"),
        minutes=8,
    ),
    Benchmark(
        "tenant-scale",
        "tenant_scale.py",
        ("--tenants", "10000", "--episodes", "50-100"),
        quick=("--tenants", "30", "--episodes", "5-20", "--no-terminal"),
        minutes=20,
    ),
    Benchmark(
        "time-travel",
        "time_travel_bench.py",
        quick=("--episodes", "2000", "--facts", "200", "--versions", "50", "--calls", "10", "--rounds", "1"),
        minutes=10,
    ),
    Benchmark("trace", "trace_bench.py", quick=("--episodes", "2000", "--rounds", "1"), minutes=12),
    Benchmark("forget", "forget_bench.py", ("--quick",), quick=("--quick", "--keyword"), minutes=15),
    Benchmark("load", "load_run.py", ("--seconds", "20"), quick=("--seconds", "3", "--backend", "sqlite"), minutes=3, postgres=True),
    Benchmark("demo", "demo_bench.py", quick=("--runs", "1"), minutes=2),
    Benchmark("langgraph", "langgraph_bench.py", quick=("--items", "200", "--users", "20", "--per-user", "3"), minutes=3),
    Benchmark("backends", "backends_bench.py", quick=("--episodes", "2000"), minutes=15, postgres=True),
    Benchmark("pg-recall", "pg_recall_bench.py", quick=("--sizes", "2000"), minutes=10, postgres=True, pg_vectors=True),
    Benchmark("pg-ann", "pg_ann_bench.py", quick=("--vectors", "2000", "--quick"), minutes=15, postgres=True, pg_vectors=True),
    Benchmark(
        "pg-layout", "pg_layout_bench.py", quick=("--per-tenant", "300", "--tenants", "3"), minutes=10, postgres=True, pg_vectors=True
    ),
    Benchmark("pg-tenant-ops", "pg_tenant_ops.py", quick=("--tenants", "30"), minutes=10, postgres=True),
    Benchmark(
        "pg-server-recall",
        "pg_server_recall.py",
        quick=("--episodes", "2000", "--queries", "20"),
        minutes=10,
        postgres=True,
        pg_vectors=True,
    ),
)
BY_NAME = {b.name: b for b in BENCHMARKS}
