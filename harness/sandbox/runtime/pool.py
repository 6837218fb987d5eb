"""The process-wide sandbox: pydantic-monty's sync worker pool, driven from runner threads with admission.

Why the sync pool on threads, measured on this 2-core machine: pydantic-monty's ``AsyncMonty`` costs
~0.3 ms a fresh session against ~0.1 ms for the sync pool, and it is the one that can abort the
interpreter at exit (16 of 60 short processes with 1.4.0). A sync ``feed_run`` blocks its thread for
the whole run, and a script may legitimately run up to its duration limit or wait on a slow external,
so it never runs on the event loop's thread: it runs on one of the pool's runner threads. A runner
takes jobs from a queue and hands each result back with ``call_soon_threadsafe`` (a plain queue and
one wake-up each way: ~30 us for the round trip, against ~57 us for ``run_in_executor``).

Admission, so that a starved or overdue call is never charged to a healthy one:

- At most ``capacity`` calls run at once; the others wait in the queue, in order. Waiting is not
  running: a call's wall clock starts when a runner starts it (``Job.started``), and a call that waits
  longer than its ``max_wait`` ends as ``tool:unavailable``, never as a limit of its own.
- A call past its wall clock is abandoned: its worker process is killed (so a script that caught the
  cancellation cannot go on), and its runner, which may be stuck in a synchronous external that
  nothing can interrupt, stops counting against the capacity: a new runner takes its place. Up to
  ``max_stuck`` runners may be stuck at once; beyond that the capacity shrinks until they come back.
- pydantic-monty counts a killed worker against its own cap until the stuck runner leaves the session,
  so its pool may hold ``capacity + max_stuck`` workers (~8 MB each, started only when needed).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pydantic_monty as pm

from harness.sandbox.runtime.vfs import TreeOS


class Abandoned(Exception):
    """Raised in a runner when its job was abandoned before the script started."""


class Job:
    """One script run handed to the pool: its future on the caller's loop, and where it stands."""

    __slots__ = (
        "_lock", "abandoned", "finished", "fn", "future", "loop", "pid", "queued", "replaced", "started", "stuck"
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, fn: Callable[[Job], Any]) -> None:
        self.loop = loop
        self.fn = fn
        self.future: asyncio.Future[Any] = loop.create_future()
        self.queued = time.perf_counter()
        self.started: float | None = None
        """``perf_counter()`` when a runner started the job (set by the runner thread)."""
        self.pid: int | None = None
        """The worker process running the script, while it runs."""
        self.abandoned = False
        self.stuck = False
        """Abandoned while it ran: its runner no longer counts against the capacity."""
        self.finished = False
        self.replaced = False
        """Its runner was replaced while the job was stuck, and leaves when it is done."""
        self._lock = threading.Lock()

    def attach(self, pid: int | None) -> None:
        """Called by the runner once it holds a session: from here an abandon kills ``pid``."""
        with self._lock:
            if self.abandoned:
                raise Abandoned
            self.pid = pid

    def detach(self) -> None:
        """Called by the runner before it gives the session back: the worker is no longer this job's."""
        with self._lock:
            self.pid = None

    def kill(self) -> None:
        """Mark the job abandoned and kill its worker if the script is running (never another job's:
        the runner cannot give the session back while the lock is held)."""
        with self._lock:
            self.abandoned = True
            if self.pid is not None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass


def _settle(job: Job, value: Any, error: BaseException | None) -> None:
    if job.future.done():
        return
    if error is None:
        job.future.set_result(value)
    else:
        job.future.set_exception(error)


