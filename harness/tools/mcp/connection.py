"""One MCP client session to one server, owned by one asyncio task.

The MCP SDK runs on anyio: the stdio transport and ``ClientSession`` are context managers whose cancel
scopes must be entered and left in the same task. So a ``Connection`` starts a task that owns both
contexts for the server's whole life and runs the requests put on its queue one at a time, each under
its own deadline; ``close`` cancels that task's scope, and the SDK's shutdown (stdin closed, then
SIGTERM and SIGKILL to the server's own process group, every wait bounded) runs in the task that
opened it. The SDK starts a stdio server in a new session, so the group signalled is the server's,
never one the harness did not start; on Linux a guard (``GUARD``) has the kernel kill the server when
the harness dies, SIGKILL included.

A request ends in its result or in a ``ServerFailure`` with a ``tool:`` kind: past its deadline
(``tool:limit``), the server wrote a line on stdout that is not JSON-RPC, exited or broke the session
(``tool:internal_error``). After any failure the connection is dead; the caller starts a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.vocabulary import ErrorKind

if TYPE_CHECKING:
    from mcp import ClientSession

Job = Callable[["ClientSession"], Awaitable[Any]]


class ServerFailure(Exception):
    """A server that did not answer a request; ``kind`` is the ``checker:reason`` of the call."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """How to reach one server: a stdio command (its args, env and cwd already substituted) or a URL."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None


class Connection:
    """A started server and its client session (see the module doc)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self._queue: asyncio.Queue[tuple[Job, float, asyncio.Future[Any]]] = asyncio.Queue()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None
        self._scope: Any = None  # the owning task's anyio CancelScope
        self._job_scope: Any = None
        self._garbage: str | None = None
        self._errlog: Any = None
        self.failure: ServerFailure | None = None
        """Why the connection died (None while it lives)."""

    @property
    def alive(self) -> bool:
        return self.failure is None and self._task is not None and not self._task.done()

    async def start(self, timeout: float) -> None:
        """Start the server and initialize the session; ServerFailure when it cannot within ``timeout`` s."""
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.spec.command or self.spec.url}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            await self.close()
            raise ServerFailure(ErrorKind.tool_limit, f"the MCP server did not start within {timeout:g} s") from None
        except ServerFailure as exc:
            said = self.stderr_tail()
            await self.close()
            raise ServerFailure(exc.kind, f"{exc}{'; its stderr: ' + said if said else ''}") from None

    async def request(self, job: Job, timeout: float) -> Any:
        """``job(session)``'s answer, run in the owning task under ``timeout`` s; ServerFailure otherwise."""
        if not self.alive or self._task is None:
            raise self.failure or ServerFailure(ErrorKind.tool_internal_error, "the MCP server is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._queue.put((job, timeout, future))
        await asyncio.wait([future, self._task], return_when=asyncio.FIRST_COMPLETED)
        if not future.done():  # the owning task ended first: the server is gone
            future.cancel()
            raise self.failure or ServerFailure(ErrorKind.tool_internal_error, "the MCP session ended")
        return future.result()

    def stderr_tail(self, size: int = 400) -> str:
        """The last ``size`` characters the server wrote on stderr."""
        if self._errlog is None or self._errlog.closed:
            return ""
        self._errlog.flush()
        self._errlog.seek(0)
        return self._errlog.read()[-size:].strip()

    async def close(self) -> None:
        """Stop the server (bounded: the SDK's shutdown) and wait for the owning task."""
        if self._task is None:
            return
        if self._scope is not None:
            self._scope.cancel()
        elif not self._task.done():
            self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        if self._errlog is not None:
            self._errlog.close()

    def _die(self, kind: str, message: str) -> None:
        if self.failure is None:
            self.failure = ServerFailure(kind, message)
        if not self._ready.done():
            self._ready.set_exception(self.failure)
            self._ready.exception()  # retrieved here: start() may be gone already

    async def _on_message(self, message: Any) -> None:
        """The session's handler of incoming messages: an exception is a line that is not JSON-RPC."""
        if isinstance(message, Exception):
            self._garbage = f"the MCP server wrote a line on stdout that is not JSON-RPC ({type(message).__name__})"
            if self._job_scope is not None:
                self._job_scope.cancel()
            elif self._scope is not None:  # between calls: the next call starts a fresh server
                self._die(ErrorKind.tool_internal_error, self._garbage)
                self._scope.cancel()

    async def _own(self) -> None:
        import anyio

        try:
            with anyio.CancelScope() as self._scope:
                async with self._transport() as streams, self._session(streams) as session:
                    await session.initialize()
                    self._ready.set_result(None)
                    while self._garbage is None:
                        job, timeout, future = await self._queue.get()
                        await self._run(session, job, timeout, future)
                    self._die(ErrorKind.tool_internal_error, self._garbage)
        except Exception as exc:  # the server exited, refused initialize, or broke the session
            self._die(ErrorKind.tool_internal_error, f"the MCP server failed: {_text(exc)}")
        finally:
            self._die(ErrorKind.tool_internal_error, "the MCP session ended")

    async def _run(self, session: ClientSession, job: Job, timeout: float, future: asyncio.Future[Any]) -> None:
        import anyio

        failure: ServerFailure | None = None
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as self._job_scope:
            try:
                answer = await job(session)
            except Exception as exc:
                failure = ServerFailure(ErrorKind.tool_internal_error, f"the MCP server failed: {_text(exc)}")
        self._job_scope, hit = None, self._job_scope
        if hit.cancelled_caught:
            failure = (ServerFailure(ErrorKind.tool_internal_error, self._garbage) if self._garbage else
                       ServerFailure(ErrorKind.tool_limit, f"no answer from the MCP server within {timeout:g} s"))
        if future.done():
            return
        if failure is not None:
            self._die(failure.kind, str(failure))
            future.set_exception(failure)
            self._scope.cancel()  # a failed server is not used again
        else:
            future.set_result(answer)

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Sequence[Any]]:
        if self.spec.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.spec.url)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert self.spec.command is not None
        command, args = guarded(self.spec.command, list(self.spec.args))
        params = StdioServerParameters(command=command, args=args, env=dict(self.spec.env), cwd=self.spec.cwd)
        # A server logs on stderr freely: kept in a file of its own, the run's output stays the harness's,
        # and a server that cannot start is named with its last words.
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        return stdio_client(params, errlog=self._errlog)

    def _session(self, streams: Sequence[Any]) -> ClientSession:
        from mcp import ClientSession

        return ClientSession(streams[0], streams[1], message_handler=self._on_message)


GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"  # PR_SET_PDEATHSIG
    "if os.getppid() != int(sys.argv[1]): os._exit(70)\n"  # the harness died before the line above
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
"""Run before a stdio server on Linux: the kernel kills the server when the harness's thread that
started it dies, SIGKILL included (the SDK's own shutdown cannot run then). ``execvp`` keeps the pid,
so the server is still the process (and group) the SDK started and stops."""


def guarded(command: str, args: list[str]) -> tuple[str, list[str]]:
    """The command line that runs ``command args`` under ``GUARD`` (Linux; elsewhere as given)."""
    if sys.platform != "linux":
        return command, args
    return sys.executable, ["-c", GUARD, str(os.getpid()), command, *args]


def _text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_text(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


__all__ = ["GUARD", "Connection", "Job", "ServerFailure", "ServerSpec", "guarded"]
