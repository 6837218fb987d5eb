"""``harness serve`` cannot be locked out (issue 22, item 2): idle, slowloris and slow-body connections
time out, headers are bounded (431), and a connection cap that idle sockets cannot fill keeps
``/health`` answering. A real ``harness serve --engine oracle`` subprocess; the attacks are the ones
``harness bench serve --attacks lockout`` measures (``harness.bench.lockout``). Before: every idle or
slowloris attack got /health a 503 and its sockets were never closed; a 64 MB header was read whole."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.bench.lockout import ATTACKS, LockoutAttack, health, run_attack
from harness.engines.serve.connections import Admission
from harness.engines.serve.limits import ServeLimits
from tests.servers import Server

pytestmark = pytest.mark.slow  # a real `harness serve` per test group, ~10 s each to start and attack

# Short bounds so every attack ends within seconds; the defaults are in the README.
BOUNDS = {"HARNESS_SERVE_HEADER_TIMEOUT_S": "2", "HARNESS_SERVE_BODY_TIMEOUT_S": "2",
          "HARNESS_SERVE_KEEPALIVE_TIMEOUT_S": "1", "HARNESS_SERVE_MAX_CONNECTIONS": "100"}
HOLD_S = 60.0
"""How long an attack may wait for the server to close its sockets (the bounds above are 1-2 s)."""

# (attack, the status line its sockets get before the server closes them: "" for none).
LOCKOUTS: list[tuple[LockoutAttack, str]] = [
    (ATTACKS[0], ""),  # 31 idle connections (the issue's repro)
    (ATTACKS[1], ""),  # 200 idle
    (ATTACKS[2], ""),  # 300 idle: over max_connections=100, the longest waiting are closed to make room
    (ATTACKS[3], "HTTP/1.1 408 "),  # 40 slowloris
    (ATTACKS[4], "HTTP/1.1 431 "),  # a 64 MB header
    (ATTACKS[5], "HTTP/1.1 408 "),  # Content-Length: 1000, 8 bytes sent
    (ATTACKS[6], "HTTP/1.1 408 "),  # a slow body
    (ATTACKS[7], "HTTP/1.1 200 "),  # an idle keep-alive connection after its response
]


@pytest.fixture(scope="module")
def bounded() -> Iterator[Server]:
    server = Server("oracle", env=BOUNDS)
    yield server
    server.stop()


@pytest.mark.parametrize(("spec", "answered"), LOCKOUTS, ids=[a.name for a, _ in LOCKOUTS])
def test_an_attack_cannot_lock_serve_out(bounded: Server, spec: LockoutAttack, answered: str) -> None:
    figure = run_attack(bounded.url, spec, HOLD_S)
    assert figure.health_status == 200, figure
    assert figure.answered.startswith(answered), figure
    assert figure.closed == figure.sockets, figure  # the server closed every attacking socket
    assert health(bounded.url)[0] == 200


def test_the_issues_repro_on_the_default_bounds(oracle_server: Server) -> None:
    """31 idle sockets held open, then /health (it was 503 for as long as they stayed)."""
    host, port = oracle_server.url.split("//")[1].split("/")[0].split(":")
    idle = [socket.create_connection((host, int(port))) for _ in range(31)]
    try:
        assert httpx.get(oracle_server.url.rsplit("/v1", 1)[0] + "/health", timeout=30).status_code == 200
    finally:
        for s in idle:
            s.close()


def _request(url: str, header_bytes: int) -> bytes:
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * header_bytes + b"\r\n\r\n")
        return s.recv(4096).split(b"\r\n", 1)[0]


# (header size, status): max_header_bytes is 32 KiB by default.
HEADERS: list[tuple[int, bytes]] = [(16 * 1024, b"HTTP/1.1 200 OK"), (40 * 1024, b"HTTP/1.1 431 Request Header Fields Too Large")]


@pytest.mark.parametrize(("size", "status"), HEADERS, ids=[str(h[0]) for h in HEADERS])
def test_headers_are_bounded_by_max_header_bytes(bounded: Server, size: int, status: bytes) -> None:
    assert _request(bounded.url, size) == status


async def test_chat_completions_beyond_max_requests_get_503_and_health_still_answers() -> None:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    release = asyncio.Event()

    async def chat(_: object) -> JSONResponse:
        await release.wait()
        return JSONResponse({"ok": True})

    async def ok(_: object) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/health", ok)],
                    middleware=[Middleware(Admission, max_requests=2)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        held = [asyncio.create_task(client.post("/v1/chat/completions", json={})) for _ in range(2)]
        await asyncio.sleep(0.1)
        refused = await client.post("/v1/chat/completions", json={})
        assert refused.status_code == 503 and "max_requests=2" in refused.json()["error"]["message"]
        assert (await client.get("/health")).status_code == 200
        release.set()
        assert [r.status_code for r in await asyncio.gather(*held)] == [200, 200]
        assert (await client.post("/v1/chat/completions", json={})).status_code == 200


@contextlib.contextmanager
def bounded_uvicorn(app: Any, limits: ServeLimits) -> Iterator[int]:
    """A real uvicorn (uvloop, the bounded protocol) serving ``app`` in a thread; yields its port."""
    import threading
    import time

    import uvicorn

    from harness.engines.serve.connections import uvicorn_options
    from harness.engines.serve.server import listen_socket

    sock = listen_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, loop="uvloop", log_level="warning", **uvicorn_options(limits)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(300):
            if server.started:
                break
            time.sleep(0.1)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def test_a_request_received_while_the_loop_was_held_up_is_answered_not_timed_out() -> None:
    """uvloop runs due timers before it reads the sockets: a request that arrived while the event loop was
    held up past the header deadline (a long call holding the GIL) must be read, not refused with 408.
    The app holds the loop on purpose."""
    import threading
    import time

    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    holding = threading.Event()

    async def hold(_: object) -> PlainTextResponse:
        holding.set()
        time.sleep(2.5)  # holds the event loop past the 1 s header deadline
        return PlainTextResponse("held")

    async def ok(_: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/hold", hold), Route("/health", ok)])
    with bounded_uvicorn(app, ServeLimits(header_timeout_s=1.0)) as port:
        base = f"http://127.0.0.1:{port}"
        waiting = socket.create_connection(("127.0.0.1", port), timeout=30)  # its header deadline starts
        assert httpx.get(base + "/health", timeout=30).text == "ok"  # the loop has accepted it
        holder = threading.Thread(target=lambda: httpx.get(base + "/hold", timeout=30), daemon=True)
        holder.start()
        assert holding.wait(30)
        waiting.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # arrives while the loop is held
        assert waiting.recv(4096).split(b"\r\n", 1)[0] == b"HTTP/1.1 200 OK"
        holder.join(30)
        waiting.close()


def test_an_answer_longer_than_the_deadlines_comes_whole() -> None:
    """The header and body deadlines end when the request is whole: an answer (plain or streamed) that
    takes longer than both is sent whole, never cut by a 408."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, StreamingResponse
    from starlette.routing import Route

    async def slow(_: object) -> PlainTextResponse:
        await asyncio.sleep(2.5)
        return PlainTextResponse("slow")

    async def chunks() -> Any:
        for i in range(5):
            await asyncio.sleep(0.5)
            yield f"data: {i}\n\n"

    async def stream(_: object) -> StreamingResponse:
        return StreamingResponse(chunks(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/slow", slow, methods=["GET", "POST"]), Route("/stream", stream, methods=["GET", "POST"])])
    with bounded_uvicorn(app, ServeLimits(header_timeout_s=1.0, body_timeout_s=1.0)) as port:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            assert client.get("/slow").text == "slow"  # headers and no body: the request is whole at once
            assert client.get("/stream").text == "".join(f"data: {i}\n\n" for i in range(5))
            assert client.post("/slow", json={"a": 1}).text == "slow"  # the same connection, kept alive
            assert client.post("/stream", json={"a": 2}).text == "".join(f"data: {i}\n\n" for i in range(5))
