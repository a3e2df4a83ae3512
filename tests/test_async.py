import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path

from store import AsyncMemoryStore, MemoryStore


async def test_async_store_mirrors_the_sync_api(db_path):
    async with await AsyncMemoryStore.open(db_path) as s:
        public = {n for n, _ in inspect.getmembers(MemoryStore, inspect.isfunction) if not n.startswith("_")}
        for name in public - {"open", "close", "session"}:
            assert inspect.iscoroutinefunction(getattr(AsyncMemoryStore, name)), name
        await s.update_block("b", "v", user_id="u")
        e = await s.remember("q", "a", user_id="u", session_id="s")
        mem = s.session("s", user_id="u")
        await mem.set("k", 1)
        assert await mem.get("k") == 1
        assert (await s.working(user_id="u"))[0].content == "v"
        assert (await s.get_episode(e.id, user_id="u")).input == "q"


async def test_async_calls_do_not_block_the_event_loop(db_path):
    async with await AsyncMemoryStore.open(db_path) as s:
        ticks = 0

        async def heartbeat():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        beat = asyncio.create_task(heartbeat())
        await s.remember_many([{"input": f"e{i}" * 50} for i in range(3000)], user_id="u")
        beat.cancel()
        assert ticks > 10


def test_the_async_methods_are_generated_from_the_sync_ones():
    """``store/aio_methods.py`` is what ``python -m tests.aio_codegen`` writes from today's classes."""
    from . import aio_codegen

    assert aio_codegen.TARGET.read_text() == aio_codegen.formatted(aio_codegen.generate()), (
        "MemoryStore or SessionMemory changed: run `python -m tests.aio_codegen` and commit store/aio_methods.py"
    )


USER_PROGRAM = """
import asyncio
from store import AsyncMemoryStore, MemoryStore
from store.models import Block, RecallHit

async def main() -> None:
    async with await AsyncMemoryStore.open("m.db") as s:
        block: Block = await s.update_block("persona", "likes tea", user_id="alice")
        hits: list[RecallHit] = await s.recall("tea", user_id="alice", limit=3)
        await s.session("s1", user_id="alice").set("k", 1)
{wrong}

with MemoryStore.open("m.db") as sync:
    sync.remember("q", "a", user_id="alice")
"""


def _mypy(program: str, tmp_path) -> tuple[int, str]:
    (tmp_path / "user_program.py").write_text(program)
    root = Path(__file__).parent.parent
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(tmp_path / "user_program.py"),
        ],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "MYPYPATH": str(root)},
    )
    return done.returncode, done.stdout + done.stderr


def test_a_type_checker_sees_the_public_api(tmp_path):
    """A user's program type-checks against the store's signatures, async ones included, and a
    wrong argument is an error the checker names (with methods made at import time it saw none).
    One run: the one error reported is the planted one, so the rest of the program checks clean."""
    code, out = _mypy(USER_PROGRAM.format(wrong='        await s.recall("tea", user_id="alice", limit="three")'), tmp_path)
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert code == 1 and len(errors) == 1, out
    assert 'Argument "limit" to "recall" of "AsyncMemoryStoreMethods" has incompatible type "str"' in errors[0], out


def test_the_hand_written_async_methods_take_the_sync_ones_parameters():
    """open() and session() are written by hand (they return async objects): their parameters,
    defaults and annotations are the sync methods', so a new option cannot be left out of one."""
    for name in ("open", "session"):
        sync = inspect.signature(getattr(MemoryStore, name)).parameters
        async_ = inspect.signature(getattr(AsyncMemoryStore, name)).parameters
        assert list(async_.values()) == list(sync.values()), name
