"""Running scripts: one process-wide pydantic-monty pool, a fresh session per call, errors mapped.

Pool choice, measured on this 2-core machine (same script: one virtual-file read, fresh session,
interleaved, 540 runs each, load average ~5): ``AsyncMonty`` p50 452 us / p90 644 us; the sync
``Monty`` pool called on the event loop's thread p50 299 us (p90 1.9 ms: it competes with the loop);
the sync pool on a worker thread p50 302 us / p90 489 us. The async pool is also the one that can
abort the interpreter at exit (observed in 16 of 60 short processes with 1.4.0). So: the sync pool, driven from a small dedicated
thread pool (``run_in_executor``; the hop costs ~40-50 us, ``harness bench sandbox`` reports it as
``bare_feed_thread_us_p50`` vs ``bare_feed_inline_us_p50``). A sync ``feed_run`` blocks its thread for
the whole run, and a script may legitimately run up to its duration limit (2 s by default) or wait on
a slow external: on the loop's thread that would freeze every other task of the kernel (model calls,
other agents), so it never runs there. Host coroutines used as externals run on the caller's loop
(``run_coroutine_threadsafe``), where the wall-clock bound can cancel them.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import hashlib
import inspect
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic_monty as pm

from harness.agents.events import (
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
    InputError,
    LimitError,
    OutputError,
    ParseError,
    SandboxError,
)
from harness.sandbox.limits import Limits
from harness.sandbox.vfs import TreeOS, build_tree

if TYPE_CHECKING:
    from pydantic import BaseModel

    from harness.sandbox.script import Script

CHECK_SENTINEL = "PYM_CHECK_ONLY"
"""A name prepended on its own line when type-checking: its lookup suspends the feed before any code runs."""


class SandboxPool:
    """A lazily started pydantic-monty worker pool plus the threads that drive its sessions."""

    def __init__(self, *, min_processes: int = 1, max_processes: int | None = None, threads: int = 8) -> None:
        self._min = min_processes
        self._max = max_processes or max(4, os.cpu_count() or 1)
        self._threads = threads
        self._lock = threading.Lock()
        self._monty: pm.Monty | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    @property
    def monty(self) -> pm.Monty:
        """The started pool (started on first use: ~3 ms)."""
        monty = self._monty
        if monty is None:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the sandbox pool is closed")
                if self._monty is None:
                    pool = pm.Monty(min_processes=self._min, max_processes=self._max)
                    pool.__enter__()
                    self._monty = pool
                monty = self._monty
        return monty

    @property
    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = concurrent.futures.ThreadPoolExecutor(
                        max_workers=self._threads, thread_name_prefix="pym-sandbox"
                    )
        return self._executor

    def feed(
        self,
        script_name: str,
        code: str,
        *,
        limits: dict[str, Any],
        inputs: dict[str, Any],
        external_lookup: dict[str, Any],
        os_handler: TreeOS,
        print_callback: Callable[[str, str], None],
    ) -> Any:
        """Run ``code`` in a fresh session; blocks the calling thread. Raises pydantic-monty errors."""
        with self.monty.checkout(script_name=script_name, limits=limits) as session:  # type: ignore[arg-type]
            return session.feed_run(
                code,
                inputs=inputs,
                external_lookup=external_lookup,
                print_callback=print_callback,  # type: ignore[arg-type]
                os=os_handler,
            )

    def close(self) -> None:
        """Stop the workers and the threads. Idempotent; registered at exit for the process-wide pool."""
        with self._lock:
            self._closed = True
            monty, self._monty = self._monty, None
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
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


# ---------------------------------------------------------------- type check at load


def _check_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("harness")) / "pym-check"


def type_check_script(script: Script) -> None:
    """Type-check ``script`` once (pydantic-monty's checker with the script's stubs); no code runs.

    A passing check is remembered on disk, keyed by the code, the stubs and the pydantic-monty version.
    Raises CheckError (type errors, with the ``.pym`` lines) or ParseError (syntax Monty rejects).
    """
    stubs = script.stubs + f"{CHECK_SENTINEL}: Any\n"
    key = hashlib.sha256(f"{pm.__version__}\0{script.code}\0{stubs}".encode()).hexdigest()
    marker = _check_cache_dir() / key
    if marker.exists():
        return
    fname = script.filename
    code = f"{CHECK_SENTINEL}\n{script.code}"
    with get_pool().monty.checkout(
        script_name=fname, type_check=True, type_check_stubs=stubs, type_check_format="concise"
    ) as session:
        try:
            snapshot = session.feed_start(code)
        except pm.MontyTypingError as e:
            raise CheckError(
                f"{fname}: type check failed:\n{_shift_lines(e.display(), fname)}", script=fname
            ) from e
        except pm.MontySyntaxError as e:
            line = _frame_line(e, shift=1)
            raise ParseError(f"{fname} line {line}: {e.display('msg')}", script=fname, line=line) from e
        except pm.MontyRuntimeError as e:
            line = _frame_line(e, shift=1)
            cls = ParseError if isinstance(e.exception(), NotImplementedError) else CheckError
            raise cls(f"{fname} line {line}: {e.display('type-msg')}", script=fname, line=line) from e
    if not (isinstance(snapshot, pm.NameLookupSnapshot) and snapshot.variable_name == CHECK_SENTINEL):
        raise CheckError(
            f"{fname}: the type check did not stop before the script ran ({snapshot!r})", script=fname
        )
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


def _shift_lines(text: str, fname: str) -> str:
    """Diagnostics name ``fname:LINE:COL``; take back the sentinel line added in front of the code."""
    import re

    pattern = re.compile(rf"^({re.escape(fname)}):(\d+):", re.MULTILINE)
    return pattern.sub(lambda m: f"{m.group(1)}:{int(m.group(2)) - 1}:", text).rstrip()


def _frame_line(error: pm.MontySyntaxError | pm.MontyRuntimeError, shift: int = 0) -> int | None:
    frames = error.traceback()
    return frames[-1].line - shift if frames else None


# ---------------------------------------------------------------- running


class _Externals:
    """Host functions exposed to one run; records what they raised; async ones run on the caller's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.futures: set[concurrent.futures.Future[Any]] = set()
        self.raised: list[tuple[str, frozenset[str], str]] = []
        """(external, names of the exception's classes, message) for each exception an external raised."""

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = self._await(name, result)
                return result
            except BaseException as exc:
                classes = frozenset(c.__name__ for c in type(exc).__mro__)
                self.raised.append((name, classes, str(exc)))
                raise

        return call

    def _await(self, name: str, awaitable: Awaitable[Any]) -> Any:
        async def _run() -> Any:
            return await awaitable

        future = asyncio.run_coroutine_threadsafe(_run(), self.loop)
        self.futures.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise TimeoutError(
                f"external {name}() was cancelled: the call ran past its wall-clock limit"
            ) from None
        finally:
            self.futures.discard(future)

    def cancel_all(self) -> None:
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
    tool_name: str,
    arguments_checked: bool = False,
) -> Any:
    """See ``Script.run``."""
    fname = script.filename
    limits = limits or Limits.default()
    if emit is not None:
        await _emit(emit, ScriptStartEvent(tool_name=tool_name, script=fname, input_count=len(inputs or {})))
    started = time.perf_counter()
    prints: list[ScriptPrintEvent] = []
    try:
        values = script.resolve_inputs(inputs, host_inputs, given_checked=arguments_checked)
        _check_externals(script, externals)
        value = await _execute(script, values, files, externals or {}, limits, environ, prints, tool_name)
        _check_output(fname, value, output_model)
    except SandboxError as err:
        if emit is not None:
            for event in prints:
                await _emit(emit, event)
            ms = (time.perf_counter() - started) * 1e3
            await _emit(emit, ScriptErrorEvent(tool_name, fname, ms, err.kind, str(err)))
        raise
    if emit is not None:
        for event in prints:
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
    prints: list[ScriptPrintEvent],
    tool_name: str,
) -> Any:
    loop = asyncio.get_running_loop()
    pool = get_pool()
    calls = _Externals(loop)
    fname = script.filename

    def on_print(stream: str, text: str) -> None:
        prints.append(ScriptPrintEvent(tool_name=tool_name, script=fname, stream=stream, text=text))

    try:
        os_handler = TreeOS(build_tree(files), environ or {})
    except (TypeError, ValueError) as e:
        raise InputError(f"{fname}: bad virtual files: {e}", from_model=False, script=fname) from e
    job = functools.partial(
        pool.feed,
        fname,
        script.code,
        limits=limits.to_monty(),
        inputs=values,
        external_lookup={name: calls.wrap(name, fn) for name, fn in externals.items()},
        os_handler=os_handler,
        print_callback=on_print,
    )
    future = loop.run_in_executor(pool.executor, job)
    expired: list[bool] = []

    def expire() -> None:  # cheaper than asyncio.wait_for (~20 us a call); the thread finishes on its own
        expired.append(True)
        future.cancel()

    timer = loop.call_later(limits.wall_clock, expire) if limits.wall_clock is not None else None
    try:
        return await future
    except asyncio.CancelledError:
        if not expired:
            raise  # the caller cancelled us
        raise LimitError(
            f"{fname}: wall-clock limit of {limits.wall_clock:g}s exceeded (time waiting on externals counts)",
            limit="wall_clock",
            script=fname,
        ) from None
    except pm.MontyError as e:
        raise map_error(e, fname, calls.raised) from e
    finally:
        if timer is not None:
            timer.cancel()
        calls.cancel_all()


