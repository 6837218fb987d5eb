"""A fault-injecting OpenAI-compatible server for tests: a real HTTP server on 127.0.0.1 (a thread)
that answers every chat-completions request 200 with the bytes a fault says, and lists one model.

``Fault`` holds the exact bytes of a body (``body``) and its Content-Type; ``sse(...)`` builds an event
stream from the ``data:`` values given. ``after`` answers the first ``times`` requests with the fault
and the others with ``after`` (a good answer, for the retry tests)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = "application/json"
SSE = "text/event-stream"


@dataclass(frozen=True)
class Fault:
    """One answer as it goes on the wire (status 200)."""

    body: bytes
    content_type: str = JSON


def data(value: Any) -> str:
    """One event's data: JSON for a value, the text itself for a str."""
    return value if isinstance(value, str) else json.dumps(value)


def sse(*events: Any, done: bool = True) -> Fault:
    """An event stream of ``events`` (``data:`` lines), then ``[DONE]`` unless ``done`` is False."""
    lines = [f"data: {data(e)}\n\n" for e in events] + (["data: [DONE]\n\n"] if done else [])
    return Fault("".join(lines).encode(), SSE)


def body(value: Any) -> Fault:
    """A JSON body of ``value`` (or the text itself for a str)."""
    return Fault(data(value).encode(), JSON)


def chunk(delta: Any = None, finish: Any = None, **top: Any) -> dict[str, Any]:
    """A chat.completion.chunk with one choice (``delta`` defaults to {})."""
    choice = {"index": 0, "delta": {} if delta is None else delta, "finish_reason": finish}
    return {"id": "s", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **top}


def completion(message: Any = None, finish: Any = "stop", **top: Any) -> dict[str, Any]:
    """A chat.completion with one choice (``message`` defaults to an assistant's "hello")."""
    msg = {"role": "assistant", "content": "hello"} if message is None else message
    return {"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}], **top}


GOOD_STREAM = sse(chunk({"role": "assistant", "content": "hello"}), chunk(finish="stop"))
GOOD_BODY = body(completion())


@dataclass
class FaultyServer:
    fault: Fault
    times: int = 1_000_000
    after: Fault | None = None
    healthy_first: int = 0
    """Requests answered well before the fault begins (a run's preflight probes, one per lane)."""
    requests: int = 0
    port: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, request: dict[str, Any]) -> Fault:
        self.requests += 1
        self.bodies.append(request)
        if self.requests <= self.healthy_first:
            return GOOD_STREAM if request.get("stream") else GOOD_BODY
        if self.requests - self.healthy_first <= self.times or self.after is None:
            return self.fault
        return self.after


def _handler(state: FaultyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, fault: Fault) -> None:
            self.send_response(200)
            self.send_header("Content-Type", fault.content_type)
            self.send_header("Content-Length", str(len(fault.body)))
            self.end_headers()
            self.wfile.write(fault.body)

        def do_GET(self) -> None:
            self._send(body({"object": "list", "data": [{"id": "m", "object": "model"}]}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):  # vLLM's /tokenize (the preflight asks): not here
                self.send_error(404)
                return
            try:
                self._send(state.answer(request))
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (a retry test) is not the server's error


@contextmanager
def faulty_server(fault: Fault, times: int = 1_000_000, after: Fault | None = None,
                  healthy_first: int = 0) -> Iterator[FaultyServer]:
    """The server, serving until the block ends."""
    state = FaultyServer(fault, times, after, healthy_first)
    httpd = _QuietServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
