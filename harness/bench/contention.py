"""``harness bench sandbox --contention``: slow tool calls against healthy ones in one sandbox pool.

For each kind of slow call (an external that blocks the host, an endless loop, a script that catches
its cancellation and spins), ``slow`` of them start at once, each under the default limits (wall clock
5 s, duration 2 s); a moment later a healthy call starts. The figures: when each slow call ended,
counted from when it was made (its wall clock is the bound users read), its error kinds, and how long
the healthy call took. Measured, never asserted (the tests assert the order of events instead).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from harness.bench.records import BenchRecord
from harness.sandbox import Limits, SandboxError, load_script, run_script

SLOW: dict[str, str] = {  # the blocking one last: its runners stay stuck in the external for 30 s
    "an endless loop": '"""Spins."""\nwhile True:\n    pass\n',
    "a loop that catches its cancellation": (
        '"""Ignores its cancellation and spins."""\nfrom harness.sandbox import external\n\n\n@external\n'
        "def wait() -> str:\n    ...\n\n\ntry:\n    wait()\nexcept Exception:\n    pass\nwhile True:\n    pass\n"),
    "an external that blocks the host": (
        '"""Waits on the host."""\nfrom harness.sandbox import external\n\n\n@external\ndef wait() -> str:\n'
        "    ...\n\n\nwait()\n"),
}
HEALTHY = '"""Fine."""\nsum(range(10))\n'


def _blocking_wait() -> str:
    time.sleep(30)  # a synchronous external: nothing can interrupt it
    return "late"


async def _async_wait() -> str:
    await asyncio.sleep(30)
    return "late"


class ContentionFigure(BenchRecord):
    """One kind of slow call against a healthy call."""

    slow_kind: str
    """What the slow calls do."""
    slow_calls: int
    """How many start at once."""
    wall_clock_s: float
    """Their wall clock (the default preset's)."""
    slow_end_s_min: float
    """When the first slow call ended, counted from when it was made."""
    slow_end_s_max: float
    """When the last slow call ended, counted from when it was made (the wall clock is the bound)."""
    slow_errors: dict[str, int]
    """How the slow calls ended, by error kind (``ok: ...`` for an answer)."""
    healthy_s: float
    """How long the healthy call took, from when it was made."""
    healthy_result: str
    """How it ended."""


class ContentionBench(BenchRecord):
    """``harness bench sandbox --contention``'s figures (its JSON line)."""

    rows: list[ContentionFigure]
    """One per kind of slow call."""


async def _timed(call: Any) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        value = await call
        outcome = f"ok: {str(value)[:40]}"
    except SandboxError as e:
        outcome = e.error_kind
    return time.perf_counter() - started, outcome


async def _one(kind: str, source: str, slow: int, folder: Path) -> ContentionFigure:
    (folder / "slow.pym").write_text(source, encoding="utf-8")
    (folder / "healthy.pym").write_text(HEALTHY, encoding="utf-8")
    slow_script, healthy = load_script(folder / "slow.pym"), load_script(folder / "healthy.pym")
    limits = Limits.default()
    externals = {"wait": _blocking_wait if "blocks" in kind else _async_wait} if "wait" in slow_script.externals else {}
    calls = [asyncio.ensure_future(_timed(run_script(slow_script, {}, externals=externals, limits=limits))) for _ in range(slow)]
    await asyncio.sleep(0.1)
    healthy_s, healthy_result = await _timed(run_script(healthy, {}, limits=limits))
    ends = await asyncio.gather(*calls)
    errors: dict[str, int] = {}
    for _, outcome in ends:
        errors[outcome] = errors.get(outcome, 0) + 1
    return ContentionFigure(slow_kind=kind, slow_calls=slow, wall_clock_s=limits.wall_clock or 0.0,
                            slow_end_s_min=round(min(e for e, _ in ends), 2),
                            slow_end_s_max=round(max(e for e, _ in ends), 2), slow_errors=errors,
                            healthy_s=round(healthy_s, 3), healthy_result=healthy_result)


def bench_contention(slow: int = 12) -> ContentionBench:
    """Each kind of slow call, ``slow`` at once, against a healthy call."""
    figures = []
    with TemporaryDirectory() as tmp:
        for kind, source in SLOW.items():
            figures.append(asyncio.run(_one(kind, source, slow, Path(tmp))))
            time.sleep(1.0)  # let abandoned runners come back before the next kind
    return ContentionBench(rows=figures)


__all__ = ["SLOW", "ContentionBench", "ContentionFigure", "bench_contention"]
