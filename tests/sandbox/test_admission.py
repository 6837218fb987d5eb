"""The pool's admission: a starved or overdue call is never charged to a healthy one.

Hostile load (slow synchronous externals, endless loops, a script that ignores its cancellation)
fills every worker; a healthy call made meanwhile still succeeds, the hostile ones end as their own
limits, and the pool is whole again afterwards. The externals block on events the test releases, so
the tests assert what happens in which order, never how long it takes.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from harness.sandbox import LimitError, Limits, UnavailableError, get_pool, load_script, run_script

BLOCKING = '''
"""Waits on the host."""
from harness.sandbox import external


@external
def wait() -> str:
    ...


wait()
'''

STUBBORN = '''
"""Ignores its cancellation and spins."""
from harness.sandbox import external


@external
def wait() -> str:
    ...


try:
    wait()
except Exception:
    pass
while True:
    pass
'''

HEALTHY = '"""Fine."""\nsum(range(10))\n'
GUARD = 60  # seconds: only a hang would reach it


def _blocked_until(release: threading.Event):
    def wait() -> str:
        release.wait(GUARD)  # blocks its runner thread: nothing can interrupt it
        return "late"

    return wait


@pytest.fixture
def scripts(write_script):
    return {
        name: load_script(write_script(source, name=f"{name}.pym"))
        for name, source in (("blocking", BLOCKING), ("stubborn", STUBBORN), ("healthy", HEALTHY))
    }


async def _settled(tasks: list[asyncio.Task]) -> list[BaseException | object]:
    return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), GUARD)


async def _pool_is_whole() -> None:
    pool = get_pool()
    for _ in range(GUARD * 20):
        stats = pool.stats()
        if stats["stuck"] == stats["pending"] == stats["busy"] == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the pool did not recover: {pool.stats()}")


async def test_healthy_call_succeeds_while_slow_externals_fill_every_worker(scripts) -> None:
    """More slow synchronous externals than workers: the healthy call waits its turn (not charged),
    the slow ones are abandoned at their wall clock and their stuck threads replaced, so the healthy
    call runs before any external has answered."""
    release = threading.Event()
    overdue = Limits.default().merge(Limits(wall_clock="200ms"))
    slow = [
        asyncio.ensure_future(run_script(scripts["blocking"], {}, externals={"wait": _blocked_until(release)}, limits=overdue))
        for _ in range(get_pool().capacity + 5)
    ]
    await asyncio.sleep(0)
    assert await asyncio.wait_for(run_script(scripts["healthy"], {}, limits=Limits(wall_clock="200ms")), GUARD) == 45
    assert not release.is_set()  # it ran while every external was still blocked
    release.set()
    outcomes = await _settled(slow)
    overdue_ones = [o for o in outcomes if isinstance(o, LimitError) and o.limit == "wall_clock"]
    assert len(overdue_ones) >= get_pool().capacity, outcomes  # the ones that ran before the release
    assert all(o == "late" for o in outcomes if o not in overdue_ones), outcomes  # the rest ran after it
    await _pool_is_whole()
    assert await run_script(scripts["healthy"], {}) == 45  # and again once they have answered


async def test_healthy_call_waits_for_endless_loops_without_being_charged(scripts) -> None:
    loops = [
        asyncio.ensure_future(run_script(scripts["stubborn"], {}, externals={"wait": lambda: "x"},
                                                     limits=Limits(max_duration="500ms", wall_clock="5s")))
        for _ in range(2 * get_pool().capacity)
    ]
    await asyncio.sleep(0)
    # its own wall clock is shorter than the queue ahead of it (two rounds of loops): waiting is not running
    assert await asyncio.wait_for(run_script(scripts["healthy"], {}, limits=Limits(wall_clock="500ms")), GUARD) == 45
    outcomes = await _settled(loops)
    assert all(isinstance(o, LimitError) and o.limit == "duration" for o in outcomes), outcomes


async def test_an_overdue_call_that_ignores_its_cancellation_is_killed(scripts) -> None:
    """An async external cancelled at the wall clock raises in the script, which catches it and spins:
    its worker is killed, so it frees its place at once instead of running to its duration limit."""

    async def wait() -> str:
        await asyncio.sleep(GUARD)
        return "late"

    stubborn = [
        asyncio.ensure_future(run_script(scripts["stubborn"], {}, externals={"wait": wait},
                                                     limits=Limits(max_duration="60s", wall_clock="200ms")))
        for _ in range(get_pool().capacity)
    ]
    outcomes = await _settled(stubborn)
    assert all(isinstance(o, LimitError) and o.limit == "wall_clock" for o in outcomes), outcomes
    await _pool_is_whole()  # long before their 60 s duration limit
    assert await run_script(scripts["healthy"], {}) == 45


async def test_a_call_that_cannot_start_in_time_is_unavailable_not_a_limit(scripts) -> None:
    release = threading.Event()
    patient = Limits.default().merge(Limits(wall_clock="60s"))
    busy = [
        asyncio.ensure_future(run_script(scripts["blocking"], {}, externals={"wait": _blocked_until(release)}, limits=patient))
        for _ in range(get_pool().capacity)
    ]
    await asyncio.sleep(0.2)
    with pytest.raises(UnavailableError) as err:
        await run_script(scripts["healthy"], {}, limits=Limits(max_wait="300ms"))
    assert err.value.error_kind == "tool:unavailable" and "did not start" in str(err.value)
    release.set()
    assert await _settled(busy) == ["late"] * get_pool().capacity
    await _pool_is_whole()
    assert await run_script(scripts["healthy"], {}, limits=Limits(max_wait="300ms")) == 45


async def test_a_job_fed_outside_the_runners_leaves_the_counts_alone(scripts) -> None:
    """The bench feeds a job on the caller's thread to time the hop: no runner took it, so nothing is counted."""
    from harness.sandbox.runtime.pool import Job
    from harness.sandbox.runtime.vfs import TreeOS

    pool = get_pool()
    before = pool.stats()
    job = Job(asyncio.get_running_loop(), lambda job: None)
    code = scripts["healthy"].code
    value = pool.feed(job, "healthy.pym", code, limits={}, inputs={}, external_lookup={},
                      os_handler=TreeOS({}), print_callback=lambda stream, text: None)
    assert value == 45 and pool.stats() == before and not job.future.done()
    assert await run_script(scripts["healthy"], {}) == 45