class SandboxPool:
    """A lazily started pydantic-monty worker pool plus the runner threads that drive its sessions."""

    def __init__(self, *, capacity: int | None = None, max_stuck: int | None = None, min_processes: int = 1) -> None:
        self.capacity = capacity or max(4, os.cpu_count() or 1)
        """Calls that run at once; the others wait in order."""
        self.max_stuck = max_stuck if max_stuck is not None else 2 * self.capacity
        """Runners that may be stuck in an abandoned call before the capacity shrinks."""
        self._min = min_processes
        self._lock = threading.Lock()
        self._monty: pm.Monty | None = None
        self._closed = False
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._active = 0  # runner threads that count against the capacity (not stuck)
        self._stuck = 0  # runner threads busy with an abandoned job
        self._pending = 0  # jobs in the queue
        self._busy = 0  # jobs running and not abandoned
        self._threads: list[threading.Thread] = []

    @property
    def monty(self) -> pm.Monty:
        """The started pool (started on first use: ~3 ms)."""
        monty = self._monty
        if monty is None:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the sandbox pool is closed")
                if self._monty is None:
                    pool = pm.Monty(min_processes=self._min, max_processes=self.capacity + self.max_stuck)
                    pool.__enter__()
                    self._monty = pool
                monty = self._monty
        return monty

    def stats(self) -> dict[str, int]:
        """Runner threads and jobs by state (for tests and diagnostics)."""
        with self._lock:
            return {"active": self._active, "stuck": self._stuck, "pending": self._pending, "busy": self._busy}

    # ------------------------------------------------------------ admission
    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable[[Job], Any]) -> Job:
        """Queue ``fn(job)`` for a runner thread; its value or exception settles ``job.future`` on ``loop``."""
        if self._monty is None:
            _ = self.monty  # start the pool on the caller's thread (and fail there when closed)
        job = Job(loop, fn)
        with self._lock:
            self._pending += 1
            self._grow()
        self._queue.put(job)
        return job

    def abandon(self, job: Job) -> None:
        """Give up on ``job`` (overdue or no longer wanted): kill its worker; a stuck runner is replaced."""
        job.kill()
        with self._lock:
            if job.started is not None and not job.stuck and not job.finished:
                job.stuck = True
                self._busy -= 1
                self._active -= 1
                self._stuck += 1
                self._grow()

    def _limit(self) -> int:
        return self.capacity - max(0, self._stuck - self.max_stuck)

    def _grow(self) -> None:
        """Start a runner when jobs wait and the capacity allows one more (lock held)."""
        if self._closed:
            return
        while self._active < self._limit() and self._pending + self._busy > self._active:
            self._active += 1
            thread = threading.Thread(target=self._runner, name="pym-sandbox", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _runner(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            with self._lock:
                self._pending -= 1
                skip = job.abandoned
                if not skip:
                    self._busy += 1
                    job.started = time.perf_counter()
            if skip:
                continue
            try:
                self.finish(job, job.fn(job), None)
            except BaseException as e:  # handed to the caller's loop, raised there
                self.finish(job, None, e)
            if job.replaced:
                return

    def finish(self, job: Job, value: Any, error: BaseException | None) -> None:
        """Hand ``job``'s outcome to its loop, once (``feed`` does it before it gives its session back,
        so the caller does not wait for that)."""
        with self._lock:
            if job.finished or job.started is None:  # settled already, or not a job a runner took
                return
            job.finished = True
            if job.stuck:  # abandoned while it ran: its runner was replaced, and leaves unless needed
                self._stuck -= 1
                if self._active >= self._limit() or self._closed:
                    job.replaced = True
                else:
                    self._active += 1
            else:
                self._busy -= 1
        try:
            job.loop.call_soon_threadsafe(_settle, job, value, error)
        except RuntimeError:  # the caller's loop is closed: nobody waits for this result
            pass

    # ------------------------------------------------------------ running
    def feed(
        self,
        job: Job,
        script_name: str,
        code: str,
        *,
        limits: dict[str, Any],
        inputs: dict[str, Any],
        external_lookup: dict[str, Any],
        os_handler: TreeOS,
        print_callback: Callable[[str, str], None],
    ) -> Any:
        """Run ``code`` in a fresh session for ``job`` (on a runner thread). Raises pydantic-monty errors."""
        with self.monty.checkout(script_name=script_name, limits=limits) as session:  # type: ignore[arg-type]
            job.attach(session.worker_pid)
            try:
                value = session.feed_run(
                    code,
                    inputs=inputs,
                    external_lookup=external_lookup,
                    print_callback=print_callback,  # type: ignore[arg-type]
                    os=os_handler,
                )
            finally:
                job.detach()
            self.finish(job, value, None)  # before the session is given back (~15 us the caller need not wait)
            return value

    def close(self) -> None:
        """Stop the runners and the workers. Idempotent; registered at exit for the process-wide pool."""
        with self._lock:
            self._closed = True
            monty, self._monty = self._monty, None
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join(timeout=0.5)  # an idle runner leaves at once; a stuck one is a daemon
        if monty is not None:
            monty.__exit__(None, None, None)


_POOL: SandboxPool | None = None
_POOL_LOCK = threading.Lock()


def get_pool() -> SandboxPool:
    """The process-wide pool, created on first use and closed at interpreter exit."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = SandboxPool()
                atexit.register(close_pool)
    return _POOL


def close_pool() -> None:
    """Close the process-wide pool (the next use starts a new one)."""
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.close()
