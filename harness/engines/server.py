"""``harness serve``: an OpenAI/vLLM-compatible HTTP server in front of the local or oracle engine.

Endpoints: ``GET /v1/models``, ``POST /v1/chat/completions`` (plain and SSE streaming), ``GET /health``.
Requests are read as vLLM reads them (``structured_outputs``, ``response_format``, ``tools``,
``stop``, ``max_tokens``/``max_completion_tokens``, ``temperature``, ``seed``, ``stream``,
``stream_options``) and answered in vLLM's response shape with ``usage``.

Stricter than vLLM where vLLM fails open: an unknown request field, an unknown or removed
constraint field, two constraints at once, a constraint of the wrong type or one xgrammar cannot
compile is HTTP 400 with a message, checked before any token is generated (so also before a stream
starts; the body is a pydantic model, ``harness.engines.chat_request``). The server never answers
unconstrained when a constraint was asked for. The constraint is passed on in one canonical form,
``structured_outputs: {grammar|json|structural_tag: text}``.

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
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harness.agents.client import CompletionResponse, ModelCallError
from harness.engines.chat_request import BadRequest, Parsed, parse_body

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from harness.engines.served import ServedEngine

def shape_message(parsed: Parsed, response: CompletionResponse) -> tuple[str | None, list[dict[str, Any]], str]:
    """(content, tool_calls, finish_reason) as vLLM answers under the request's ``tool_choice``."""
    from harness.agents.families import get_adapter
    from harness.engines.tool_choice import calls_from_json

    content = response.content
    finish = response.finish_reason or "stop"
    choice = parsed.tool_choice
    if choice.mode in ("required", "named"):
        calls = calls_from_json(content, choice)
        if calls is None:  # not the JSON the constraint asks for (cut at max_tokens): the raw text
            return content, [], finish
        return "", [c.to_openai() for c in calls], "tool_calls" if choice.mode == "required" else "stop"
    adapter = get_adapter(parsed.family)
    if choice.mode == "none" or adapter.native_call_start not in (content or ""):
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


def _error(message: str, status: int, kind: str) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": status}}, status)


def _model_error(exc: ModelCallError) -> Response:
    if exc.kind in ("model:bad_request", "model:context_length"):
        return _error(str(exc), 400, "BadRequestError")
    if exc.kind in ("model:no_weights", "model:not_found"):
        return _error(str(exc), 404, "NotFoundError")
    return _error(str(exc), 500, "InternalServerError")


def create_app(engine: ServedEngine) -> Starlette:
    """The ASGI app serving ``engine`` (loaded by the caller or on first request)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    created = int(time.time())

    async def models(_: Request) -> Response:
        data = [{"id": m, "object": "model", "created": created, "owned_by": "harness"} for m in engine.model_ids]
        return JSONResponse({"object": "list", "data": data})

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def chat(http: Request) -> Response:
        try:
            body = json.loads(await http.body())
        except ValueError:
            return _error("the request body is not JSON", 400, "BadRequestError")
        try:
            parsed = await asyncio.to_thread(parse_body, body, engine)
        except BadRequest as exc:
            return _error(str(exc), exc.status, exc.kind)
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time())}
        if parsed.request.stream:
            return StreamingResponse(_sse(engine, parsed, head), media_type="text/event-stream")
        try:
            response = await asyncio.to_thread(engine.complete, parsed.request)
        except ModelCallError as exc:
            return _model_error(exc)
        content, calls, finish = shape_message(parsed, response)
        message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
        return JSONResponse({
            **head, "object": "chat.completion", "model": response.model or parsed.request.model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": _usage(response), "harness": _stats(response),
        })

    return Starlette(routes=[
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ])


async def _sse(engine: ServedEngine, parsed: Parsed, head: dict[str, Any]) -> AsyncIterator[str]:
    """vLLM's chunk stream: role, content deltas (or tool-call deltas), finish, usage, [DONE]."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()
    cancel = threading.Event()
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


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 = any free port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY from this socket. Without it, a keep-alive client waits
    # ~40 ms per response (Nagle holding the body behind the headers against the client's delayed
    # ACK): every latency and TTFT measured through the server would carry it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections queue from now on, before uvicorn's loop accepts them
    return sock


def run_server(engine_name: str, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
    """Load the engine, bind ``host:port`` (0 = any free port), print where it listens, serve."""
    import uvicorn

    from harness.engines.registry import build_served

    engine = build_served(engine_name, **options)
    engine.load()
    sock = listen_socket(host, port)
    bound = sock.getsockname()[1]
    url = f"http://{host}:{bound}/v1"
    print(f"harness serve: engine {engine_name} ({', '.join(engine.model_ids)}) listening on {url}", flush=True)
    config = uvicorn.Config(create_app(engine), log_level="warning", timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])
