"""Numbered, additive schema migrations. The version lives in ``memlens_meta`` and
in ``PRAGMA user_version``; each migration runs inside the caller's transaction.

Every step carries its own literal DDL, frozen when it was written: a step must create
today exactly what it created the day it shipped, whatever the ORM tables in
:mod:`store.schema` say now. A later change to a table is a new step, never an edit.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

from ..shared import merge_tenant_names, tenant_names_to_rename

APPLICATION_ID = 0x4D4C4E53  # "MLNS": marks the file as a memlens store for `file(1)` and for us

_CORE_DDL = """
CREATE TABLE memlens_meta (
    "key" VARCHAR NOT NULL,
    value TEXT NOT NULL,
    CONSTRAINT pk_memlens_meta PRIMARY KEY ("key")
);
CREATE TABLE tenants (
    user_id VARCHAR NOT NULL,
    created_at INTEGER NOT NULL,
    last_activity INTEGER NOT NULL,
    CONSTRAINT pk_tenants PRIMARY KEY (user_id)
);
CREATE TABLE blocks (
    pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    content TEXT NOT NULL,
    pinned_order INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT pk_blocks PRIMARY KEY (pk),
    CONSTRAINT uq_blocks_user_id_name UNIQUE (user_id, name)
);
CREATE INDEX ix_blocks_user_id_pinned_order ON blocks (user_id, pinned_order);
CREATE TABLE episodes (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR,
    occurred_at INTEGER NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    metadata TEXT NOT NULL,
    content_hash VARCHAR NOT NULL,
    CONSTRAINT pk_episodes PRIMARY KEY (pk),
    CONSTRAINT uq_episodes_id UNIQUE (id)
);
CREATE INDEX ix_episodes_user_id_session_id_occurred_at_pk ON episodes (user_id, session_id, occurred_at, pk);
CREATE INDEX ix_episodes_user_id_occurred_at_pk ON episodes (user_id, occurred_at, pk);
CREATE TABLE facts (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object TEXT NOT NULL,
    confidence DOUBLE NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_until INTEGER,
    recorded_at INTEGER NOT NULL,
    source_episode_ids TEXT NOT NULL,
    CONSTRAINT pk_facts PRIMARY KEY (pk),
    CONSTRAINT uq_facts_id UNIQUE (id)
);
CREATE INDEX ix_facts_user_id_subject_predicate_valid_from ON facts (user_id, subject, predicate, valid_from);
CREATE TABLE sessions (
    pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT pk_sessions PRIMARY KEY (pk),
    CONSTRAINT uq_sessions_user_id_session_id UNIQUE (user_id, session_id)
);
CREATE TABLE kv_entries (
    pk INTEGER NOT NULL,
    session_pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    "key" VARCHAR NOT NULL,
    value TEXT NOT NULL,
    expires_at INTEGER,
    updated_at INTEGER NOT NULL,
    CONSTRAINT pk_kv_entries PRIMARY KEY (pk),
    CONSTRAINT uq_kv_entries_session_pk_key UNIQUE (session_pk, "key"),
    CONSTRAINT fk_kv_entries_session_pk_sessions FOREIGN KEY(session_pk) REFERENCES sessions (pk) ON DELETE CASCADE
);
CREATE INDEX ix_kv_entries_user_id ON kv_entries (user_id);
CREATE TABLE task_states (
    session_pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    state TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT pk_task_states PRIMARY KEY (session_pk),
    CONSTRAINT fk_task_states_session_pk_sessions FOREIGN KEY(session_pk) REFERENCES sessions (pk) ON DELETE CASCADE
);
CREATE INDEX ix_task_states_user_id ON task_states (user_id);
CREATE TABLE scratchpad (
    pk INTEGER NOT NULL,
    session_pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    created_at INTEGER NOT NULL,
    content TEXT NOT NULL,
    CONSTRAINT pk_scratchpad PRIMARY KEY (pk),
    CONSTRAINT fk_scratchpad_session_pk_sessions FOREIGN KEY(session_pk) REFERENCES sessions (pk) ON DELETE CASCADE
);
CREATE INDEX ix_scratchpad_session_pk_pk ON scratchpad (session_pk, pk);
CREATE INDEX ix_scratchpad_user_id ON scratchpad (user_id);
CREATE TABLE checkpoints (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    session_pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    description TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    snapshot TEXT NOT NULL,
    CONSTRAINT pk_checkpoints PRIMARY KEY (pk),
    CONSTRAINT uq_checkpoints_id UNIQUE (id),
    CONSTRAINT fk_checkpoints_session_pk_sessions FOREIGN KEY(session_pk) REFERENCES sessions (pk) ON DELETE CASCADE
);
CREATE INDEX ix_checkpoints_session_pk_created_at ON checkpoints (session_pk, created_at);
CREATE INDEX ix_checkpoints_user_id ON checkpoints (user_id);
"""


def _m001_core(conn: Connection) -> None:
    for statement in split_statements(_CORE_DDL):
        conn.exec_driver_sql(statement)
    conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")


_FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

_VECTORS_DDL = """
CREATE TABLE vectors (
    kind VARCHAR NOT NULL,
    item_pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    vector BLOB NOT NULL,
    CONSTRAINT pk_vectors PRIMARY KEY (kind, item_pk)
);
CREATE INDEX ix_vectors_user_id_kind_item_pk ON vectors (user_id, kind, item_pk);
CREATE INDEX ix_vectors_user_id_content_hash ON vectors (user_id, content_hash);
"""

# External-content FTS5 indexes hold no copy of the text, only the index; the triggers
# keep them in step. Deleting a row also deletes its vector, so nothing derived outlives it.
# The trigger texts are frozen too: m004 recreates them verbatim after rebuilding their tables.
_EPISODE_TRIGGERS = """
CREATE TRIGGER episodes_fts_ai AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, input, output) VALUES (new.pk, new.input, new.output);
END;
CREATE TRIGGER episodes_fts_ad AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, input, output) VALUES ('delete', old.pk, old.input, old.output);
    DELETE FROM vectors WHERE kind = 'episode' AND item_pk = old.pk;
