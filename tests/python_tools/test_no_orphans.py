"""No process a Python tool starts outlives its call, its worker, or the harness: a double-forked
``setsid`` daemon, a thread left running, a worker whose harness is killed with SIGKILL mid-call.
Counted by listing processes (each test marks its own with a unique ``sleep`` argument)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest

from harness.tools.python.client import WorkerClient, WorkerFailure, WorkerSettings

TOOLS = textwrap.dedent('''
    import os, subprocess, threading, time

    class Host:
        def daemon(self, mark: str) -> str:
            """Leaves a setsid daemon behind (double fork)."""
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execvp("sleep", ["sleep", mark])
                os._exit(0)
            time.sleep(0.3)  # the middle child has exited: the daemon is an orphan now
            return "started"

        def thread(self) -> str:
            """Leaves a thread running that never ends."""
            threading.Thread(target=lambda: time.sleep(10_000)).start()
            return "started"

        def hang(self, mark: str) -> str:
            """Starts a child and waits forever."""
            subprocess.Popen(["sleep", mark])
            time.sleep(10_000)
            return "never"
''')


def _marked(mark: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if mark in (p.info["cmdline"] or []):
            found.append(p)
    return found


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone(pids: list[int], within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    (tmp_path / "host_tools.py").write_text(TOOLS)
    return tmp_path


def _client(folder: Path) -> tuple[WorkerClient, str]:
    client = WorkerClient(WorkerSettings(classes={"Host": "host_tools:Host"}, search_path=(folder,), wall_clock=5.0))
    return client, asyncio.run(client.open(["Host"], {}))


def test_a_setsid_daemon_a_tool_leaves_is_killed_with_its_call(tools: Path) -> None:
    client, session = _client(tools)
    mark = f"{1000 + uuid.uuid4().int % 1000}.{os.getpid()}"
    try:
        answer = client.request({"op": "call", "session": session, "name": "daemon", "arguments": {"mark": mark}})
        assert answer.get("error") == "tool:error" and "killed" in answer["message"]
        assert _marked(mark) == []
    finally:
        client.close()


def _harness(tools: Path, script: str) -> subprocess.Popen[str]:
    """A harness of its own (a child process) driving a worker on the tools."""
    setup = textwrap.dedent(f'''
        import asyncio, sys
        from harness.tools.python.client import WorkerClient, WorkerSettings
        client = WorkerClient(WorkerSettings(classes={{"Host": "host_tools:Host"}}, search_path=({str(tools)!r},),
                                             wall_clock=600.0))
        session = asyncio.run(client.open(["Host"], {{}}))
        print(client._process.pid, flush=True)
    ''')
    return subprocess.Popen([sys.executable, "-c", setup + textwrap.dedent(script)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def test_a_thread_a_tool_leaves_running_does_not_keep_the_worker(tools: Path) -> None:
    harness = _harness(tools, '''
        client.request({"op": "call", "session": session, "name": "thread", "arguments": {}})
    ''')  # and the harness ends without closing its client
    assert harness.stdout is not None
    worker = int(harness.stdout.readline())
    assert harness.wait(60) == 0
    assert _gone([worker])


def test_killing_the_harness_mid_call_takes_the_worker_and_its_tools(tools: Path) -> None:
    mark = f"{2000 + uuid.uuid4().int % 1000}.{os.getpid()}"
    harness = _harness(tools, f'''
        client.request({{"op": "call", "session": session, "name": "hang", "arguments": {{"mark": {mark!r}}}}})
    ''')
    try:
        assert harness.stdout is not None
        worker = int(harness.stdout.readline())
        end = time.monotonic() + 20
        while not _marked(mark) and time.monotonic() < end:
            time.sleep(0.1)
        children = [p.pid for p in _marked(mark)]
        assert children, "the tool's child never started"
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        assert _gone([worker, *children])
    finally:
        if harness.poll() is None:
            harness.kill()


def test_a_cancelled_call_ends_now_not_at_its_wall_clock(tools: Path) -> None:
    """Ctrl-C, SIGTERM or a sample's timeout cancel the task: the call's worker is killed and replaced, so
    ``asyncio.run`` (which waits for its threads) returns at once instead of after the call's wall clock."""
    client = WorkerClient(WorkerSettings(classes={"Host": "host_tools:Host"}, search_path=(tools,), wall_clock=120.0))
    mark = f"{3000 + uuid.uuid4().int % 1000}.{os.getpid()}"

    async def cancel_mid_call() -> None:
        session = await client.open(["Host"], {})
        call = asyncio.create_task(client.arequest(
            {"op": "call", "session": session, "name": "hang", "arguments": {"mark": mark}}))
        end = time.monotonic() + 20
        while not _marked(mark) and time.monotonic() < end:
            await asyncio.sleep(0.05)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call

    started = time.monotonic()
    try:
        asyncio.run(cancel_mid_call())
        assert time.monotonic() - started < 30  # not the 120 s wall clock
        assert _marked(mark) == []
    finally:
        client.close()


def test_a_hanging_init_costs_the_open_bound_not_a_minute(tmp_path: Path) -> None:
    (tmp_path / "slow_tools.py").write_text("import time\nclass Slow:\n    def __init__(self):\n        time.sleep(600)\n"
                                            "    def go(self) -> str:\n        \"\"\"Go.\"\"\"\n        return 'ok'\n")
    client = WorkerClient(WorkerSettings(classes={"Slow": "slow_tools:Slow"}, search_path=(tmp_path,), wall_clock=1.0))
    started = time.monotonic()
    try:
        with pytest.raises(WorkerFailure) as failed:
            asyncio.run(client.open(["Slow"], {}))
        assert failed.value.kind == "tool:limit" and time.monotonic() - started < 30  # 2 x 1 s + 5 s, not 60 s
    finally:
        client.close()
