"""An agent process writing while another process reads (the inspector): no 'database is locked'."""

import multiprocessing as mp
import threading

from store import MemoryStore


def _writer(path: str, count: int, ready) -> None:
    with MemoryStore.open(path, embedder=None) as s:
        ready.set()
        for i in range(count):
            s.remember(f"turn {i}", f"reply {i}", user_id="agent", session_id="live")
            s.session("live", user_id="agent").set("last", i)


def _reader(path: str, rounds: int, ready, results) -> None:
    with MemoryStore.open(path, read_only=True, embedder=None) as s:
        ready.wait(30)
        seen = 0
        for _ in range(rounds):
            seen = max(seen, len(s.episodes(user_id="agent", limit=1000).items))
            s.tenants()
            s.session("live", user_id="agent").get("last")
        results.put(seen)


def test_writer_and_reader_processes_do_not_lock_each_other(db_path):
    MemoryStore.open(db_path).close()
    ctx = mp.get_context("spawn")
    ready, results = ctx.Event(), ctx.Queue()
    writer = ctx.Process(target=_writer, args=(str(db_path), 200, ready))
    readers = [ctx.Process(target=_reader, args=(str(db_path), 200, ready, results)) for _ in range(2)]
    for p in (writer, *readers):
        p.start()
    for p in (writer, *readers):
        p.join(120)
        assert p.exitcode == 0, "a process failed (see its traceback above)"
    assert all(results.get(timeout=5) >= 0 for _ in readers)
    with MemoryStore.open(db_path) as s:
        assert len(s.episodes(user_id="agent", limit=1000).items) == 200


def test_threads_share_one_store(store):
    errors = []

    def work(n):
        try:
            for i in range(50):
                store.remember(f"{n}-{i}", user_id=f"t{n}")
                store.working(user_id=f"t{n}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(t.counts.episodes for t in store.tenants()) == 200
