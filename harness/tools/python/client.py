"""The harness's side of the Python-tool worker (``harness.tools.python.worker``): start it, talk to it, bound it.

One ``WorkerClient`` owns one worker process, started when first needed. Every request is one JSON
line out and one back, under a wall-clock bound (the bundle's ``limits.wall_clock`` for a call). When
the worker dies (``os._exit``, a signal), overruns the bound or runs out of memory mid-call (its
address-space limit), its whole process group is killed (the worker and whatever its tools started:
processes this harness started), a new worker is started, the classes loaded again and every open
session rebuilt by replaying the calls it had answered: the session goes on with the state it had
before the failed call, and that call ends as a ``tool:`` error. A session whose replay itself fails
(a call that answered once overruns the bound on a busy machine) is *lost*: its later requests end as
``tool:internal_error`` saying so, and the other sessions are rebuilt without it. Requests are
serialised (one worker answers one at a time); the async methods run them in a thread so that the
event loop stays free.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness.tools.base import ToolUnavailable
from harness.vocabulary import ErrorKind

_sessions = itertools.count(1)


class WorkerFailure(ToolUnavailable):
    """The worker did not answer: ``kind`` (``tool:limit`` for the wall clock, ``tool:internal_error`` for a
    worker that died) and what happened."""


@dataclass
class _Session:
    opening: dict[str, Any]
    calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class WorkerSettings:
    """What the worker is started with."""

    classes: Mapping[str, str]
    """Class name -> ``module:Class``."""
    search_path: Sequence[Path] = ()
    """Folders put first on the worker's ``sys.path`` (the bundle's folder: a user's modules live there)."""
    memory: int = 2 << 30
    """The worker's address-space limit in bytes (``RLIMIT_AS``; 0: none)."""
    wall_clock: float = 5.0
    """Seconds one call may take, the worker's answer included."""
    max_output: int = 1 << 20
    """Bytes of a result's JSON text."""
    execution: str = "python"
    """``python``: call the classes' methods; another name: that benchmark's execution mode in the worker
    (``execution:`` in bundle.yaml; the table ``harness.benchmarks``)."""
    check_wall_clock: float = 120.0
    """Seconds a whole check of the execution mode (every call of a sample, re-executed) may take."""

    @property
    def open_wall_clock(self) -> float:
        """Seconds opening a session (the classes' ``__init__`` and scenario loads) may take: twice a call's
        wall clock and 5 s more (a long-context scenario builds a large state), not a fixed minute."""
        return 2 * self.wall_clock + 5.0


