"""``harness serve``'s HTTP connections: time bounds, a header bound, and a cap idle sockets cannot fill.

uvicorn alone leaves a server open to lock-out (measured with ``harness bench serve``):

- its keep-alive timeout (``timeout_keep_alive``) is armed only after a response, and any byte
  received disarms it: a connection that never sends a request, or sends its headers a byte at a time
  (slowloris), or declares a body it never sends, is held for ever;
- ``limit_concurrency`` counts open connections, idle ones included, and answers 503 beyond: 31 idle
  sockets locked every request out, ``/health`` included;
- its default HTTP parser (httptools) reads headers of any size (a 64 MB header was read whole);
  h11's ``max_incomplete_event_size`` bounds them but answers 400, not 431.

So the server runs uvicorn's h11 protocol (pure Python, the one whose buffer is bounded) subclassed
here with the bounds of ``ServeLimits``: a request's headers must be complete ``header_timeout_s``
after the connection opened or its previous response ended (closed quietly when nothing came, 408
when part of a request did), over ``max_header_bytes`` is 431, a body must arrive within
``body_timeout_s`` of its headers (408), and an idle keep-alive connection closes after
``keepalive_timeout_s`` (uvicorn's own timer). Beyond ``max_connections`` open connections, the one
that has waited longest for a request's headers is closed to make room: sockets that send nothing
cannot keep a real request out. Work is bounded separately: ``Admission`` answers 503 to chat
completions beyond ``max_requests`` in flight, and never counts ``/health`` or ``/v1/models``.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from harness.engines.serve.limits import MIB, ServeLimits

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

Phase = Literal["headers", "body", "busy"]
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
REASONS = {408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large",
           503: "Service Unavailable"}


def error_body(status: int, message: str) -> bytes:
    """The JSON error every refusal of the server carries (vLLM's shape)."""
    kind = {408: "RequestTimeoutError", 431: "RequestHeaderFieldsTooLargeError"}.get(status, "ServiceUnavailableError")
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": status}}).encode()


class Connections:
    """The open connections of one server, oldest first, with the cap ``max_connections``."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[BoundedH11Protocol, None] = {}
        self.evicted = 0
        """Connections closed to make room (each had not sent a whole request)."""

    def admit(self, conn: BoundedH11Protocol) -> None:
        self.open[conn] = None
        if len(self.open) <= self.cap:
            return
        waiting = [c for c in self.open if c.phase == "headers"]
        if not waiting:  # every other connection is sending a body or being answered: refuse this one
            self.open.pop(conn)
            conn.refuse(503, f"over max_connections={self.cap} open connections, each busy with a request")
            return
        victim = min(waiting, key=lambda c: c.phase_started)
        self.open.pop(victim)
        self.evicted += 1
        victim.transport.close()

    def remove(self, conn: BoundedH11Protocol) -> None:
        self.open.pop(conn, None)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the time and size bounds of ``limits`` (see the module doc). The
    subclass made by ``bounded_protocol`` sets ``limits`` and ``connections``."""

    limits: ClassVar[ServeLimits]
    connections_of_server: ClassVar[Connections]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.phase: Phase = "busy"
        self.phase_started = self.loop.time()
        self.phase_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._cycle_seen: Any = None
        self._enter("headers")
        self.connections_of_server.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.connections_of_server.remove(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.phase_bytes += len(data)
        if self.phase == "headers" and self._headers_over(data):
            self.refuse(431, f"the request's headers are over the bound max_header_bytes="
                             f"{self.limits.max_header_bytes} (bytes)")
            return
        super().data_received(data)

    def _headers_over(self, data: bytes) -> bool:
        """Whether the request line and headers, with ``data``, pass ``max_header_bytes`` (checked before
        h11 reads them, so a request over the bound never reaches the app)."""
        held = self.conn.trailing_data[0]
        blank = _BLANK_LINE.search(held[-3:] + data)  # the end of the headers (h11 also takes bare LFs)
        size = len(held) + (blank.end() - min(3, len(held)) if blank else len(data))
        return size > self.limits.max_header_bytes

    def handle_events(self) -> None:
        super().handle_events()
        self._sync()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._sync()

    def _sync(self) -> None:
        """Follow h11's view of the client: waiting for headers, sending a body, or waiting for us."""
        if self.transport.is_closing():
            self._disarm()
            return
        if self.cycle is not self._cycle_seen:  # a request's headers came: their deadline is met
            self._cycle_seen = self.cycle
            self._enter("busy")
        theirs = self.conn.their_state
        if theirs is h11.SEND_BODY:
            self._enter("body")
        elif theirs is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            self._enter("headers")
        else:
            self._enter("busy")

    def _enter(self, phase: Phase) -> None:
        if self.phase == phase:
            return  # a deadline runs from the start of its phase, not from the last byte
        self.phase, self.phase_started, self.phase_bytes = phase, self.loop.time(), 0
        if phase == "headers":
            self._arm(self.limits.header_timeout_s, self._headers_late)
        elif phase == "body":
            self._arm(self.limits.body_timeout_s, self._body_late)
        else:
            self._disarm()  # the request is whole: the app answers it, with no deadline of ours

    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._confirm, callback)

    def _confirm(self, callback: Any) -> None:
        """A deadline passed: act on it one loop turn later. uvloop runs due timers before it reads the
        sockets, so after the loop was held up (a long call holding the GIL) a request already received
        must get its turn first; if it came, the phase changed and this second timer is cancelled."""
        self._timer = self.loop.call_later(0, callback)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _headers_late(self) -> None:
        if self.phase_bytes == 0 and len(self.conn.trailing_data[0]) == 0:
            self.transport.close()  # nothing came: an idle connection, closed like a keep-alive one
            return
        self.refuse(408, f"the request's headers did not come within header_timeout_s={self.limits.header_timeout_s}")

    def _body_late(self) -> None:
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()
            return
        self.refuse(408, f"the request's body did not come within body_timeout_s={self.limits.body_timeout_s}")

    def refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with ``message`` on the wire as it is, and close (h11's state is bypassed:
        the connection ends here; the app, if it was reading the body, sees a disconnect)."""
        body = error_body(status, message)
        head = (f"HTTP/1.1 {status} {REASONS[status]}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
        if not self.transport.is_closing():
            self.transport.write(head.encode("ascii") + body)
            self.transport.close()
        self._disarm()


def bounded_protocol(limits: ServeLimits) -> tuple[type[BoundedH11Protocol], Connections]:
    """The protocol class for one server under ``limits``, and its connection registry."""
    registry = Connections(limits.max_connections)
    return type("ServeProtocol", (BoundedH11Protocol,), {"limits": limits, "connections_of_server": registry}), registry


def uvicorn_options(limits: ServeLimits) -> dict[str, Any]:
    """uvicorn.Config settings: the bounded protocol, uvicorn's own keep-alive timer, h11's buffer bound
    above ``max_header_bytes`` (so the 431 here answers first), and no ``limit_concurrency`` (it counts
    idle connections: ``Admission`` bounds the work instead)."""
    protocol, _ = bounded_protocol(limits)
    return {"http": protocol, "timeout_keep_alive": limits.keepalive_timeout_s,
            "h11_max_incomplete_event_size": limits.max_header_bytes + MIB, "limit_concurrency": None}


class Admission:
    """ASGI middleware: chat completions beyond ``max_requests`` in flight get 503 at once (their body
    unread); other paths (``/health``, ``/v1/models``) are never counted or refused."""

    def __init__(self, app: ASGIApp, max_requests: int, path: str = "/v1/chat/completions") -> None:
        self.app, self.max_requests, self.path = app, max_requests, path
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            body = error_body(503, f"over max_requests={self.max_requests} chat completions in flight; try again")
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


__all__ = ["Admission", "BoundedH11Protocol", "Connections", "bounded_protocol", "uvicorn_options"]
