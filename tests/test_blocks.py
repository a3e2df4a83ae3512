import pytest

from store.errors import ContentTooLargeError


def test_update_keeps_the_slot_and_new_blocks_go_last(store):
    store.update_block("persona", "v1", user_id="u")
    store.update_block("goals", "g", user_id="u")
    store.update_block("persona", "v2", user_id="u")
    store.update_block("notes", "n", user_id="u")
    blocks = store.working(user_id="u")
    assert [(b.name, b.content, b.pinned_order) for b in blocks] == [
        ("persona", "v2", 0),
        ("goals", "g", 1),
        ("notes", "n", 2),
    ]


def test_append_creates_then_appends(store):
    store.append_block("log", "one", user_id="u")
    block = store.append_block("log", "two", user_id="u")
    assert block.content == "one\ntwo"


def test_append_past_the_limit_changes_nothing(tmp_path):
    from store import MemoryStore

    with MemoryStore.open(tmp_path / "s.db", max_content_bytes=10) as s:
        s.update_block("b", "12345678", user_id="u")
        with pytest.raises(ContentTooLargeError):
            s.append_block("b", "abc", user_id="u")
        assert s.get_block("b", user_id="u").content == "12345678"


def test_delete_block_frees_the_name(store):
    store.update_block("a", "1", user_id="u")
    assert store.delete_block("a", user_id="u") is True
    assert store.delete_block("a", user_id="u") is False
    assert store.working(user_id="u") == []
