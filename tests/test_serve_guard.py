"""`memlens serve` opens an inspector only for the page it served: every other way of asking for
the socket (another origin, a re-pointed host name, a wrong or missing token, one page too
many) is refused before any inspector process starts. Driven over real HTTP and WebSocket
against the real command; the browser-level refusal is in tests/test_serve.py."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import pytest

from store import MemoryStore

from .test_e2e import memlens_command
from .test_serve import free_port, wait_for_port


@pytest.fixture
def small_store(tmp_path: Path) -> Path:
    path = tmp_path / "served.db"
    with MemoryStore.open(path) as store:
        store.remember("I am allergic to peanuts", "Noted.", user_id="alice")
    return path


class Served:
    def __init__(self, *args: str):
        self.port = free_port()
        self.process = subprocess.Popen(
            [*memlens_command(), "serve", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
        )
        wait_for_port(self.port, self.process)
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> str:
        os.killpg(self.process.pid, signal.SIGTERM)
        output, _ = self.process.communicate(timeout=30)
        return output

    def children(self) -> int:
        """How many inspector processes the server has started and not yet ended."""
        found = subprocess.run(
            ["pgrep", "-s", str(self.process.pid), "-f", r"^[^ ]*python[0-9.]* -m inspector\.cli\.served_page"],
            capture_output=True,
            text=True,
        )
        return len(found.stdout.split())


@pytest.fixture
def served(small_store: Path):
    server = Served(str(small_store))
    yield server
    server.stop()


async def page_token(session: aiohttp.ClientSession, server: Served) -> str:
    async with session.get(server.base + "/") as response:
        assert response.status == 200
        page = await response.text()
    found = re.search(rf'data-session-websocket-url="ws://127\.0\.0\.1:{server.port}/ws/([A-Za-z0-9_-]+)"', page)
    assert found, "the served page names no socket with a token"
    return found.group(1)


async def socket_status(server: Served, path: str, headers: dict[str, str]) -> int:
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(server.base + path, headers=headers) as socket:
                await socket.receive(timeout=20)  # the inspector's first bytes
                return 101
        except aiohttp.WSServerHandshakeError as error:
            return error.status


async def test_only_the_served_page_may_open_the_inspector(served: Served):
    async with aiohttp.ClientSession() as session:
        token = await page_token(session, served)
    own = f"http://127.0.0.1:{served.port}"
    # Another site's page, even one that learnt the token.
    assert await socket_status(served, f"/ws/{token}", {"Origin": "http://evil.example"}) == 403
    assert await socket_status(served, f"/ws/{token}", {"Origin": "null"}) == 403
    # No origin at all (not a browser page).
    assert await socket_status(served, f"/ws/{token}", {}) == 403
    # The right origin without this start's token, and textual-serve's own unguarded path.
    assert await socket_status(served, "/ws/" + "A" * len(token), {"Origin": own}) == 403
    assert await socket_status(served, "/ws", {"Origin": own}) == 404
    # DNS rebinding: a page of evil.example whose name now points here names its own host.
    rebound = {"Host": f"evil.example:{served.port}", "Origin": f"http://evil.example:{served.port}"}
    assert await socket_status(served, f"/ws/{token}", rebound) == 403
    assert served.children() == 0  # nothing refused started an inspector
    assert await socket_status(served, f"/ws/{token}", {"Origin": own}) == 101


async def test_a_page_fetched_under_another_host_name_is_refused(served: Served):
    async with aiohttp.ClientSession() as session:
        async with session.get(served.base + "/", headers={"Host": f"evil.example:{served.port}"}) as response:
            assert response.status == 403
            assert "ws/" not in await response.text()  # the token is not handed out
        async with session.get(served.base + "/static/js/textual.js", headers={"Host": "evil.example"}) as response:
            assert response.status == 403
        async with session.get(f"http://localhost:{served.port}/") as response:
            assert response.status == 200  # this machine's own names for it are fine


async def test_one_page_more_than_the_cap_is_told_so(small_store: Path):
    server = Served("--max-sessions", "1", str(small_store))
    try:
        async with aiohttp.ClientSession() as session:
            token = await page_token(session, server)
            own = {"Origin": f"http://127.0.0.1:{server.port}"}
            async with session.ws_connect(f"{server.base}/ws/{token}", headers=own) as first:
                await first.receive(timeout=20)
                assert server.children() == 1
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    async with session.ws_connect(f"{server.base}/ws/{token}", headers=own):
                        pass
                assert refused.value.status == 503
            # The first page closed: its place is free again once its inspector has ended.
            for _ in range(50):
                if (status := await socket_status(server, f"/ws/{token}", own)) != 503:
                    break
                await asyncio.sleep(0.2)
            assert status == 101
    finally:
        server.stop()


def test_tokens_differ_between_starts(small_store: Path):
    async def one_token() -> str:
        server = Served(str(small_store))
        try:
            async with aiohttp.ClientSession() as session:
                return await page_token(session, server)
        finally:
            server.stop()

    assert asyncio.run(one_token()) != asyncio.run(one_token())


def test_another_host_needs_expose(small_store: Path):
    done = subprocess.run([*memlens_command(), "serve", "--host", "0.0.0.0", str(small_store)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--expose" in done.stderr and "every machine" in done.stderr


@pytest.mark.parametrize("what", ["folder", "foreign"])
def test_serve_refuses_what_every_page_would_fail_to_open(tmp_path: Path, what: str):
    target = tmp_path / "thing"
    if what == "folder":
        target.mkdir()
    else:
        import sqlite3

        with sqlite3.connect(target) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
    done = subprocess.run([*memlens_command(), "serve", str(target)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "serving" not in done.stdout


async def test_a_server_password_is_in_no_output_nor_page(pg_url: str):
    MemoryStore.open(pg_url).close()
    parts = urlsplit(pg_url)
    user = parts.username or "postgres"
    secret = "S3cret-pass-word"
    netloc = f"{user}:{secret}@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    with_password = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    server = Served(with_password)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(server.base + "/") as response:
                page = await response.text()
        assert secret not in page
    finally:
        output = server.stop()
    assert secret not in output
    assert "serving the inspector" in output
