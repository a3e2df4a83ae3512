"""The tenant partition: enforced in one place, never crossed, the anonymous bucket included."""

import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import store
from store import MemoryStore
from store.errors import InvalidInputError, IsolationWarning

TENANTS = [None, "alice", "bob", "Alice", "alice@example.com"]


# Every way code names the column: as a table attribute, by key, as an upsert's conflict target,
# or as a bare column. ("user_id" as a key of an export record or an error's field is public
# output, not the column.)
USER_ID_COLUMN = re.compile(
    r"""\.c\.user_id\b|\.c\[["']user_id["']\]|index_elements\s*=\s*\[[^\]]*["']user_id["']|column\(\s*["']user_id["']"""
)


def test_only_tenancy_module_names_the_user_id_column():
    root = Path(store.__file__).parent
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name not in {"tenancy.py", "schema.py"} and USER_ID_COLUMN.search(p.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "line",
    [
        "t.c.user_id == key",
        't.c["user_id"]',
        'stmt.on_conflict_do_nothing(index_elements=["user_id", "session_id"])',
        "literal_column('user_id')",
    ],
)
def test_the_column_check_sees_each_form(line):
    assert USER_ID_COLUMN.search(line)


def test_call_without_user_id_warns_only_when_named_users_exist(store):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.update_block("b", "anonymous content")  # no named users yet: no warning
    store.update_block("b", "alice content", user_id="alice")
    with pytest.warns(IsolationWarning):
        assert [b.content for b in store.working()] == ["anonymous content"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [b.content for b in store.working(user_id=None)] == ["anonymous content"]


@pytest.mark.parametrize("bad", ["", " alice", "a\x00b", 42, "x" * 300])
def test_bad_user_ids_are_refused(store, bad):
    with pytest.raises(InvalidInputError):
        store.working(user_id=bad)


def test_anonymous_bucket_is_its_own_partition(store):
    store.remember("anon secret", user_id=None, session_id="s")
    store.remember("alice secret", user_id="alice", session_id="s")
    assert [e.input for e in store.episodes(user_id=None).items] == ["anon secret"]
    assert [e.input for e in store.episodes(user_id="alice").items] == ["alice secret"]
    assert [m.content for m in store.session_messages("s", user_id=None)] == ["anon secret"]


OPS = st.lists(
    st.tuples(
        st.sampled_from(["block", "append", "episode", "fact", "kv", "task", "note", "checkpoint", "delete_block"]),
        st.sampled_from(range(len(TENANTS))),
        st.sampled_from(["s1", "s2"]),
        st.text(alphabet="abcxyz", min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=30,
)


def apply(s: MemoryStore, op, tenant, session, word):
    token = f"{word}@{tenant!r}"  # content names its owner, so any leak is visible
    if op == "block":
        s.update_block(word, token, user_id=tenant)
    elif op == "append":
        s.append_block(word, token, user_id=tenant)
    elif op == "delete_block":
        s.delete_block(word, user_id=tenant)
    elif op == "episode":
        s.remember(token, token, user_id=tenant, session_id=session)
    elif op == "fact":
        s.add_fact(word, "p", token, user_id=tenant)
    elif op == "kv":
        s.session(session, user_id=tenant).set(word, token)
    elif op == "task":
        s.session(session, user_id=tenant).set_task_state(token)
    elif op == "note":
        s.session(session, user_id=tenant).append_scratchpad(token)
    elif op == "checkpoint":
        s.session(session, user_id=tenant).create_checkpoint(token)


def everything_visible_to(s: MemoryStore, tenant) -> str:
    parts = [repr(s.working(user_id=tenant)), repr(s.episodes(user_id=tenant, limit=1000).items)]
    parts.append(repr(s.facts(user_id=tenant, include_history=True)))
    parts.append(repr(s.profile(user_id=tenant)))
    for session in ("s1", "s2"):
        mem = s.session(session, user_id=tenant)
        parts += [repr(mem.get_all()), repr(mem.get_task_state()), repr(mem.get_scratchpad())]
        parts += [repr(mem.list_checkpoints()), repr(s.session_messages(session, user_id=tenant))]
        parts += [repr(mem.diff_checkpoint(c.id)) for c in mem.list_checkpoints()]
    return "\n".join(parts)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_random_operations_never_leak_between_tenants(tmp_path_factory, request, backend, ops):
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("iso") / "m.db"
    else:
        path = request.getfixturevalue("pg_server").fresh_database()
    with MemoryStore.open(path) as s:
        for op, index, session, word in ops:
            apply(s, op, TENANTS[index], session, word)
        for tenant in TENANTS:
            seen = everything_visible_to(s, tenant)
            for other in TENANTS:
                if other != tenant:
                    assert f"@{other!r}" not in seen, f"{other!r} leaked into {tenant!r}"


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.remember("no user"),
        lambda s: s.recall("anything"),
        lambda s: s.recall_facts("anything"),
        lambda s: s.warm_vectors(),
        lambda s: s.require_tenant(missing_ok=True),
        lambda s: s.audit_log(),
        lambda s: s.working(),
        lambda s: s.remember_many([{"input": "no user"}]),
        lambda s: s.session("x"),
    ],
    ids=["remember", "recall", "recall_facts", "warm_vectors", "require_tenant", "audit_log", "working", "remember_many", "session"],
)
def test_the_isolation_warning_names_the_callers_line(db_path, call):
    """The façade resolves user_id once, in each public method, so the warning points at the
    line that called the store, whichever method (and service behind it) that was."""
    from store.embedding import FakeEmbedder
    from store.errors import IsolationWarning

    with MemoryStore.open(db_path, embedder=FakeEmbedder()) as s:
        s.remember("a named user", user_id="alice")
        with pytest.warns(IsolationWarning) as caught:
            call(s)
    assert [w.filename for w in caught] == [__file__]
