"""End to end: the real `memlens` command in a real pseudo-terminal, read through a terminal emulator."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest

from .inspector_support import make_demo

COLUMNS, LINES = 150, 45


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str]):
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.ByteStream(self.screen)
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)

    def pump(self, seconds: float = 0.1) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    self.stream.feed(os.read(self.master, 65536))
                except OSError:
                    return

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.2)
            if needle in self.text():
                return self.text()
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"{needle!r} never appeared; the screen was:\n{self.text()}")

    def wait_for_footer(self, quit_shown: bool, timeout: float = 30.0) -> None:
        """Wait until the focus has moved as a key asked: the footer shows "q Quit" unless a text
        field has the focus (Escape is an ordinary binding: a key typed with it in one read goes
        to the widget Escape is leaving, as Textual queues keys per widget)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.1)
            if ("q Quit" in self.screen.display[-1]) == quit_shown:
                return
        raise AssertionError(f"the footer never {'showed' if quit_shown else 'hid'} q Quit; the screen was:\n{self.text()}")

    def type(self, keys: str) -> None:
        """Each key in a write of its own, as a person types; an escape sequence (an arrow key) is
        one key and one write, as a terminal sends it: written a byte at a time, a loaded machine
        can let Textual's wait for the rest of it pass, and read Escape, then "[B" as text."""
        for key in re.findall(r"\x1b\[[0-?]*[ -/]*[@-~]|.", keys, re.DOTALL):
            os.write(self.master, key.encode())
            self.pump(0.03)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        os.close(self.master)


def memlens_command() -> list[str]:
    found = shutil.which("memlens", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "inspector.cli"]


@pytest.mark.model
def test_the_memlens_command_shows_live_search_results_in_a_terminal(tmp_path):
    """Real command, real model, real terminal: type a query and read the results off the screen."""
    demo = make_demo(tmp_path / "demo.db", embedder="default")
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
    terminal = Terminal([*memlens_command(), str(demo)], env)
    try:
        terminal.wait_for("model ready")
        # "/" and the query in one write, as a fast typist's keys arrive: none may be lost on the
        # way into the search box.
        os.write(terminal.master, b"/vegetarian food")
        terminal.wait_for("vegetarian food")
        screen = terminal.wait_for("results · semantic + keyword")  # the search line: HYBRID · n results · …
        assert "Ao 26 Vegan" in screen or "vegetarian" in screen.lower()
        terminal.type("\x1b[B")  # ↓ goes into the results, where m searches the same query again by vectors alone
        terminal.wait_for("Mode")  # the results' own key in the footer: the focus is there
        terminal.type("\x1b[B")
        terminal.type("m")
        screen = terminal.wait_for("VECTOR · ")
        assert "vegetarian food" in screen  # the query stayed; m was a key, not text
        terminal.type("\x1b")  # Escape leaves the search field…
        terminal.wait_for_footer(quit_shown=True)
        terminal.type("q")  # …so q quits
        deadline = time.monotonic() + 120  # a hang guard, not a speed bound: a loaded machine may take seconds
        while terminal.proc.poll() is None and time.monotonic() < deadline:
            terminal.pump(0.1)
        assert terminal.proc.returncode == 0
    finally:
        terminal.close()


@pytest.mark.model
def test_quitting_during_the_first_model_export_ends_at_once_and_says_so(tmp_path):
    """The one-time ONNX export (~20 s) runs when the inspector starts on an empty model cache;
    q in the middle of it must end the process before the export ends (not after it, on a blank
    screen) and say so. Checked by what the export leaves, not by a clock: a loaded machine
    may take seconds to quit, but a quit that waited leaves the exported model in the cache."""
    from store import MemoryStore

    store_path = tmp_path / "empty.db"
    MemoryStore.open(store_path).close()  # opening does not load the model
    cache = tmp_path / "cache"
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES), "MEMLENS_CACHE_DIR": str(cache)}
    terminal = Terminal([*memlens_command(), str(store_path)], env)
    try:
        terminal.wait_for("model warming")
        terminal.pump(0.5)
        # The export is under way: its model is not in the cache yet. It takes ~20 s (importing
        # torch alone takes seconds), so q below reaches the App while it runs.
        assert not list(cache.rglob("*.onnx")), "the export ended before q could be pressed"
        terminal.type("q")
        # No time bound: a hang guard only. What proves the quit did not wait for the export is
        # the cache after the exit: a quit that waited for it leaves the exported model there.
        deadline = time.monotonic() + 300
        while terminal.proc.poll() is None and time.monotonic() < deadline:
            terminal.pump(0.05)
        assert terminal.proc.returncode == 0
        assert not list(cache.rglob("*.onnx")), "the process waited for the model export before it ended"
        terminal.pump(0.2)
        assert "model export" in terminal.text()  # what happened is said, not a blank screen
        assert not list(cache.rglob("*.partial"))
    finally:
        terminal.close()


