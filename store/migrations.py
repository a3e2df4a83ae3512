"""Numbered, additive schema migrations. The version lives in ``memlens_meta`` and
in ``PRAGMA user_version``; each migration runs inside the caller's transaction."""

from __future__ import annotations

from typing import Callable

from sqlalchemy import Connection, text

from . import schema

APPLICATION_ID = 0x4D4C4E53  # "MLNS": marks the file as a memlens store for `file(1)` and for us


def _m001_core(conn: Connection) -> None:
    tables = [
        schema.meta_t,
        schema.tenants_t,
        schema.blocks_t,
        schema.episodes_t,
        schema.facts_t,
        schema.sessions_t,
        schema.kv_t,
        schema.task_t,
        schema.scratch_t,
        schema.checkpoints_t,
    ]
    schema.Base.metadata.create_all(conn, tables=tables)
    conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")


_FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

# External-content FTS5 indexes hold no copy of the text, only the index; the triggers
# keep them in step. Deleting a row also deletes its vector, so nothing derived outlives it.
_SEARCH_DDL = f"""
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    input, output, content='episodes', content_rowid='pk', tokenize='{_FTS_TOKENIZER}');
CREATE VIRTUAL TABLE episodes_fts_vocab USING fts5vocab(episodes_fts, 'row');
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
CREATE VIRTUAL TABLE facts_fts USING fts5(
    subject, predicate, object, content='facts', content_rowid='pk', tokenize='{_FTS_TOKENIZER}');
CREATE TRIGGER facts_fts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, subject, predicate, object) VALUES (new.pk, new.subject, new.predicate, new.object);
END;
CREATE TRIGGER facts_fts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, subject, predicate, object)
        VALUES ('delete', old.pk, old.subject, old.predicate, old.object);
    DELETE FROM vectors WHERE kind = 'fact' AND item_pk = old.pk;
END;
CREATE TRIGGER blocks_vectors_ad AFTER DELETE ON blocks BEGIN
    DELETE FROM vectors WHERE kind = 'block' AND item_pk = old.pk;
END;
CREATE TRIGGER scratchpad_vectors_ad AFTER DELETE ON scratchpad BEGIN
    DELETE FROM vectors WHERE kind = 'scratchpad' AND item_pk = old.pk;
END;
"""


def _m002_search(conn: Connection) -> None:
    schema.Base.metadata.create_all(conn, tables=[schema.vectors_t])
    for statement in _split(_SEARCH_DDL):
        conn.exec_driver_sql(statement)
    # Rows written before this migration join the keyword indexes now.
    conn.exec_driver_sql("INSERT INTO episodes_fts(episodes_fts) VALUES ('rebuild')")
    conn.exec_driver_sql("INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')")


def _m003_audit(conn: Connection) -> None:
    schema.Base.metadata.create_all(conn, tables=[schema.audit_t])


def _split(script: str) -> list[str]:
    """Split DDL on statement ends, keeping trigger bodies (which contain ';') whole."""
    statements, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current).strip()
        if joined.endswith(";") and (not joined.upper().startswith("CREATE TRIGGER") or joined.endswith("END;")):
            statements.append(joined)
            current = []
    return statements


MIGRATIONS: list[Callable[[Connection], None]] = [_m001_core, _m002_search, _m003_audit]
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