_LIMIT_MARKERS = (
    ("MemoryError", "memory limit exceeded", "memory"),
    ("TimeoutError", "time limit exceeded", "duration"),
    ("TimeoutError", "sleep limit exceeded", "sleep"),
    ("RecursionError", "", "recursion"),
    ("RuntimeError", "suspension limit", "suspensions"),
)


def map_error(
    error: pm.MontyError, fname: str, raised: list[tuple[str, frozenset[str], str]] | None = None
) -> SandboxError:
    """A pydantic-monty error as one of the seven sandbox kinds, its message naming the ``.pym`` line."""
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
        return InputError(
            f"{fname}: a value cannot cross into the sandbox: {error}", from_model=False, script=fname
        )
    if not isinstance(error, pm.MontyRuntimeError):
        return ExecutionError(f"{fname}: {type(error).__name__}: {error}", script=fname)
    inner = error.exception()
    exc_type = type(inner).__name__
    message = str(inner)
    line = _frame_line(error)
    where = f"{fname} line {line}" if line else fname
    for type_name, marker, limit in _LIMIT_MARKERS:
        if exc_type == type_name and marker in message:
            return LimitError(f"{where}: {exc_type}: {message}", limit=limit, script=fname, line=line)
    for name, raised_classes, raised_message in raised or ():
        # an exception class the sandbox does not know arrives as its nearest builtin base
        if exc_type in raised_classes and raised_message == message:
            return ExternalError(
                f"{where}: external {name}() raised {exc_type}: {message}",
                function_name=name,
                script=fname,
                line=line,
            )
    return ExecutionError(f"{where}: {exc_type}: {message}", exc_type=exc_type, script=fname, line=line)


def _check_output(fname: str, value: Any, output_model: type[BaseModel] | None) -> None:
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
