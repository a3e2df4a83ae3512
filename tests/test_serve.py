"""`memlens serve` in a real browser: Debian's headless Chromium and chromedriver, driven by selenium.

textual-serve draws the inspector with xterm.js on a canvas, so the page holds no text to read.
What the browser received is read instead: a script installed before the page's own wraps its
WebSocket and keeps every binary message (the inspector's terminal output, as textual-serve
forwards it), and a terminal emulator (pyte) replays them into a screen. Keys are typed into
xterm.js's own input, as a user's are.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pyte
import pytest

from .inspector_support import make_demo
from .test_e2e import memlens_command

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver; .ci/run does)",
    ),
]

RECORD_OUTPUT = """
window.memlensOutput = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) window.memlensOutput.push(Array.from(new Uint8Array(event.data)));
    });
  }
};
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, server: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"memlens serve exited with {server.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"memlens serve never listened on {port}")


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on ``port`` (Linux's /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


class Browser:
    """One page of the served inspector and the screen replayed from what it received."""

    def __init__(self, url: str):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM or ""
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_OUTPUT})
        self.screen = pyte.Screen(240, 80)  # larger than the page's terminal: Textual draws from the top left
        self.stream = pyte.ByteStream(self.screen)
        self.driver.get(url)

    def text(self) -> str:
        received = self.driver.execute_script("const out = window.memlensOutput || []; window.memlensOutput = []; return out;")
        for chunk in received:
            self.stream.feed(bytes(chunk))
        return "\n".join(self.screen.display)

    def wait_for(self, needle: str, timeout: float = 90.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in (screen := self.text()):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{needle!r} never appeared in the browser; the screen was:\n{self.text()}")

    def type(self, keys: str) -> None:
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea").send_keys(keys)

    def close(self) -> None:
        self.driver.quit()


@pytest.mark.model
def test_the_inspector_served_to_a_browser_searches_and_asks_before_erasing(tmp_path: Path):
    from selenium.webdriver.common.keys import Keys

    demo = make_demo(tmp_path / "demo.db", embedder="default")
    port = free_port()
    server = subprocess.Popen(
        [*memlens_command(), "serve", "--port", str(port), str(demo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    browser = None
    try:
        wait_for_port(port, server)
        if Path("/proc/net/tcp").exists():  # 127.0.0.1 only, never every interface (0.0.0.0 or ::)
            assert listening_addresses(port) == {"0100007F"}
        browser = Browser(f"http://127.0.0.1:{port}")
        screen = browser.wait_for("model ready")
        assert "alice" in screen and "bob" in screen  # the demo's tenants, listed
        browser.type("/vegetarian food")
        screen = browser.wait_for("results · semantic + keyword")
        assert "vegetarian" in screen.lower()
        browser.type(Keys.ESCAPE)
        browser.wait_for("q Quit")
        browser.type("f")
        screen = browser.wait_for("Erase memory of")  # the confirmation; nothing is erased without it
        assert "Cancel" in screen
        browser.type(Keys.ESCAPE)
    finally:
        if browser is not None:
            browser.close()
        os.killpg(server.pid, signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert f"http://127.0.0.1:{port} (this machine only)" in output


def test_serve_refuses_a_store_that_does_not_exist(tmp_path: Path):
    done = subprocess.run([*memlens_command(), "serve", str(tmp_path / "missing.db")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert not (tmp_path / "missing.db").exists()


ATTACKER_PAGE = """<!doctype html><title>another site</title><script>
window.attempts = [];
function attempt(url) {
  const socket = new WebSocket(url);
  const seen = {url: url, events: []};
  window.attempts.push(seen);
  for (const kind of ["open", "message", "error", "close"]) socket.addEventListener(kind, () => seen.events.push(kind));
}
attempt("ws://127.0.0.1:PORT/ws/TOKEN");
attempt("ws://localhost:PORT/ws/TOKEN");
attempt("ws://127.0.0.1:PORT/ws");
</script>"""


def test_a_page_of_another_origin_cannot_open_the_served_inspector(tmp_path: Path):
    """A real browser on a page served from another origin (another port is another origin) that
    knows the socket's token, as if it had leaked: every socket it opens is refused, and no
    inspector starts."""
    import http.server
    import re
    import threading
    import urllib.request

    from store import MemoryStore

    with MemoryStore.open(tmp_path / "served.db") as store:
        store.remember("I am allergic to peanuts", "Noted.", user_id="alice")
    port = free_port()
    server = subprocess.Popen(
        [*memlens_command(), "serve", "--port", str(port), str(tmp_path / "served.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    attacker = browser = None
    try:
        wait_for_port(port, server)
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read().decode()
        token = re.search(r"/ws/([A-Za-z0-9_-]+)", page).group(1)  # type: ignore[union-attr]
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "index.html").write_text(ATTACKER_PAGE.replace("PORT", str(port)).replace("TOKEN", token))

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(tmp_path / "site"), **kwargs)

            def log_message(self, *args) -> None:
                pass

        attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        threading.Thread(target=attacker.serve_forever, daemon=True).start()
        browser = Browser(f"http://127.0.0.1:{attacker.server_address[1]}/index.html")
        deadline = time.monotonic() + 30
        attempts: list[dict] = []
        while time.monotonic() < deadline:
            attempts = browser.driver.execute_script("return window.attempts || [];")
            if len(attempts) == 3 and all("close" in seen["events"] for seen in attempts):
                break
            time.sleep(0.2)
        assert len(attempts) == 3
        for seen in attempts:
            assert seen["events"] == ["error", "close"], seen  # never "open", never a byte of the inspector
        # The server's descendants share its session: none of them is an inspector.
        children = subprocess.run(
            ["pgrep", "-s", str(server.pid), "-f", r"^[^ ]*python[0-9.]* -m inspector\.cli\.served_page"], capture_output=True, text=True
        ).stdout.split()
        assert children == []
    finally:
        if browser is not None:
            browser.close()
        if attacker is not None:
            attacker.shutdown()
        os.killpg(server.pid, signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert "Traceback" not in output
