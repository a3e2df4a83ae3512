"""The PostgreSQL spelling of the statements the services ask the backend for (the ``Sql``
interface), run through the store's own tables on the PostgreSQL schema, in the shapes the
services use them."""

import json

import numpy as np
import pytest
from sqlalchemy import exists, literal_column, select

from store.schema import audit_t, checkpoints_t, episodes_t, meta_t, sessions_t, tenants_t, to_micros, vectors_t
from store.tenancy import Tenant

from .conftest import T0

pytest.importorskip("psycopg")
from store.backend.postgres.sql import SQL  # noqa: E402

from .pg_support import migrated_engine  # noqa: E402

ALICE = Tenant("alice")


@pytest.fixture
def pg(pg_url):
    e = migrated_engine(pg_url, 4, [ALICE])
    yield e
    e.dispose()


def session(conn) -> int:
    SQL.upsert(conn, sessions_t, ALICE.stamp({"session_id": "s", "created_at": T0, "updated_at": T0}), ["user_id", "session_id"], None)
    return conn.execute(ALICE.select(sessions_t, sessions_t.c.pk)).scalar()


def test_upsert_inserts_updates_or_leaves_alone(pg):
    with pg.begin() as conn:
        SQL.upsert(conn, meta_t, {"key": "k", "value": "1"}, ["key"], {"value": "1"})
        SQL.upsert(conn, meta_t, {"key": "k", "value": "2"}, ["key"], {"value": "2"})
        SQL.upsert(conn, tenants_t, ALICE.stamp({"created_at": T0, "last_activity": T0}), ["user_id"], None)
        SQL.upsert(conn, tenants_t, ALICE.stamp({"created_at": T0, "last_activity": T0.replace(year=2027)}), ["user_id"], None)
        first = session(conn)
        assert session(conn) == first
        assert conn.execute(select(meta_t.c.value).where(meta_t.c.key == "k")).scalar() == "2"
        assert conn.execute(ALICE.select(tenants_t, tenants_t.c.last_activity)).scalar() == T0


def test_replace_round_trips_float32_vectors_and_moves_the_row_version(pg):
    old, new = np.arange(4, dtype=np.float32) / 3, np.array([0.1, -2.5, 3e-5, 7], dtype=np.float32)
    row = ALICE.stamp({"kind": "episode", "item_pk": 2**40, "content_hash": "a", "vector": old.tobytes()})
    version = ALICE.select(vectors_t, vectors_t.c.content_hash, vectors_t.c.vector, SQL.row_version(vectors_t))
    with pg.begin() as conn:
        SQL.replace(conn, vectors_t, [row])
        _, stored, before = conn.execute(version).one()
    assert stored == old.tobytes()
    with pg.begin() as conn:
        SQL.replace(conn, vectors_t, [{**row, "content_hash": "b", "vector": new.tobytes()}])
        content_hash, stored, after = conn.execute(version).one()
        assert conn.execute(ALICE.select(vectors_t, vectors_t.c.item_pk)).scalars().all() == [2**40]
    assert (content_hash, stored) == ("b", new.tobytes()) and after != before


def test_insert_keyed_returns_keys_in_input_order(pg):
    rows = [
        ALICE.stamp(
            {
                "id": f"e{i}",
                "session_id": None,
                "occurred_at": T0,
                "input": str(i),
                "output": "",
                "tool_calls": "[]",
                "metadata": "{}",
                "content_hash": "h",
            }
        )
        for i in reversed(range(1500))
    ]  # past one RETURNING batch
    with pg.begin() as conn:
        pks = SQL.insert_keyed(conn, episodes_t, rows)
        by_pk = dict(conn.execute(ALICE.select(episodes_t, episodes_t.c.pk, episodes_t.c.id)).all())
    assert [by_pk[pk] for pk in pks] == [row["id"] for row in rows]


def test_json_items_and_fields_as_forget_reads_a_checkpoint_snapshot(pg):
    snapshot = {"scratchpad": [{"content": "old", "created_at": to_micros(T0) - 5}, {"content": "new", "created_at": to_micros(T0) + 5}]}
    with pg.begin() as conn:
        pk = session(conn)
        conn.execute(
            checkpoints_t.insert().values(
                ALICE.stamp({"id": "c1", "session_pk": pk, "description": "", "created_at": T0, "snapshot": json.dumps(snapshot)})
            )
        )

        def holds_note_before(micros: int) -> bool:
            held = SQL.json_array_items(checkpoints_t.c.snapshot, "$.scratchpad", name="j")
            older = exists(select(literal_column("1")).select_from(held).where(SQL.json_field(held.c.value, "$.created_at") < micros))
            return conn.execute(ALICE.select(checkpoints_t, checkpoints_t.c.id).where(older)).first() is not None

        assert holds_note_before(to_micros(T0)) and not holds_note_before(to_micros(T0) - 5)
        # Numbers compare as numbers, not as text ("9" > "10" as strings).
        assert holds_note_before(to_micros(T0) * 10)


def test_json_items_of_a_plain_array_are_bare_strings(pg):
    with pg.begin() as conn:
        items = SQL.json_array_items(literal_column('\'["e1", "e2"]\''), name="s")
        assert sorted(conn.execute(select(items.c.value).where(items.c.value.in_(["e2", "e3"]))).scalars()) == ["e2"]


def test_json_set_adds_fields_with_json_types(pg):
    with pg.begin() as conn:
        conn.execute(
            audit_t.insert().values(
                ALICE.stamp({"at": T0, "actor": "dpo", "action": "forget", "scope": json.dumps({"a": 1}), "counts": "{}", "digest": "d"})
            )
        )
        conn.execute(audit_t.update().values(scope=SQL.json_set(audit_t.c.scope, {"$.disk_scrubbed": True, "$.scrubbed_at": "2026"})))
        assert json.loads(conn.execute(select(audit_t.c.scope)).scalar()) == {"a": 1, "disk_scrubbed": True, "scrubbed_at": "2026"}
