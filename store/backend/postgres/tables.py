"""Which tables hold a tenant's content, and how a tenant's session children key their sessions:
what the schema (:mod:`.ddl`) and the partitions (:mod:`.partitions`) both build on."""

from __future__ import annotations

# Each tier's tables that hold a tenant's content, parents before children (the order
# partitions are created in, and the reverse of the order they are dropped in).
PARTITIONED = (
    "sessions",
    "blocks",
    "block_versions",
    "episodes",
    "facts",
    "fact_changes",
    "kv_entries",
    "task_states",
    "scratchpad",
    "checkpoints",
    "recall_traces",
    "vectors",
)

# How many tenants one read transaction counts when it lists tenants with their counts. A
# statement locks every partition it reads (and the indexes it scans) until its transaction
# ends: about 32 locks a tenant for its counts (measured, tests/test_pg_tenant_listing.py). The
# server's lock table, shared by every connection, holds about 6,400 at default settings
# (max_locks_per_transaction 64 x max_connections 100), so 1,000 tenants counted in one
# transaction failed ("out of shared memory"). 50 tenants hold about 1,600, a quarter of it.
TENANTS_PER_READ = 50


# The tables whose rows belong to a session. From version 5 each tenant's partition of them
# references that tenant's sessions partition, not the sessions table: a foreign key to a
# partitioned table puts its triggers on every partition of it, so attaching one tenant's
# partition (or dropping it) locked every tenant's sessions, and other tenants' writes and
# reads waited and failed (55 of 252 first writes of new users; 32 of 2,797 reads).
SESSION_CHILDREN = ("kv_entries", "task_states", "scratchpad", "checkpoints")


def session_key(child: str, child_partition: str, sessions_partition: str) -> str:
    """The foreign key of one tenant's partition of ``child`` into its sessions partition."""
    return (
        f'ALTER TABLE "{child_partition}" ADD CONSTRAINT "fk_{child}_session" FOREIGN KEY (user_id, session_pk) '
        f'REFERENCES "{sessions_partition}" (user_id, pk) ON DELETE CASCADE'
    )
