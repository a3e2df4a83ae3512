"""The keyword statements are built once per tenant and filter shape and reused with new values:
whichever tenant, session or time range came before, a search sees only its own rows."""

from datetime import timedelta

from store import MemoryStore

from .conftest import T0


def test_reused_keyword_statements_keep_each_tenant_and_filter(db_path):
    with MemoryStore.open(db_path, embedder=None) as store:
        for user in ("ann", "bob"):
            store.remember_many(
                [{"input": f"invoice {user} {i}", "session_id": f"s{i % 3}", "occurred_at": T0 + timedelta(hours=i)} for i in range(12)],
                user_id=user,
            )
        everything = {user: store.recall("invoice", user_id=user, mode="keyword", limit=50) for user in ("ann", "bob")}
        assert {user: len(hits) for user, hits in everything.items()} == {"ann": 12, "bob": 12}
        cases = [
            {"session_id": "s1"},
            {"session_id": "s2"},
            {"time_range": (T0 + timedelta(hours=5), None)},
            {"time_range": (None, T0 + timedelta(hours=3))},
            {"time_range": (T0 + timedelta(hours=2), T0 + timedelta(hours=4))},
            {},
        ]
        for _ in range(2):
            for case in cases:
                for user in ("bob", "ann"):
                    start, end = case.get("time_range") or (None, None)
                    expected = [
                        h.id
                        for h in everything[user]
                        if case.get("session_id") in (None, h.session_id)
                        and (start is None or h.occurred_at >= start)
                        and (end is None or h.occurred_at < end)
                    ]
                    for prefix in (False, True):
                        hits = store.recall("invoi" if prefix else "invoice", user_id=user, mode="keyword", limit=50, prefix=prefix, **case)
                        assert sorted(h.id for h in hits) == sorted(expected) and all(user in h.text for h in hits)