PLANTED_FAULT = """
import inspector.screens.main

def planted(self):
    raise RuntimeError("a planted fault")

inspector.screens.main.MainScreen.action_help = planted
"""


def test_an_unexpected_error_ends_with_status_1_and_one_line_in_a_terminal(tmp_path):
    """An exception no handler catches (planted here, through sitecustomize, in the real command)
    ends the process with status 1 (it was 0) and one line saying what happened, not a traceback
    of every frame's variables, which hold the agent's memories."""
    demo = make_demo(tmp_path / "demo.db")
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(PLANTED_FAULT)
    root = str(Path(__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": str(COLUMNS),
        "LINES": str(LINES),
        "PYTHONPATH": os.pathsep.join([str(plant), root]),
    }
    env.pop("MEMLENS_DEBUG", None)
    terminal = Terminal([*memlens_command(), str(demo)], env)
    try:
        terminal.wait_for("q Quit")
        deadline = time.monotonic() + 120  # a hang guard
        pressed = 0.0
        while terminal.proc.poll() is None and time.monotonic() < deadline:
            # A key pressed while the first frame is being built may be dropped (by design, never
            # a crash): on a loaded machine the first "?" went missing and the test waited out its
            # guard, so it is pressed again until the fault fires.
            if time.monotonic() - pressed > 3:
                terminal.type("?")
                pressed = time.monotonic()
            terminal.pump(0.1)
        terminal.pump(0.3)
        assert terminal.proc.returncode == 1
        screen = terminal.text()
        lines = [line for line in screen.splitlines() if "memlens: the inspector stopped" in line]
        assert lines and "RuntimeError: a planted fault" in lines[0], screen
        assert "Traceback" not in screen and "locals" not in screen.lower()
    finally:
        terminal.close()


@pytest.mark.model
def test_keys_typed_while_the_demo_builds_reach_the_inspector_and_crash_nothing(tmp_path):
    """``memlens demo`` builds its store before the inspector exists; keys typed meanwhile wait in
    the terminal and arrive at the first frame all at once. A digit there once crashed the app
    (status 0, a traceback) and "/" lost the text after it; now the digit is kept for its view
    and the text after "/" lands in the search box."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
    terminal = Terminal([*memlens_command(), "demo", "--db", str(tmp_path / "demo.db")], env)
    try:
        terminal.wait_for("building the demo store")
        os.write(terminal.master, b"4/zqxjv")  # typed during the build, before any frame
        # The build echoes the keys on its own line; the inspector's screen replaces it, with the
        # text in the search box (a hang guard, not a speed bound: a cold model cache takes long).
        deadline = time.monotonic() + 240
        while True:
            terminal.pump(0.2)
            screen = terminal.text()
            assert terminal.proc.poll() is None, screen
            if "model ready" in screen and "building the demo store" not in screen:
                break
            assert time.monotonic() < deadline, screen
        (typed,) = [line for line in screen.splitlines() if "zqxjv" in line]
        assert "filter tenants" not in typed and "▊  zqxjv" in typed, screen  # the search box, not the tenant filter
        terminal.type("\x1b")
        terminal.wait_for_footer(quit_shown=True)
        terminal.type("q")
        deadline = time.monotonic() + 120  # a hang guard
        while terminal.proc.poll() is None and time.monotonic() < deadline:
            terminal.pump(0.1)
        assert terminal.proc.returncode == 0
    finally:
        terminal.close()


def test_the_inspector_refusing_a_store_exits_2_as_the_command_line_does(tmp_path):
    """Another application's file: the inspector says why and stays until q, then exits 2 with the
    reason on stderr, as `memlens stats` does for the same file (it exited 0)."""
    import sqlite3

    foreign = tmp_path / "notes.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    terminal = Terminal([*memlens_command(), str(foreign)], {**os.environ, "TERM": "xterm-256color"})
    try:
        terminal.wait_for("another application")
        terminal.type("q")
        terminal.proc.wait(30)
        assert terminal.proc.returncode == 2
    finally:
        terminal.close()
    stats = subprocess.run([*memlens_command(), "stats", str(foreign)], capture_output=True, text=True, timeout=60)
    assert stats.returncode == 2


def test_a_mistyped_command_is_not_taken_for_a_store(tmp_path):
    done = subprocess.run([*memlens_command(), "frobnicate"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "'frobnicate' is neither a command nor a store" in done.stderr
    done = subprocess.run([*memlens_command(), "exprot"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "did you mean export" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created