END;
CREATE TRIGGER episodes_fts_au AFTER UPDATE OF input, output ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, input, output) VALUES ('delete', old.pk, old.input, old.output);
    INSERT INTO episodes_fts(rowid, input, output) VALUES (new.pk, new.input, new.output);
    DELETE FROM vectors WHERE kind = 'episode' AND item_pk = old.pk;
END;
"""
_FACT_TRIGGERS = """
CREATE TRIGGER facts_fts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, subject, predicate, object) VALUES (new.pk, new.subject, new.predicate, new.object);
END;
CREATE TRIGGER facts_fts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, subject, predicate, object)
        VALUES ('delete', old.pk, old.subject, old.predicate, old.object);
    DELETE FROM vectors WHERE kind = 'fact' AND item_pk = old.pk;
END;
"""
_SEARCH_DDL = f"""
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    input, output, content='episodes', content_rowid='pk', tokenize='{_FTS_TOKENIZER}');
CREATE VIRTUAL TABLE episodes_fts_vocab USING fts5vocab(episodes_fts, 'row');
{_EPISODE_TRIGGERS}
CREATE VIRTUAL TABLE facts_fts USING fts5(
    subject, predicate, object, content='facts', content_rowid='pk', tokenize='{_FTS_TOKENIZER}');
{_FACT_TRIGGERS}
CREATE TRIGGER blocks_vectors_ad AFTER DELETE ON blocks BEGIN
    DELETE FROM vectors WHERE kind = 'block' AND item_pk = old.pk;
END;
CREATE TRIGGER scratchpad_vectors_ad AFTER DELETE ON scratchpad BEGIN
    DELETE FROM vectors WHERE kind = 'scratchpad' AND item_pk = old.pk;
END;
"""


def _m002_search(conn: Connection) -> None:
    for statement in split_statements(_VECTORS_DDL + _SEARCH_DDL):
        conn.exec_driver_sql(statement)
    # Rows written before this migration join the keyword indexes now.
    conn.exec_driver_sql("INSERT INTO episodes_fts(episodes_fts) VALUES ('rebuild')")
    conn.exec_driver_sql("INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')")


_AUDIT_DDL = """
CREATE TABLE audit_log (
    pk INTEGER NOT NULL,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    scope TEXT NOT NULL,
    counts TEXT NOT NULL,
    digest VARCHAR NOT NULL,
    CONSTRAINT pk_audit_log PRIMARY KEY (pk)
);
CREATE INDEX ix_audit_log_user_id ON audit_log (user_id);
"""


def _m003_audit(conn: Connection) -> None:
    for statement in split_statements(_AUDIT_DDL):
        conn.exec_driver_sql(statement)


# Ids are unique per tenant, not store-wide: with a store-wide key, writing an id another
# tenant already uses fails, and that failure tells the caller the other tenant exists.
# SQLite cannot drop a constraint, so the three tables are rebuilt (row keys kept, so the
# keyword indexes and vectors still point at the same rows). Episodes also gain
# ``consolidated_at``, set when consolidate() has shown the episode to an extractor; audit
# entries gain ``origin``: 'local' for what happened in this store, 'imported' for history
# that arrived in an import file.
_PER_TENANT_IDS_DDL = f"""
CREATE TABLE episodes_v4 (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR,
    occurred_at INTEGER NOT NULL,
    input TEXT NOT NULL,
    output TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    metadata TEXT NOT NULL,
    content_hash VARCHAR NOT NULL,
    consolidated_at INTEGER,
    CONSTRAINT pk_episodes PRIMARY KEY (pk),
    CONSTRAINT uq_episodes_user_id_id UNIQUE (user_id, id)
);
INSERT INTO episodes_v4 (pk, id, user_id, session_id, occurred_at, input, output, tool_calls, metadata, content_hash)
    SELECT pk, id, user_id, session_id, occurred_at, input, output, tool_calls, metadata, content_hash FROM episodes;
