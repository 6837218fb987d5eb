"""``harness serve``: an OpenAI/vLLM-compatible HTTP server in front of the local or oracle engine.

Endpoints: ``GET /v1/models``, ``POST /v1/chat/completions`` (plain and SSE streaming), ``GET /health``.
Requests are read as vLLM reads them (``structured_outputs``, ``response_format``, ``tools``,
``stop``, ``max_tokens``/``max_completion_tokens``, ``temperature``, ``seed``, ``stream``,
``stream_options``) and answered in vLLM's response shape with ``usage``.

Stricter than vLLM where vLLM fails open: an unknown request field, an unknown or removed
constraint field, two constraints at once, a constraint of the wrong type or one xgrammar cannot
compile is HTTP 400 with a message, checked before any token is generated (so also before a stream
starts; the body is a pydantic model, ``harness.engines.serve.chat_request``). The server never answers
unconstrained when a constraint was asked for. The constraint is passed on in one canonical form,
``structured_outputs: {grammar|json|structural_tag: text}``.

Bounded (``harness.engines.serve.limits.ServeLimits``, named in every refusal): the body's size (413) and
nesting, the constraint's size, a new grammar's compile time and memory (compiled first in a worker
process that is killed at either bound: ``harness.engines.serve.compile_guard``), the compiled-grammar cache,
chat completions in flight (503), shutdown (generations in flight are told to stop), and each
connection's time and header size, with a connection cap idle sockets cannot fill
(``harness.engines.serve.connections``).

Tool calls: when the request has ``tools`` (and ``tool_choice`` is not ``"none"``) the family
adapter's ``parse_response`` reads the output; when every call in it parses cleanly the answer comes
back as ``message.tool_calls`` (``finish_reason: "tool_calls"``) and ``content`` keeps only the text
outside the calls. Otherwise the raw text is returned as ``content``, so the client's own parser sees
(and counts) what was wrong; a failure is never hidden behind a partial list. While tools are active a
stream holds the text back until the answer is complete, then sends it as content or tool-call deltas
(vLLM's parsers also send a call once it is complete); without tools text streams as it is generated.
Control tokens stay in the text (as vLLM with ``skip_special_tokens: false``).

Stack: Starlette + uvicorn (pure Python, ~170 kB together, their other dependencies, anyio, h11 and
click, are already installed with httpx and typer): a real HTTP/1.1 server with SSE streaming and
client-disconnect handling, in far fewer lines than a hand-written one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import TYPE_CHECKING, Any

from harness.agents import CompletionResponse, ConstraintArtifact, ConstraintError, ModelCallError
from harness.engines.serve.chat_request import BadRequest, Parsed, parse_body
from harness.engines.serve.compile_guard import CompileGuard
from harness.engines.serve.limits import MIB, ServeLimits
from harness.files import InputFileError, load_json
from harness.vllm_schemas import json_text_refusal

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from harness.engines.served import ServedEngine

def shape_message(parsed: Parsed, response: CompletionResponse) -> tuple[str | None, list[dict[str, Any]], str]:
    """(content, tool_calls, finish_reason) as vLLM answers under the request's ``tool_choice``."""
    from harness.engines.tool_choice import calls_from_json
    from harness.grammar.families import get_adapter

    content = response.content
    finish = response.finish_reason or "stop"
    choice = parsed.tool_choice
    if parsed.server_built.startswith("json"):  # vLLM's JSON fallback: its serving code reads the calls
        calls = calls_from_json(content, choice)
        if calls is None:  # not the JSON the constraint asks for (cut at max_tokens): the raw text
            return content, [], finish
        return "", [c.to_openai() for c in calls], "tool_calls" if choice.mode == "required" else "stop"
    adapter = get_adapter(parsed.family)
    if choice.mode == "none" or adapter.native_call_start not in (content or ""):  # a structural tag: as auto
        return content, [], finish  # a JSON answer is content for vLLM's native-format tool parsers
    result = adapter.parse_response(content, (), parsed.request.tools)
    if result.tool_calls and result.ok:
        outside = result.content if result.content and result.content.strip() else None
        kept = result.tool_calls if choice.parallel else result.tool_calls[:1]
        return outside, [c.to_openai() for c in kept], "tool_calls"
    return content, [], finish


def _usage(response: CompletionResponse) -> dict[str, int]:
    """Always present, as vLLM sends it (zeros for what an engine did not count)."""
    u = response.usage
    if u is None:
        generated = response.stats.generated_tokens if response.stats is not None else 0
        return {"prompt_tokens": 0, "completion_tokens": generated, "total_tokens": generated}
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "total_tokens": u.total_tokens}


def _stats(response: CompletionResponse) -> dict[str, Any]:
    """Engine figures, in a ``harness`` field clients may ignore."""
    s = response.stats
    out: dict[str, Any] = {"ttft_ms": response.ttft_ms, "latency_ms": response.latency_ms}
    if s is not None:
        out.update(
            engine=s.engine, compile_ms=s.compile_ms, compile_cached=s.compile_cached, mask_fills=len(s.mask_us),
            mask_us_total=sum(s.mask_us), generated_tokens=s.generated_tokens, grammar_error=s.grammar_error,
            tokens_per_s=s.tokens_per_s, prefill_ms=s.prefill_ms, reused_prompt_tokens=s.reused_prompt_tokens,
        )
    return out


