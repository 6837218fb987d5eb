"""Hostile scripts end as errors within their limits, and the next call still works; scripts cannot
reach the host's files, processes, network or environment."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from harness.sandbox import ExecutionError, LimitError, Limits, load_script, run_script

TIGHT = Limits(max_memory="8mb", max_duration="300ms", max_recursion=100, max_sleep="200ms", wall_clock="1s")

SLOW_EXTERNAL = '''
"""Waits on the host."""
from harness.sandbox import external


@external
def wait() -> str:
    ...


wait()
'''


@pytest.fixture
def healthy(write_script):
    """A normal script: after every hostile run, the sandbox must still answer it."""
    script = load_script(write_script('"""Fine."""\nsum(range(10))\n', name="healthy.pym"))

    async def check() -> None:
        assert await run_script(script, {}, limits=TIGHT) == 45

    return check


@pytest.mark.parametrize(
    ("source", "limit"),
    [
        ('"""Endless loop."""\nwhile True:\n    pass\n', "duration"),
        ('"""Memory bomb."""\nx = []\nwhile True:\n    x.append("a" * 100000)\n', "memory"),
        ('"""One big allocation."""\ns = "a" * 10**9\n', "memory"),
        ('"""Deep recursion."""\ndef f(n):\n    return f(n + 1)\n\n\nf(0)\n', "recursion"),
        ('"""Sleeps past its budget."""\nimport time\ntime.sleep(0.15)\ntime.sleep(0.15)\n', "sleep"),
    ],
    ids=["endless-loop", "memory-bomb", "huge-string", "deep-recursion", "sleep"],
)
async def test_runaway_scripts_hit_their_limit(write_script, healthy, source: str, limit: str) -> None:
    script = load_script(write_script(source))
    with pytest.raises(LimitError) as err:
        await run_script(script, {}, limits=TIGHT)
    assert err.value.limit == limit
    await healthy()


async def test_slow_async_external_is_cut_by_the_wall_clock(write_script, healthy) -> None:
    script = load_script(write_script(SLOW_EXTERNAL))
    cancelled = asyncio.Event()

    async def wait() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    with pytest.raises(LimitError) as err:
        await run_script(script, {}, externals={"wait": wait}, limits=TIGHT)
    assert err.value.limit == "wall_clock"
    await asyncio.wait_for(cancelled.wait(), 5)  # the host coroutine was cancelled, not left running
    await healthy()


async def test_slow_sync_external_is_cut_by_the_wall_clock(write_script, healthy) -> None:
    script = load_script(write_script(SLOW_EXTERNAL))

    def wait() -> str:
        time.sleep(1.5)  # blocks its sandbox thread; the caller is answered at the wall clock
        return "late"

    with pytest.raises(LimitError) as err:
        await run_script(script, {}, externals={"wait": wait}, limits=Limits(wall_clock="300ms"))
    assert err.value.limit == "wall_clock"
    await healthy()  # another worker and thread serve the next call meanwhile


@pytest.mark.parametrize(
    ("source", "exc_type"),
    [
        ('"""Reads a host file."""\nopen("/etc/passwd").read()\n', "FileNotFoundError"),
        (
            '"""Reads a host file."""\nfrom pathlib import Path\nPath("/etc/hostname").read_text()\n',
            "FileNotFoundError",
        ),
        (
            '"""Climbs out."""\nfrom pathlib import Path\nPath("/fs/../../../etc/passwd").read_text()\n',
            "FileNotFoundError",
        ),
        (
            '"""Writes a virtual file."""\nfrom pathlib import Path\nPath("/fs/x.txt").write_text("x")\n',
            "PermissionError",
        ),
        ('"""Spawns."""\nimport subprocess\n', "ModuleNotFoundError"),
        ('"""Networks."""\nimport socket\n', "ModuleNotFoundError"),
        ('"""Shell."""\nimport os\nos.system("id")\n', "AttributeError"),
        ('"""Imports dynamically."""\n__import__("os")\n', "NameError"),
    ],
    ids=[
        "open-etc-passwd",
        "pathlib-host-file",
        "dotdot-escape",
        "write",
        "subprocess",
        "socket",
        "os-system",
        "dunder-import",
    ],
)
async def test_host_is_out_of_reach(write_script, healthy, source: str, exc_type: str) -> None:
    script = load_script(write_script(source), type_check=False)  # some do not even type-check
    with pytest.raises(ExecutionError) as err:
        await run_script(script, {}, files={"/fs/x.txt": "virtual"}, limits=TIGHT)
    assert err.value.exc_type == exc_type
    await healthy()


async def test_host_environment_is_invisible(write_script, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_TEST_SECRET", "s3cr3t")
    script = load_script(
        write_script('''
        """Reads the environment."""
        import os

        [os.getenv("HARNESS_TEST_SECRET"), os.getenv("HOME"), dict(os.environ)]
        ''')
    )
    assert os.environ["HARNESS_TEST_SECRET"] == "s3cr3t"
    assert await run_script(script, {}) == [None, None, {}]
    assert await run_script(script, {}, environ={"ONLY": "this"}) == [None, None, {"ONLY": "this"}]