DROP TABLE episodes;
ALTER TABLE episodes_v4 RENAME TO episodes;
CREATE INDEX ix_episodes_user_id_session_id_occurred_at_pk ON episodes (user_id, session_id, occurred_at, pk);
CREATE INDEX ix_episodes_user_id_occurred_at_pk ON episodes (user_id, occurred_at, pk);
{_EPISODE_TRIGGERS}
CREATE TABLE facts_v4 (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object TEXT NOT NULL,
    confidence DOUBLE NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_until INTEGER,
    recorded_at INTEGER NOT NULL,
    source_episode_ids TEXT NOT NULL,
    CONSTRAINT pk_facts PRIMARY KEY (pk),
    CONSTRAINT uq_facts_user_id_id UNIQUE (user_id, id)
);
INSERT INTO facts_v4 SELECT pk, id, user_id, subject, predicate, object, confidence, valid_from, valid_until,
    recorded_at, source_episode_ids FROM facts;
DROP TABLE facts;
ALTER TABLE facts_v4 RENAME TO facts;
CREATE INDEX ix_facts_user_id_subject_predicate_valid_from ON facts (user_id, subject, predicate, valid_from);
{_FACT_TRIGGERS}
CREATE TABLE checkpoints_v4 (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    session_pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    description TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    snapshot TEXT NOT NULL,
    CONSTRAINT pk_checkpoints PRIMARY KEY (pk),
    CONSTRAINT uq_checkpoints_user_id_id UNIQUE (user_id, id),
    CONSTRAINT fk_checkpoints_session_pk_sessions FOREIGN KEY(session_pk) REFERENCES sessions (pk) ON DELETE CASCADE
);
INSERT INTO checkpoints_v4 SELECT pk, id, session_pk, user_id, description, created_at, snapshot FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v4 RENAME TO checkpoints;
CREATE INDEX ix_checkpoints_session_pk_created_at ON checkpoints (session_pk, created_at);
CREATE INDEX ix_checkpoints_user_id ON checkpoints (user_id);
ALTER TABLE audit_log ADD COLUMN origin VARCHAR NOT NULL DEFAULT 'local';
"""


def _m004_per_tenant_ids(conn: Connection) -> None:
    for statement in split_statements(_PER_TENANT_IDS_DDL):
        conn.exec_driver_sql(statement)


def split_statements(script: str) -> list[str]:
    """Split DDL on statement ends, keeping trigger bodies (which contain ';') whole."""
    statements, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current).strip()
        if joined.endswith(";") and (not joined.upper().startswith("CREATE TRIGGER") or joined.endswith("END;")):
            statements.append(joined)
            current = []
    return statements


def _m005_nothing_on_sqlite(conn: Connection) -> None:
    """Version 5 gave each PostgreSQL tenant's session tables a foreign key of their own
    (:mod:`store.backend.postgres.ddl`); a SQLite file has no partitions, so nothing changes.
    The step keeps the version numbers of the two backends meaning the same schema."""


# Version 6: tenant names in NFC (see store.backend.shared for the rule and its tables).
def _m006_tenant_names_in_nfc(conn: Connection) -> None:
    for old, new in tenant_names_to_rename(conn):
        merge_tenant_names(conn, old, new)
        for table in ("blocks", "episodes", "facts", "sessions", "kv_entries", "task_states", "scratchpad", "checkpoints", "vectors"):
            conn.execute(text(f"UPDATE {table} SET user_id = :new WHERE user_id = :old"), {"old": old, "new": new})


def _m007_nothing_on_sqlite(conn: Connection) -> None:
    """Version 7 made PostgreSQL split a dotted number ("2.14.3") into its parts, as FTS5's
    tokenizer always has (:mod:`store.backend.postgres.ddl`); nothing changes in a SQLite file.
    The step keeps the version numbers of the two backends meaning the same schema."""


# Version 8: the earlier versions of working blocks (store.tiers.blocks keeps and caps them), and
# the transaction time of facts (store.tiers.facts).
_HISTORY_DDL = """
CREATE TABLE block_versions (
    pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    content TEXT NOT NULL,
    pinned_order INTEGER NOT NULL,
    written_at INTEGER NOT NULL,
    replaced_at INTEGER NOT NULL,
    replaced_by VARCHAR NOT NULL,
    earlier_dropped INTEGER NOT NULL,
    CONSTRAINT pk_block_versions PRIMARY KEY (pk)
);
CREATE INDEX ix_block_versions_user_id_name_replaced_at ON block_versions (user_id, name, replaced_at);
CREATE TABLE fact_changes (
    pk INTEGER NOT NULL,
    user_id VARCHAR NOT NULL,
    fact_id VARCHAR NOT NULL,
    valid_until_before INTEGER,
    changed_at INTEGER NOT NULL,
    caused_by VARCHAR NOT NULL,
    CONSTRAINT pk_fact_changes PRIMARY KEY (pk)
);
CREATE INDEX ix_fact_changes_user_id_fact_id_changed_at ON fact_changes (user_id, fact_id, changed_at);
"""


def _m008_history(conn: Connection) -> None:
    for statement in split_statements(_HISTORY_DDL):
        conn.exec_driver_sql(statement)


# Version 9: a key-value entry keeps when it was first written and the time to live it was given,
# so a read can refresh its expiry (a sliding time to live, as LangGraph's stores have), and may
# have a text to be searched by (its vector, kind 'key', goes with it). Entries written before
# count as created at their last write, and are not searchable.
_KV_TIMES_DDL = """
ALTER TABLE kv_entries ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kv_entries ADD COLUMN ttl_seconds DOUBLE;
ALTER TABLE kv_entries ADD COLUMN search_text TEXT;
UPDATE kv_entries SET created_at = updated_at;
CREATE TRIGGER kv_entries_vectors_ad AFTER DELETE ON kv_entries BEGIN
    DELETE FROM vectors WHERE kind = 'key' AND item_pk = old.pk;