def _completion(head: dict[str, Any], parsed: Parsed, response: CompletionResponse) -> dict[str, Any]:
    """A non-streamed answer as vLLM's ``chat.completion`` body."""
    content, calls, finish = shape_message(parsed, response)
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
    return {
        **head, "object": "chat.completion", "model": response.model or parsed.request.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _usage(response), "harness": _stats(response),
    }


def _error(message: str, status: int, kind: str) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": status}}, status)


def _model_error(exc: ModelCallError) -> Response:
    if exc.kind in ("model:bad_request", "model:context_length"):
        return _error(str(exc), 400, "BadRequestError")
    if exc.kind in ("model:no_weights", "model:not_found"):
        return _error(str(exc), 404, "NotFoundError")
    return _error(str(exc), 500, "InternalServerError")


async def _read_body(http: Request, limits: ServeLimits) -> bytes | Response:
    """The request body, read no further than ``max_body_bytes`` (413 beyond)."""
    bound = limits.max_body_bytes
    too_big = f"the request body is over the bound max_body_bytes={bound} (bytes)"
    declared = http.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > bound:
        return _error(f"{too_big}: Content-Length is {declared}", 413, "RequestTooLargeError")
    from starlette.requests import ClientDisconnect

    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in http.stream():
            size += len(chunk)
            if size > bound:
                return _error(too_big, 413, "RequestTooLargeError")
            chunks.append(chunk)
    except ClientDisconnect:  # the client left, or its body was late (the connection answered 408)
        return _error("the connection closed before the request's body came", 400, "BadRequestError")
    return b"".join(chunks)


class _Lifetime:
    """What the app shares across requests: the compile guard and the generations in flight (told to
    stop at shutdown, so a long answer does not hold the process)."""

    def __init__(self, guard: CompileGuard | None) -> None:
        self.guard = guard
        self.cancels: set[threading.Event] = set()

    def stop(self) -> None:
        for cancel in list(self.cancels):
            cancel.set()
        if self.guard is not None:
            self.guard.close()


def _middleware(limits: ServeLimits) -> list[Any]:
    """Chat completions beyond ``max_requests`` in flight get 503 (``harness.engines.serve.connections.Admission``)."""
    from starlette.middleware import Middleware

    from harness.engines.serve.connections import Admission

    return [Middleware(Admission, max_requests=limits.max_requests)]


def _refuse_as_vllm(artifact: ConstraintArtifact) -> None:
    """ConstraintError (a 400) for a JSON schema vLLM's xgrammar backend refuses before compiling it
    (``harness.vllm_schemas``): the server answers as vLLM does."""
    if artifact.kind == "json" and (refused := json_text_refusal(artifact.value)) is not None:
        raise ConstraintError(refused)


def create_app(engine: ServedEngine, limits: ServeLimits | None = None, guard: CompileGuard | None = None) -> Starlette:
    """The ASGI app serving ``engine`` (loaded by the caller or on first request) under ``limits``. With
    a ``guard``, a grammar the server has not seen compiles first in its worker process (see
    ``harness.engines.serve.compile_guard``); without one it compiles in the server (tests, library use)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    from harness.grammar import compile_artifact

    limits = limits or ServeLimits()
    created = int(time.time())
    life = _Lifetime(guard)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        life.stop()

    async def models(_: Request) -> Response:
        data = [{"id": m, "object": "model", "created": created, "owned_by": "harness"} for m in engine.model_ids]
        return JSONResponse({"object": "list", "data": data})

    async def health(_: Request) -> Response:
        body: dict[str, Any] = {"status": "ok"}
        if guard is not None:
            body["compile_guard"] = dataclasses.asdict(guard.stats)
        return JSONResponse(body)

    async def constrain(parsed: Parsed) -> Response | None:
        """Compile the request's constraint under the bounds; a 400 naming the problem, or None."""
        if parsed.artifact is None or getattr(engine, "grammar_backend", "xgrammar") != "xgrammar":
            return None  # llguidance builds its matcher per request in the engine (a refusal is a 400 there)
        try:
            _refuse_as_vllm(parsed.artifact)
            if guard is not None:
                await guard.compile(parsed.artifact, parsed.family)
            else:
                await asyncio.to_thread(partial(compile_artifact, keep=True), parsed.artifact, parsed.family)
        except ConstraintError as exc:
            return _error(str(exc), 400, "BadRequestError")
        return None

    async def chat(http: Request) -> Response:
        raw = await _read_body(http, limits)
        if not isinstance(raw, bytes):
            return raw
        try:
            body = load_json(raw, "the request body", max_depth=limits.max_json_depth, bound="max_json_depth")
        except InputFileError as exc:
            return _error(str(exc), 400, "BadRequestError")
        try:
            parsed = await asyncio.to_thread(
                parse_body, body, engine, max_constraint_bytes=limits.max_constraint_bytes, compile=False,
                max_json_depth=limits.max_json_depth,
            )
        except BadRequest as exc:
            return _error(str(exc), exc.status, exc.kind)
        refused = await constrain(parsed)
        if refused is not None:
            return refused
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time())}
        if parsed.request.stream:
            return StreamingResponse(_sse(engine, parsed, head, life.cancels), media_type="text/event-stream")
        cancel = threading.Event()
        life.cancels.add(cancel)
        try:
            response = await asyncio.to_thread(engine.complete, parsed.request, None, cancel)
        except ModelCallError as exc:
            return _model_error(exc)
        finally:
            cancel.set()  # a client that went away (the task cancelled) stops the generation
            life.cancels.discard(cancel)
        return JSONResponse(_completion(head, parsed, response))

    return Starlette(routes=[
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ], lifespan=lifespan, middleware=_middleware(limits))


