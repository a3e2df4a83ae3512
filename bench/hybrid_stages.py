"""Where a hybrid ``recall()`` spends its time, stage by stage, and what it would take on a quiet
machine (used by ``recall_targets.py``).

Each stage is a function hybrid recall calls, wrapped for the measurement and restored after:
wall time and CPU time of the thread it runs on (the caller's, or the encoder thread's for the
query's encoding and the vector search). On a loaded machine wall time is mostly waiting for a
core; CPU time is the work. The quiet-machine estimate of one call is the caller's CPU time plus
whatever the encoder thread's CPU time (encode, then vector search) exceeded the caller's CPU time
up to the point it waited for it: the two threads overlap on two cores. It assumes a free core
for each (onnxruntime's second thread makes three, so it is a lower bound on a 2-core machine) and
leaves out what the load costs in caches.
"""

from __future__ import annotations

import time

import store.recall.hits as hits
from store import testing
from store.recall import fusion
from store.recall.vectors import Vectors

CALLER, ENCODER = "caller", "encoder thread"
OTHER = "the rest: checks, read transaction, fusion, hits"
WAIT = "waiting for the vector side"
ORDER = [
    ("matrix fetched, erasures checked, search queued", CALLER),
    ("keyword query built (common words)", CALLER),
    ("keyword search (FTS5)", CALLER),
    ("exact-identifier candidates", CALLER),
    ("query encoded (onnx)", ENCODER),
    ("vector search (approximate + exact re-rank)", ENCODER),
    (WAIT, CALLER),
    ("candidate texts read", CALLER),
    ("cosines of keyword-only candidates", CALLER),
    ("hybrid ordering (coverage, exact ids)", CALLER),
    ("matched words marked (highlight)", CALLER),
    ("hits built (rows kept from the texts read)", CALLER),
    (OTHER, CALLER),
]
THREAD = dict(ORDER)


class _TimedFuture:
    def __init__(self, future, stages: Stages):
        self._future, self._stages = future, stages

    def done(self) -> bool:
        return self._future.done()

    def result(self):
        self._stages.before_wait = time.thread_time() - self._stages.call_cpu
        with self._stages.stage(WAIT):
            return self._future.result()


class Stages:
    """Wraps the stages of one store's hybrid recall until :meth:`remove`."""

    def __init__(self, store):
        self.store = store
        self.calls: list[dict[str, list[float]]] = []
        self.quiet: list[float] = []
        self.wall: list[float] = []
        self._current: dict[str, list[float]] = {}
        self._undo: list = []
        self.call_cpu = self.before_wait = 0.0
        index = testing.keyword_index(store)
        for name, label in (
            ("expression", "keyword query built (common words)"),
            ("episodes", "keyword search (FTS5)"),
            ("phrase_episodes", "exact-identifier candidates"),
            ("episode_highlights", "matched words marked (highlight)"),
        ):
            self._wrap(index, name, label, instance=True)
        self._wrap(testing.indexer(store), "encode_query", "query encoded (onnx)", instance=True)
        self._wrap(Vectors, "top_k", "vector search (approximate + exact re-rank)")
        self._wrap(hits.Recall, "episode_texts", "candidate texts read")
        self._wrap(hits.Recall, "fill_cosines", "cosines of keyword-only candidates")
        self._wrap(hits.Recall, "_episodes", "hits built (rows kept from the texts read)")
        self._wrap(fusion, "order", "hybrid ordering (coverage, exact ids)")
        job = hits.Recall.vector_job
        stages = self

        def vector_job(recall, *args):
            with stages.stage("matrix fetched, erasures checked, search queued"):
                future = job(recall, *args)
            return None if future is None else _TimedFuture(future, stages)

        hits.Recall.vector_job = vector_job
        self._undo.append(lambda: setattr(hits.Recall, "vector_job", job))

    def _wrap(self, owner, name: str, label: str, instance: bool = False) -> None:
        original = getattr(owner, name)
        stages = self

        def wrapper(*args, **kwargs):
            with stages.stage(label):
                return original(*args, **kwargs)

        setattr(owner, name, wrapper)
        self._undo.append((lambda: delattr(owner, name)) if instance else (lambda: setattr(owner, name, original)))

    def stage(self, label: str):
        stages = self

        class _Timer:
            def __enter__(self):
                self.wall, self.cpu = time.perf_counter(), time.thread_time()

            def __exit__(self, *exc):
                spent = stages._current.setdefault(label, [0.0, 0.0])
                spent[0] += time.perf_counter() - self.wall
                spent[1] += time.thread_time() - self.cpu

        return _Timer()

    def recall(self, query: str, **kwargs):
        self._current, self.before_wait = {}, 0.0
        wall, self.call_cpu = time.perf_counter(), time.thread_time()
        found = self.store.recall(query, **kwargs)
        caller_cpu = time.thread_time() - self.call_cpu
        self.wall.append(time.perf_counter() - wall)
        spent = self._current
        staged = sum(cpu for label, (_, cpu) in spent.items() if THREAD[label] == CALLER)
        spent[OTHER] = [0.0, caller_cpu - staged]
        encoder = sum(cpu for label, (_, cpu) in spent.items() if THREAD[label] == ENCODER)
        self.quiet.append(caller_cpu + max(0.0, encoder - self.before_wait))
        self.calls.append(spent)
        return found

    def remove(self) -> None:
        for undo in reversed(self._undo):
            undo()


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0.0


def print_stages(stages: Stages) -> None:
    n = len(stages.calls)
    print(f"Hybrid recall() by stage, {n} calls (each stage's time summed per call; ms):\n")
    print("| stage | thread | wall p50 | wall p95 | CPU p50 | CPU p95 | CPU mean |")
    print("|---|---|---|---|---|---|---|")
    for label, thread in ORDER:
        walls = [call.get(label, [0.0, 0.0])[0] for call in stages.calls]
        cpus = [call.get(label, [0.0, 0.0])[1] for call in stages.calls]
        wall = "-" if label == OTHER else f"{_pct(walls, 50) * 1e3:.2f} | {_pct(walls, 95) * 1e3:.2f}"
        wall = "- | -" if label == OTHER else wall
        print(f"| {label} | {thread} | {wall} | {_pct(cpus, 50) * 1e3:.2f} | {_pct(cpus, 95) * 1e3:.2f} | {sum(cpus) / n * 1e3:.2f} |")
    print(
        f"| recall(), whole call | caller | {_pct(stages.wall, 50) * 1e3:.2f} | {_pct(stages.wall, 95) * 1e3:.2f} | "
        f"{_pct(stages.quiet, 50) * 1e3:.2f} | {_pct(stages.quiet, 95) * 1e3:.2f} | {sum(stages.quiet) / n * 1e3:.2f} |"
    )
    print("\n(The whole call's CPU columns are the quiet-machine estimate: the caller's CPU time plus what the")
    print("encoder thread's exceeded the caller's own up to its wait.)")