END;
"""


def _m009_key_times(conn: Connection) -> None:
    for statement in split_statements(_KV_TIMES_DDL):
        conn.exec_driver_sql(statement)


# Version 10: the recall trace (store.tiers.traces): each recall an agent made through a store
# opened with tracing on, what it asked and what came back.
_TRACES_DDL = """
CREATE TABLE recall_traces (
    pk INTEGER NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    at INTEGER NOT NULL,
    call VARCHAR NOT NULL,
    "query" TEXT NOT NULL,
    session_id VARCHAR,
    label TEXT,
    arguments TEXT NOT NULL,
    hits TEXT NOT NULL,
    took_ms DOUBLE NOT NULL,
    CONSTRAINT pk_recall_traces PRIMARY KEY (pk),
    CONSTRAINT uq_recall_traces_user_id_id UNIQUE (user_id, id)
);
CREATE INDEX ix_recall_traces_user_id_at_pk ON recall_traces (user_id, at, pk);
CREATE INDEX ix_recall_traces_user_id_session_id_at ON recall_traces (user_id, session_id, at);
"""


def _m010_recall_traces(conn: Connection) -> None:
    for statement in split_statements(_TRACES_DDL):
        conn.exec_driver_sql(statement)


MIGRATIONS: list[Callable[[Connection], None]] = [
    _m001_core,
    _m002_search,
    _m003_audit,
    _m004_per_tenant_ids,
    _m005_nothing_on_sqlite,
    _m006_tenant_names_in_nfc,
    _m007_nothing_on_sqlite,
    _m008_history,
    _m009_key_times,
    _m010_recall_traces,
]
CURRENT_VERSION = len(MIGRATIONS)


def read_version(conn: Connection) -> int:
    row = conn.execute(text("SELECT value FROM memlens_meta WHERE key = 'schema_version'")).first()
    return int(row[0]) if row else 0


def migrate(conn: Connection, from_version: int) -> None:
    """Bring the schema from ``from_version`` to :data:`CURRENT_VERSION`."""
    for number in range(from_version, CURRENT_VERSION):
        MIGRATIONS[number](conn)
    conn.execute(
        text("INSERT OR REPLACE INTO memlens_meta (key, value) VALUES ('schema_version', :v)"),
        {"v": str(CURRENT_VERSION)},
    )
    conn.exec_driver_sql(f"PRAGMA user_version = {CURRENT_VERSION}")
