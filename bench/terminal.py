"""A program in a real pseudo-terminal, its screen read through pyte: timings as a user sees them."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pyte

# Textual asks whether the terminal supports synchronized output and, when it does (tmux,
# kitty, WezTerm, Windows Terminal...), wraps every frame in one: answered as they answer it,
# the end of each frame is visible in the output.
SYNC_QUERY, SYNC_SUPPORTED = b"\x1b[?2026$p", b"\x1b[?2026;2$y"
END_OF_FRAME = b"\x1b[?2026l"


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str], columns: int = 150, lines: int = 45):
        self.screen = pyte.Screen(columns, lines)
        self.stream = pyte.ByteStream(self.screen)
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"}, start_new_session=True
        )
        os.close(slave)
        self.pending = b""  # read but not yet fed to the screen
        self._tail = b""

    def read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return b""
        try:
            chunk = os.read(self.master, 1 << 16)
        except OSError:  # the program has exited
            return b""
        if SYNC_QUERY in self._tail + chunk:
            os.write(self.master, SYNC_SUPPORTED)
        self._tail = chunk[1 - len(SYNC_QUERY) :]  # a query cut in two by the read
        return chunk

    def text(self) -> str:
        if self.pending:
            self.stream.feed(self.pending)
            self.pending = b""
        return "\n".join(self.screen.display)

    def wait_for_text(self, needle: str, timeout: float = 60.0) -> float:
        """Seconds from launch until ``needle`` is on screen.

        Timed by the raw output (a frame is written at once, so the rest of the one holding the
        needle is there too) rather than by this emulator's pure-Python parsing, which takes
        longer for a full screen than for one line; the parsed screen is checked afterwards."""
        deadline = time.perf_counter() + timeout
        wanted, seen = needle.encode(), b""
        while time.perf_counter() < deadline:
            chunk = self.read(0.005)
            if chunk:
                seen += chunk
                if wanted in seen:
                    arrived = time.perf_counter() - self.started
                    self.pending += seen
                    if needle not in self.text():
                        raise RuntimeError(f"{needle!r} was written but is not on screen:\n{self.text()}")
                    return arrived
            elif self.proc.poll() is not None:
                break
        self.pending += seen
        raise RuntimeError(f"{needle!r} never appeared; the screen was:\n{self.text()}")

    def wait_for_frame_with(self, marker: bytes, timeout: float = 30.0) -> float:
        """perf_counter() when a whole frame holding ``marker`` has been written to the terminal."""
        return self.wait_for_frames_with(marker, timeout=timeout)[0]

    def wait_for_frames_with(self, *markers: bytes, timeout: float = 30.0) -> list[float]:
        """perf_counter() when a whole frame holding each marker has been written to the terminal.

        Looks for the markers in the raw output and then for the end of each one's frame, so the
        times do not include this emulator's (slow, pure-Python) parsing; the screen is updated
        after. Two markers may arrive in one read: they then share its time."""
        deadline = time.perf_counter() + timeout
        seen, arrived = b"", {}
        while time.perf_counter() < deadline and len(arrived) < len(markers):
            chunk = self.read(0.05)
            if not chunk:
                if self.proc.poll() is not None:
                    break
                continue
            seen += chunk
            now = time.perf_counter()
            for marker in markers:
                at = seen.find(marker)
                if marker not in arrived and at >= 0 and END_OF_FRAME in seen[at:]:
                    arrived[marker] = now
        self.pending += seen
        if len(arrived) < len(markers):
            missing = [m for m in markers if m not in arrived]
            raise RuntimeError(f"{missing!r} never arrived; the screen was:\n{self.text()}")
        return [arrived[m] for m in markers]

    def cpu_seconds(self) -> float:
        """CPU time the program has used so far, all its threads (Linux: /proc/PID/stat)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        os.close(self.master)
