"""A watchman that kills a vLLM server's whole process tree when the harness dies, whatever kills it.

Why: the kernel's parent-death signal (set on the API server) kills only the API server. vLLM's
EngineCore, its workers and multiprocessing's resource tracker are children of the API server; when it
dies they are reparented to PID 1 and stay (seen: still alive a minute after a ``kill -9`` of the
harness). A process cannot run code after SIGKILL, so something outside it must notice.

How: ``Reaper.watch(pid)`` starts this module as a small process in its own session (so a Ctrl-C or
a signal to the harness's process group does not reach it) with the read end of a pipe as its stdin;
the harness keeps the write end. Every second the reaper records the server's descendants (pid and
start time). When the pipe closes without the word ``release`` (the harness died: the kernel closes its
end), it kills the server's process group and every recorded process still alive (checked by start
time, so a reused pid is never hit), then exits. ``Reaper.release()`` (the harness stopped the server
itself) writes the word and the reaper exits without killing anything.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

RELEASE = b"release\n"
POLL_S = 1.0


class Reaper:
    """The harness's side: start a watchman for ``pid`` (a process group leader), release it when done."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipe: int | None = None

    def watch(self, pid: int) -> None:
        """Start the watchman of the process group ``pid`` (the server, started in a session of its own)."""
        read, write = os.pipe()
        here = str(Path(__file__).resolve().parents[3])  # the folder holding this harness package
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "harness.engines.vllm.reaper", str(pid)], env=env,
                stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
        except OSError:
            os.close(write)
            raise
        finally:
            os.close(read)
        os.set_inheritable(write, False)  # no other child may hold the pipe open after the harness dies
        self._pipe = write

    def release(self) -> None:
        """The server is stopped: the watchman exits without killing anything."""
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.write(self._pipe, RELEASE)
            os.close(self._pipe)
            self._pipe = None
        if self._proc is not None:
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
            self._proc = None


def _descendants(pid: int, known: dict[int, float]) -> None:
    """Add ``pid``'s live descendants to ``known`` (pid -> start time): the ones that left its process
    group, and the ones reparented once ``pid`` dies, are then still known."""
    import psutil

    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                known.setdefault(p.pid, p.create_time())


def _kill(pgid: int, known: dict[int, float]) -> None:
    import psutil

    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
    for pid, started in known.items():
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            if p.create_time() == started:  # the same process, not a reused pid
                p.kill()


def main(argv: list[str]) -> int:
    """Watch the process group ``argv[1]`` until stdin says ``release`` (exit) or closes (kill it)."""
    pgid = int(argv[1])
    known: dict[int, float] = {}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the harness's to handle (it stops the server)

    def terminated(*_: object) -> None:
        _kill(pgid, known)
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminated)
    received = b""
    while True:
        _descendants(pgid, known)
        ready, _, _ = select.select([0], [], [], POLL_S)
        if not ready:
            continue
        chunk = os.read(0, 64)
        received += chunk
        if received.startswith(RELEASE):
            return 0
        if not chunk:  # the harness is gone
            _kill(pgid, known)
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