class WorkerClient:
    """One worker process and the sessions open on it (see the module doc)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._buffer = b""
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._lost: dict[str, str] = {}
        """Session -> why it could not be rebuilt on a new worker."""
        self.restarts = 0
        """Workers started again after one died or overran its bound."""

    # -- the process -----------------------------------------------------------------------------
    def _start(self) -> None:
        """A worker with the classes loaded and every open session rebuilt; a session whose replay fails
        is given up (``_lost``) and the others rebuilt on a worker started again."""
        while True:
            self._launch()
            failed = self._replay()
            if failed is None:
                return
            session, reason = failed
            self._stop()
            del self._sessions[session]
            self._lost[session] = f"session {session} was lost: the tool worker was replaced and replaying its calls failed ({reason})"

    def _replay(self) -> tuple[str, str] | None:
        """Each open session opened again and its answered calls made again (their answers ignored); the
        first session that fails, and why."""
        for name, session in self._sessions.items():
            try:
                self._exchange(session.opening, self.settings.open_wall_clock)
                for call in session.calls:
                    self._exchange(call, self.settings.wall_clock)
            except WorkerFailure as exc:
                return name, str(exc)
        return None

    def _launch(self) -> None:
        package_root = str(Path(__file__).resolve().parents[3])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        life_read, self._life = os.pipe()  # the worker dies when this end closes (the harness exited)
        command = [sys.executable, "-m", "harness.tools.python.worker", str(self.settings.memory),
                   str(life_read), *(str(p) for p in self.settings.search_path)]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(life_read,),
                env=env, start_new_session=True,  # its own process group: killed whole, with what tools started
            )
        finally:
            os.close(life_read)
        assert self._process.stderr is not None
        self._stderr = _Tail(self._process.stderr)  # the tools' prints and a dying worker's last words
        self._buffer = b""
        try:
            answer = self._exchange({"op": "load", "classes": dict(self.settings.classes), "execution": self.settings.execution,
                                     "max_output": self.settings.max_output}, 60.0)
        except WorkerFailure:  # an import that hangs or kills the worker leaves nothing behind
            self._stop()
            raise
        if "error" in answer:
            self._stop()
            raise WorkerFailure(ErrorKind.tool_load_error, str(answer.get("message")))

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        escaped = _descendants(process.pid)  # the worker adopts its tools' orphans: setsid daemons too
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the group this harness started (start_new_session)
        except ProcessLookupError:
            pass
        for child in escaped:
            with contextlib.suppress(psutil.Error):
                child.kill()
        process.wait()
        os.close(self._life)
        self._stderr.close()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a worker that closed its stdin: the flush finds no reader
                    pipe.close()

    def _exchange(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        request = {**request, "id": next(_requests)}
        try:
            process.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerFailure(ErrorKind.tool_internal_error, "the tool worker died") from None
        deadline = time.monotonic() + timeout
        fd = process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise WorkerFailure(ErrorKind.tool_limit, f"no answer within the wall clock ({timeout:g} s)")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = process.wait()
                    raise WorkerFailure(ErrorKind.tool_internal_error,
                                        f"the tool worker died (exit status {code}){self._last_words()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return _checked_answer(request, line)

    def _last_words(self) -> str:
        """The end of the worker's stderr (a traceback where Python itself failed), for the error message."""
        text = self._stderr.text(400).strip()
        return f": ...{text.splitlines()[-1]}" if text else ""

    def _replace(self) -> None:
        """A new worker with every open session rebuilt; where the classes do not load again, none (the
        next request tries again, and fails there with the reason)."""
        self._stop()
        self.restarts += 1
        try:
            self._start()
        except WorkerFailure:
            self._stop()

    def start(self) -> None:
        """Start the worker now (its classes imported) unless it runs; WorkerFailure when they do not load."""
        with self._lock:
            if self._process is None:
                self._start()

    def request(self, request: dict[str, Any], timeout: float | None = None,
                flight: _Flight | None = None) -> dict[str, Any]:
        """One request answered (blocking). A worker that fails is replaced before this returns, and the
        failure raised as WorkerFailure. ``flight``: the caller's handle to abandon it (``arequest``)."""
        with self._lock:
            session = str(request.get("session", ""))  # "" for the requests of no session (load, describe)
            if session in self._lost:
                raise WorkerFailure(ErrorKind.tool_internal_error, self._lost[session])
            if self._process is None:
                self._start()
            if flight is not None:
                flight.take_off(self._process)  # abandoned while it waited for the lock: nothing is sent
            try:
                answer = self._exchange(request, timeout or self.settings.wall_clock)
            except WorkerFailure:
                self._replace()
                raise
            finally:
                if flight is not None:
                    flight.land()
            if answer.get("worker_spent"):
                self._replace()  # what the call left behind is undefined: the session goes on from before it
            elif "error" not in answer and request["op"] == "open":
                # registered under the same lock as the answer: a worker replaced just after must rebuild it
                self._sessions[session] = _Session(request)
            elif request["op"] == "call" and session in self._sessions:
                self._sessions[session].calls.append(request)
            return answer

    async def arequest(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """``request`` in a thread. Cancelled (Ctrl-C, SIGTERM, a sample's timeout), the call in flight ends
        now: its worker is killed and replaced, instead of the thread holding the run for the call's wall
        clock (``asyncio.run`` waits for its threads)."""
        flight = _Flight()
        try:
            return await asyncio.to_thread(self.request, request, timeout, flight)
        except asyncio.CancelledError:
            flight.abandon()
            raise

    # -- sessions --------------------------------------------------------------------------------
    async def open(self, classes: Sequence[str], config: Mapping[str, Any], *, long_context: bool = False,
                   entry: str = "case") -> str:
        """A new session with instances of ``classes`` loaded from ``config``; its id."""
        session = f"s{next(_sessions)}"
        opening = {"op": "open", "session": session, "classes": list(classes), "config": dict(config),
                   "long_context": long_context, "entry": entry}
        answer = await self.arequest(opening, self.settings.open_wall_clock)
        if "error" in answer:
            raise WorkerFailure(str(answer["error"]), str(answer.get("message")))
        return session

    async def close_session(self, session: str) -> None:
        with self._lock:
            known = self._sessions.pop(session, None)
            self._lost.pop(session, None)
        if known is not None and self._process is not None:
            try:
                await self.arequest({"op": "close", "session": session})
            except WorkerFailure:
                pass  # the worker was replaced without this session: nothing left to close

    async def snapshot(self, session: str) -> Any:
        """Each instance's public attributes, as JSON values (what is not JSON: its ``repr``)."""
        answer = await self.arequest({"op": "snapshot", "session": session})
        if "error" in answer:
            raise WorkerFailure(str(answer["error"]), str(answer.get("message")))
        return json.loads(answer["state_json"])

    def close(self) -> None:
        """Stop the worker (sessions are gone with it)."""
        with self._lock:
            self._sessions.clear()
            self._lost.clear()
            self._stop()


_requests = itertools.count(1)


class _Flight:
    """One ``arequest``'s call: the worker it is in flight on, so that abandoning it kills that worker
    only while this call (and no other sample's) is the one it serves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._on: subprocess.Popen[bytes] | None = None
        self._abandoned = False

    def take_off(self, process: subprocess.Popen[bytes] | None) -> None:
        with self._lock:
            if self._abandoned:
                raise WorkerFailure(ErrorKind.tool_internal_error, "the call was abandoned before it started")
            self._on = process

    def land(self) -> None:
        with self._lock:
            self._on = None

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            if self._on is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._on.pid, signal.SIGKILL)  # the group this client started

STDERR_KEPT = 64 << 10
"""Bytes of the worker's stderr kept (its end): tools may print without bound, the harness keeps this."""


class _Tail:
    """The last ``STDERR_KEPT`` bytes of a pipe, drained by a thread: a tool printing gigabytes costs
    neither memory nor disk, and a dying worker's last words are still there to quote."""

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe
        self._kept = b""
        self._thread = threading.Thread(target=self._drain, name="tool-worker-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self._pipe.fileno(), 1 << 16):
                self._kept = (self._kept + chunk)[-STDERR_KEPT:]

    def text(self, limit: int) -> str:
        self._thread.join(1.0)  # the worker has exited: what it wrote last is read by now, or soon
        return self._kept[-limit:].decode(errors="replace")

    def close(self) -> None:
        self._thread.join(1.0)
        self._pipe.close()

ANSWER_FIELDS: dict[str, str | None] = {"call": "output_json", "describe": "tools", "snapshot": "state_json",
                                        "check": "valid", "load": None, "open": None, "close": None}
"""What an answer to each request carries when it is not an error."""


def _checked_answer(request: dict[str, Any], line: bytes) -> dict[str, Any]:
    """The worker's answer to ``request``, or WorkerFailure (``tool:internal_error``; the caller replaces the
    worker) for a line that is not one: not JSON, an answer to another request, or one without what the
    request asks for. A tool that writes on the protocol channel costs its call, never the run."""
    def refused(why: str) -> WorkerFailure:
        return WorkerFailure(ErrorKind.tool_internal_error,
                             f"the tool worker's answer channel carried {why} (did a tool write on it?): {line[:120]!r}")

    try:
        answer = json.loads(line)
    except (ValueError, RecursionError):
        raise refused("a line that is not JSON") from None
    if not isinstance(answer, dict):
        raise refused("JSON that is not an answer")
    if answer.get("id") != request["id"]:
        raise refused(f"an answer to no request in flight (id {answer.get('id')!r}, expected {request['id']})")
    if "error" in answer:
        if not isinstance(answer["error"], str) or not isinstance(answer.get("message", ""), str):
            raise refused("an error answer without a kind and message")
        return answer
    wanted = ANSWER_FIELDS.get(str(request.get("op")))
    if wanted is not None and wanted not in answer:
        raise refused(f"an answer to {request.get('op')!r} without {wanted!r}")
    return answer


def _descendants(pid: int) -> list[psutil.Process]:
    """The live descendants of the worker ``pid`` (they are all its own: the worker is their subreaper)."""
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


__all__ = ["WorkerClient", "WorkerFailure", "WorkerSettings"]
