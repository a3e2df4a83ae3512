import asyncio
import inspect

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
