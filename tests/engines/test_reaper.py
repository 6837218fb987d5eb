"""The vLLM watchman (``harness.engines.vllm.reaper``) with real processes, no vLLM: a stand-in for the
harness starts a process tree in a session of its own (as the vLLM server runs) and a Reaper watching
it, then dies by SIGKILL; nothing of the tree may survive. The real thing (``harness run --engine vllm``
killed while vLLM starts and serves) is ``tests/real_vllm/test_no_orphans.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

from harness.engines.vllm.reaper import Reaper

GONE_S = 60.0
"""How long the tree may take to disappear (the reaper polls every second; a generous bound)."""

# The server: a child that starts a grandchild (as the API server starts EngineCore and its workers).
TREE = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
        "'import subprocess, sys, time; subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(600)\"]); "
        "time.sleep(600)']); time.sleep(600)")
HARNESS = ("import subprocess, sys, time\n"
           "from harness.engines.vllm.reaper import Reaper\n"
           f"server = subprocess.Popen([sys.executable, '-c', {TREE!r}], start_new_session=True)\n"
           "Reaper().watch(server.pid)\n"
           "print(server.pid, flush=True)\n"
           "time.sleep(600)\n")


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _wait(condition: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.2)


def test_sigkill_of_the_harness_kills_the_servers_whole_tree() -> None:
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, text=True)
    tree: list[psutil.Process] = []
    try:
        assert harness.stdout is not None
        server = int(harness.stdout.readline())
        _wait(lambda: len(_tree(server)) == 3, GONE_S)
        tree = _tree(server)
        assert len(tree) == 3
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(10)
        _wait(lambda: not _alive(tree), GONE_S)
        assert _alive(tree) == []
    finally:
        for p in tree:
            try:
                p.kill()
            except psutil.Error:
                pass
        harness.kill()


def test_a_released_reaper_exits_and_kills_nothing() -> None:
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        reaper = Reaper()
        reaper.watch(server.pid)
        watchman = reaper._proc
        reaper.release()
        assert watchman is not None and watchman.returncode == 0
        assert server.poll() is None  # the harness stops its server itself; the watchman does not
    finally:
        server.kill()
        server.wait(10)
