"""Full garbage collections wait for a pause in the typing (inspector/collecting.py): none runs
while searches are being asked for, one runs once the user pauses, and none is put off forever."""

from __future__ import annotations

import gc
import time

import pytest

from inspector import collecting
from inspector.collecting import IdleCollection


@pytest.fixture
def full_collections():
    """How many full collections have run since the fixture was made."""
    seen = [0]

    def callback(phase, info):
        if phase == "stop" and info["generation"] == 2:
            seen[0] += 1

    thresholds = gc.get_threshold()
    gc.callbacks.append(callback)
    yield seen
    gc.callbacks.remove(callback)
    gc.set_threshold(*thresholds)


def churn() -> None:
    """Enough surviving young objects for several collections of the middle generation."""
    kept = []
    for _ in range(40):
        kept.append([[i] for i in range(2000)])
        gc.collect(1)  # as Python would, after enough young collections


def test_while_typing_no_full_collection_runs_and_a_pause_runs_it(full_collections):
    collection = IdleCollection()
    collection.defer()
    try:
        full_collections[0] = 0
        churn()
        assert full_collections[0] == 0, "Python ran a full collection on its own while deferred"
        assert gc.get_count()[2] > 0
        assert not collection.collect_if_paused(last_asked=time.monotonic())  # typing: it waits
        assert full_collections[0] == 0
        assert collection.collect_if_paused(last_asked=time.monotonic() - collecting.PAUSE)  # paused
        assert full_collections[0] == 1
        assert not collection.collect_if_paused(last_asked=0.0)  # nothing pending any more
    finally:
        collection.restore()


def test_a_user_who_never_pauses_still_gets_a_full_collection(full_collections, monkeypatch):
    monkeypatch.setattr(collecting, "MOST_DEFERRED", 5)
    collection = IdleCollection()
    collection.defer()
    try:
        churn()
        assert collection.collect_if_paused(last_asked=time.monotonic())
        assert full_collections[0] == 1
    finally:
        collection.restore()


def test_python_s_own_thresholds_come_back(full_collections):
    before = gc.get_threshold()
    collection = IdleCollection()
    collection.defer()
    assert gc.get_threshold()[2] == collecting.NEVER and gc.get_threshold()[:2] == before[:2]
    collection.defer()  # twice changes nothing: restore still finds Python's own
    collection.restore()
    assert gc.get_threshold() == before


async def test_the_inspector_defers_while_open_and_restores_when_closed(tmp_path):
    from store import MemoryStore

    from .inspector_support import app_for, settle

    path = tmp_path / "one.db"
    with MemoryStore.open(path) as s:
        s.remember("booked the hotel in Lisbon", user_id="alice")
    before = gc.get_threshold()
    app = app_for(path, poll_seconds=0)
    async with app.run_test() as pilot:
        await settle(pilot, app)
        assert gc.get_threshold()[2] == collecting.NEVER
    assert gc.get_threshold() == before


async def test_the_apps_timers_and_late_messages_find_no_screen_once_it_has_exited(tmp_path):
    """Textual removes the screens before it stops the App's timers: a pause check or a change
    the poll found, arriving then, must not fail the exit (CI saw the pause check raise IndexError)."""
    from store import MemoryStore

    from .inspector_support import app_for, settle

    path = tmp_path / "one.db"
    with MemoryStore.open(path) as s:
        s.remember("booked the hotel in Lisbon", user_id="alice")
    app = app_for(path, poll_seconds=0)
    async with app.run_test() as pilot:
        await settle(pilot, app)
    assert not app.screen_stack
    app._collect_if_paused()
    app.on_store_changed()
