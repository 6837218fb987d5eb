"""Running a loaded script once: inputs resolved, a fresh session on the pool, host-side limits, errors mapped.

Host-side limits (the sandbox cannot see these costs): the wall clock, from the moment the call is made,
so that no call outlives it (an overdue call is abandoned: ``SandboxPool.abandon``; one that ran out of
it because it waited for a worker is ``tool:unavailable``, as is one that waited past ``max_wait``); the print output kept (``max_print``); what an external may hand back (no more
than the sandbox's ``max_memory``: converting a 20M-element list would hold the host for half a
minute); how deeply the value nests (``max_output_depth``, and never deeper than the sandbox can hand
back uncut). A host-side breach ends the run at once (its worker is killed) and is reported even when
the script caught the exception it saw.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import pydantic_monty as pm

from harness.agents import (
    Event,
    ScriptCompleteEvent,
    ScriptErrorEvent,
    ScriptPrintEvent,
    ScriptStartEvent,
)
from harness.sandbox.errors import (
    CheckError,
    ExecutionError,
    ExternalError,
    LimitError,
    OutputError,
    ParseError,
    SandboxError,
    ScriptInputError,
    UnavailableError,
)
from harness.sandbox.runtime.pool import Abandoned, Job, get_pool
from harness.sandbox.runtime.script_limits import Limits
from harness.sandbox.runtime.vfs import TreeOS
from harness.sandbox.values import nesting_depth_over, size_over

if TYPE_CHECKING:
    from pydantic import BaseModel

    from harness.sandbox.pym.script import Script

MONTY_RECURSION = 1000
"""pydantic-monty's recursion limit when a run sets none: a value nested this deep comes back cut."""