async def _sse(
    engine: ServedEngine, parsed: Parsed, head: dict[str, Any], cancels: set[threading.Event]
) -> AsyncIterator[str]:
    """vLLM's chunk stream: role, content deltas (or tool-call deltas), finish, usage, [DONE]."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()
    cancel = threading.Event()
    cancels.add(cancel)
    model = parsed.request.model

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
        choices = [] if usage is not None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        body: dict[str, Any] = {**head, "object": "chat.completion.chunk", "model": model, "choices": choices}
        if usage is not None:
            body["usage"] = usage
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    def push(text: str) -> None:  # called from the engine's worker thread
        loop.call_soon_threadsafe(queue.put_nowait, text)

    reads_calls = parsed.tool_choice.mode != "none"  # the text is held back until calls are read out of it
    on_text = None if reads_calls else push
    task = asyncio.ensure_future(asyncio.to_thread(engine.complete, parsed.request, on_text, cancel))
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a cancelled run's error is expected
    try:
        yield chunk({"role": "assistant", "content": ""})
        while not task.done() or not queue.empty():
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield chunk({"content": getter.result()})
            else:
                getter.cancel()
        try:
            response = task.result()
        except ModelCallError as exc:
            yield f"data: {json.dumps({'error': {'message': str(exc), 'type': exc.kind, 'code': 500}})}\n\n"
            yield "data: [DONE]\n\n"
            return
        content, calls, finish = shape_message(parsed, response)
        if reads_calls:
            if content:
                yield chunk({"content": content})
            for i, call in enumerate(calls):
                yield chunk({"tool_calls": [{"index": i, **call}]})
        yield chunk({}, finish)
        if parsed.include_usage:
            yield chunk({}, usage=_usage(response))
        yield "data: [DONE]\n\n"
    finally:
        cancel.set()  # a client that went away stops the generation
        cancels.discard(cancel)


class ServeError(ValueError):
    """``harness serve`` cannot start: an address it cannot bind, an engine it cannot serve."""


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 = any free port); ServeError says why not."""
    if not 0 <= port <= 65535:
        raise ServeError(f"--port {port}: a port is 0-65535 (0: any free port)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ServeError(f"--host {host!r}: not an address of this machine ({exc})") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY from this socket. Without it, a keep-alive client waits
    # ~40 ms per response (Nagle holding the body behind the headers against the client's delayed
    # ACK): every latency and TTFT measured through the server would carry it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = "already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise ServeError(f"cannot listen on {host}:{port}: {why}") from None
    sock.listen(128)  # connections queue from now on, before uvicorn's loop accepts them
    return sock


def run_server(
    engine_name: str, host: str = "127.0.0.1", port: int = 8000, limits: ServeLimits | None = None, **options: Any
) -> None:
    """Bind ``host:port`` (0 = any free port), load the engine, print where it listens, serve under
    ``limits`` (default: ``ServeLimits()``, from the environment) until SIGINT/SIGTERM."""
    import uvicorn

    from harness.engines.registry import EngineError, build_served
    from harness.engines.serve.connections import uvicorn_options
    from harness.grammar import set_cache_limit

    limits = limits or ServeLimits()
    try:
        engine = build_served(engine_name, **options)
    except EngineError as exc:
        raise ServeError(str(exc)) from None
    sock = listen_socket(host, port)  # before loading: a taken port fails at once
    guard = CompileGuard(limits, sorted({engine.family_of(m) for m in engine.model_ids}))
    try:
        guard.start()  # loads its tokenizers while the engine loads
        set_cache_limit(limits.grammar_cache_mb * MIB)
        engine.load()
        try:
            guard.wait_ready()  # "listening" means grammars can be compiled under the bounds
        except ConstraintError as exc:
            raise ServeError(str(exc)) from None
        bound = sock.getsockname()[1]
        url = f"http://{host}:{bound}/v1"
        print(f"harness serve: engine {engine_name} ({', '.join(engine.model_ids)}) listening on {url}", flush=True)
        config = uvicorn.Config(
            create_app(engine, limits, guard), log_level="warning", timeout_graceful_shutdown=limits.shutdown_timeout_s,
            **uvicorn_options(limits),
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        guard.close()
        sock.close()