class _Run:
    """The host's side of one run: externals (what they raised), prints, the host-side limit breached."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fname: str, limits: Limits, tool_name: str) -> None:
        self.loop = loop
        self.fname = fname
        self.limits = limits
        self.tool_name = tool_name
        self.job: Job | None = None
        self.futures: set[concurrent.futures.Future[Any]] = set()
        self.raised: list[tuple[str, frozenset[str], str]] = []
        """(external, names of the exception's classes, message) for each exception an external raised."""
        self.prints: list[ScriptPrintEvent] = []
        self.printed = 0
        self.breach: LimitError | None = None
        """A host-side limit the run breached: it is the run's error, whatever the script did next."""

    def stop(self, breach: LimitError) -> None:
        """Record ``breach`` and end the run now (its worker is killed; called on the runner thread)."""
        if self.breach is None:
            self.breach = breach
        if self.job is not None:
            self.job.kill()

    def on_print(self, stream: str, text: str) -> None:
        self.printed += len(text)
        cap = self.limits.max_print
        if cap is not None and self.printed > cap:
            self.stop(LimitError(f"{self.fname}: printed more than {cap} bytes", limit="print", script=self.fname))
            raise OverflowError(f"print limit of {cap} bytes exceeded")
        self.prints.append(ScriptPrintEvent(self.tool_name, self.fname, stream, text))

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = self._await(name, result)
            except BaseException as exc:
                classes = frozenset(c.__name__ for c in type(exc).__mro__)
                self.raised.append((name, classes, str(exc)))
                raise
            cap = self.limits.max_memory
            if cap is not None and size_over(result, cap):
                self.stop(
                    LimitError(
                        f"{self.fname}: external {name}() returned more than the sandbox's memory limit "
                        f"({cap} bytes) can hold",
                        limit="memory",
                        script=self.fname,
                    )
                )
                raise MemoryError(f"the value external {name}() returned is too large for the sandbox")
            return result

        return call

    def _await(self, name: str, awaitable: Awaitable[Any]) -> Any:
        async def _run() -> Any:
            return await awaitable

        future = asyncio.run_coroutine_threadsafe(_run(), self.loop)
        self.futures.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise TimeoutError(f"external {name}() was cancelled: the call ran past its wall clock") from None
        finally:
            self.futures.discard(future)

    def cancel_externals(self) -> None:
        for future in list(self.futures):
            future.cancel()


async def _emit(emit: Callable[[Event], Awaitable[None] | None] | None, event: Event) -> None:
    if emit is None:
        return
    result = emit(event)
    if inspect.isawaitable(result):
        await result


async def run_script(
    script: Script,
    inputs: Mapping[str, Any] | None,
    *,
    host_inputs: Mapping[str, Any] | None = None,
    files: Mapping[str, Any] | None = None,
    externals: Mapping[str, Callable[..., Any]] | None = None,
    limits: Limits | None = None,
    output_model: type[BaseModel] | None = None,
    environ: Mapping[str, str] | None = None,
    emit: Callable[[Event], Awaitable[None] | None] | None = None,
    tool_name: str | None = None,
    arguments_checked: bool = False,
) -> Any:
    """Run ``script`` once in a fresh sandbox session and return the script's value.

    ``files`` maps absolute virtual paths to a file's content (str/bytes) or a directory (a dict of
    name -> content or dict). Raises one of the SandboxError kinds; emits ScriptStart/Print/
    Complete/Error events through ``emit`` when given, as ``tool_name`` (default: the script's name).
    ``arguments_checked``: see ``Script.resolve_inputs``.
    """
    tool_name = tool_name or script.name
    fname = script.filename
    limits = limits or Limits.default()
    if emit is not None:
        await _emit(emit, ScriptStartEvent(tool_name=tool_name, script=fname, input_count=len(inputs or {})))
    started = time.perf_counter()
    run = _Run(asyncio.get_running_loop(), fname, limits, tool_name)
    try:
        values = script.resolve_inputs(inputs, host_inputs, given_checked=arguments_checked)
        _check_externals(script, externals)
        value = await _execute(script, values, files, externals or {}, limits, environ, run)
        _check_output(fname, value, output_model, limits)
    except SandboxError as err:
        if emit is not None:
            for event in run.prints:
                await _emit(emit, event)
            ms = (time.perf_counter() - started) * 1e3
            await _emit(emit, ScriptErrorEvent(tool_name, fname, ms, err.kind, str(err)))
        raise
    if emit is not None:
        for event in run.prints:
            await _emit(emit, event)
        ms = (time.perf_counter() - started) * 1e3
        await _emit(emit, ScriptCompleteEvent(tool_name=tool_name, script=fname, duration_ms=ms))
    return value


def _check_externals(script: Script, externals: Mapping[str, Callable[..., Any]] | None) -> None:
    given = dict(externals or {})
    for name, spec in script.externals.items():
        if name not in given:
            raise ExternalError(
                f"{script.filename} line {spec.lineno}: external {name!r} is declared but the host supplied no implementation",
                function_name=name,
                script=script.filename,
                line=spec.lineno,
            )
        if not callable(given[name]):
            raise ExternalError(
                f"{script.filename}: external {name!r} is not callable",
                function_name=name,
                script=script.filename,
            )
    for name in given:
        if name not in script.externals:
            raise ExternalError(
                f"{script.filename}: external {name!r} was supplied but the script declares no such @external",
                function_name=name,
                script=script.filename,
            )


async def _execute(
    script: Script,
    values: dict[str, Any],
    files: Mapping[str, Any] | None,
    externals: Mapping[str, Callable[..., Any]],
    limits: Limits,
    environ: Mapping[str, str] | None,
    run: _Run,
) -> Any:
    pool = get_pool()
    fname = script.filename
    try:
        os_handler = TreeOS.mounting(files, environ)
    except (TypeError, ValueError) as e:
        raise ScriptInputError(f"{fname}: bad virtual files: {e}", from_model=False, script=fname) from e
    lookup = {name: run.wrap(name, fn) for name, fn in externals.items()}
    monty_limits = limits.to_monty()

    def feed(job: Job) -> Any:
        run.job = job
        return pool.feed(
            job,
            fname,
            script.code,
            limits=monty_limits,
            inputs=values,
            external_lookup=lookup,
            os_handler=os_handler,
            print_callback=run.on_print,
        )

    job = pool.submit(run.loop, feed)
    outcome: list[SandboxError] = []

    def unavailable() -> None:  # not started within max_wait or its wall clock: the pool was busy
        outcome.append(_unavailable(fname, job, limits, pool.stats()))
        pool.abandon(job)
        run.cancel_externals()
        job.future.cancel()

    def overdue() -> None:
        outcome.append(
            LimitError(
                f"{fname}: wall-clock limit of {limits.wall_clock:g}s exceeded (time waiting on externals counts)",
                limit="wall_clock",
                script=fname,
            )
        )
        pool.abandon(job)
        run.cancel_externals()
        job.future.cancel()

    clock = _Clock(run.loop, job, limits, unavailable, overdue)
    try:
        value = await job.future
    except asyncio.CancelledError:
        if not outcome:
            pool.abandon(job)  # the caller cancelled us: the run is no longer wanted
            raise
        raise outcome[0] from None
    except Abandoned:
        raise outcome[0] if outcome else _unavailable(fname, job, limits, pool.stats()) from None
    except pm.MontyError as e:
        if run.breach is not None:
            raise run.breach from None
        raise map_error(e, fname, run.raised) from e
    finally:
        clock.cancel()
        run.cancel_externals()
    if run.breach is not None:  # the script caught what it saw, but the limit stands
        raise run.breach
    return value


class _Clock:
    """A call's one timer (cheaper than ``asyncio.wait_for``: ~20 us a call). The wall clock runs from the
    moment the call is made (``Job.queued``), so every call ends within it, whether it ran or waited;
    ``max_wait`` bounds the wait for a worker. A call cut by its wall clock is overdue when it had a place
    at once, unavailable when it was made while every place was taken (``Job.crowded``): the wait is
    never charged as its own limit."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        job: Job,
        limits: Limits,
        unavailable: Callable[[], None],
        overdue: Callable[[], None],
    ) -> None:
        self.loop, self.job = loop, job
        self.deadline = job.queued + limits.wall_clock if limits.wall_clock is not None else None
        self.wait_deadline = job.queued + limits.max_wait if limits.max_wait is not None else None
        self.unavailable, self.overdue = unavailable, overdue
        self.handle: asyncio.TimerHandle | None = None
        self._arm(time.perf_counter())

    def _arm(self, now: float) -> None:
        due = [d for d in (self.deadline, self.wait_deadline if self.job.started is None else None) if d is not None]
        if due:
            self.handle = self.loop.call_later(max(0.0, min(due) - now), self.check)

    def check(self) -> None:
        now, job = time.perf_counter(), self.job
        started = job.started
        if started is None and self.wait_deadline is not None and now >= self.wait_deadline:
            return self.unavailable()
        if self.deadline is not None and now >= self.deadline:
            return self.unavailable() if started is None or job.crowded else self.overdue()
        self._arm(now)
        return None

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


def _unavailable(fname: str, job: Job, limits: Limits, stats: dict[str, int]) -> UnavailableError:
    busy = (f"{stats['busy']} running, {stats['stuck']} stuck in externals past their wall clock, "
            f"{stats['pending']} waiting")
    if job.started is None:
        bound = min(b for b in (limits.max_wait, limits.wall_clock, float("inf")) if b is not None)
        return UnavailableError(f"{fname}: no sandbox worker was free within {bound:g}s ({busy}); the call did not "
                                "start", script=fname)
    waited = job.started - job.queued
    return UnavailableError(f"{fname}: it waited {waited:.2f}s for a sandbox worker ({busy}), then ran out of its "
                            f"wall clock of {limits.wall_clock or 0:g}s: the pool was busy, not a limit of this call",
                            script=fname)


_LIMIT_MARKERS = (
    ("MemoryError", "memory limit exceeded", "memory"),
    ("MemoryError", "exceeded its memory limit", "memory"),  # the worker was killed for its memory
    ("TimeoutError", "time limit exceeded", "duration"),
    ("TimeoutError", "sleep limit exceeded", "sleep"),
    ("RecursionError", "", "recursion"),
    ("RuntimeError", "suspension limit", "suspensions"),
)


def map_error(
    error: pm.MontyError, fname: str, raised: list[tuple[str, frozenset[str], str]] | None = None
) -> SandboxError:
    """A pydantic-monty error as one of the sandbox's kinds, its message naming the ``.pym`` line.

    An exception an external raised is the external's error, whatever its class or message (a
    RecursionError or a TimeoutError saying "time limit" from the host is not a sandbox limit).
    """
    if isinstance(error, pm.MontyCrashedError):
        if error.timed_out:
            return LimitError(
                f"{fname}: the sandbox worker timed out and was replaced", limit="wall_clock", script=fname
            )
        return ExecutionError(f"{fname}: the sandbox worker crashed and was replaced: {error}", script=fname)
    if isinstance(error, pm.MontyTypingError):
        return CheckError(f"{fname}: type check failed:\n{error.display()}", script=fname)
    if isinstance(error, pm.MontySyntaxError):
        line = _frame_line(error)
        return ParseError(f"{fname} line {line}: {error.display('msg')}", script=fname, line=line)
    if isinstance(error, pm.MontyConversionError):
        return ScriptInputError(
            f"{fname}: a value cannot cross into the sandbox: {error}", from_model=False, script=fname
        )
    if not isinstance(error, pm.MontyRuntimeError):
        return ExecutionError(f"{fname}: {type(error).__name__}: {error}", script=fname)
    inner = error.exception()
    exc_type = type(inner).__name__
    message = str(inner)
    line = _frame_line(error)
    where = f"{fname} line {line}" if line else fname
    for name, raised_classes, raised_message in raised or ():
        # an exception class the sandbox does not know arrives as its nearest builtin base
        if exc_type in raised_classes and raised_message == message:
            return ExternalError(
                f"{where}: external {name}() raised {exc_type}: {message}",
                function_name=name,
                script=fname,
                line=line,
            )
    for type_name, marker, limit in _LIMIT_MARKERS:
        if exc_type == type_name and marker in message:
            return LimitError(f"{where}: {exc_type}: {message}", limit=limit, script=fname, line=line)
    return ExecutionError(f"{where}: {exc_type}: {message}", exc_type=exc_type, script=fname, line=line)


def _frame_line(error: pm.MontySyntaxError | pm.MontyRuntimeError) -> int | None:
    frames = error.traceback()
    return frames[-1].line if frames else None


def _check_output(fname: str, value: Any, output_model: type[BaseModel] | None, limits: Limits) -> None:
    # a value nested as deep as the sandbox's recursion limit comes back cut ('<deeply nested>'): refuse it
    deepest = (limits.max_recursion or MONTY_RECURSION) - 1
    if limits.max_output_depth is not None:
        deepest = min(deepest, limits.max_output_depth)
    if nesting_depth_over(value, deepest):
        raise LimitError(
            f"{fname}: the value nests more than {deepest} levels deep", limit="output_depth", script=fname
        )
    if output_model is not None:
        from pydantic import ValidationError

        try:
            output_model.model_validate(value)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in e.errors()[:3]
            )
            raise OutputError(
                f"{fname}: the value does not match {output_model.__name__}: {problems}", script=fname
            ) from e
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise OutputError(
            f"{fname}: the value is not JSON ({type(value).__name__}): {e}", script=fname
        ) from e


__all__ = ["map_error", "run_script"]
