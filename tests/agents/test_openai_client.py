"""OpenAICompatibleClient against a real HTTP server on 127.0.0.1 (ThreadingHTTPServer in a thread).

The server answers from a per-test script of behaviours and records every request it got.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness.agents import CompletionRequest, Message, ModelCallError, TokenUsage, ToolSchema
from harness.engines import OpenAICompatibleClient


def completion(
    content: str | None = "hello", tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "served/model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> raw text
    sleep_s: float = 0.0
    sse: list[dict[str, Any]] | None = None  # streamed chunks
    unsized: bytes | None = None  # a body sent without Content-Length (connection closed after it)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeOpenAIServer:
    """A real HTTP server speaking just enough of /v1/chat/completions for the client's tests."""

    script: list[Reply] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_reply(self) -> Reply:
        return self.script.pop(0) if self.script else Reply(body=completion())


def _handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            server.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            reply = server.next_reply()
            if reply.sleep_s:
                time.sleep(reply.sleep_s)
            try:
                if reply.sse is not None:
                    self._stream(reply.sse)
                    return
                if reply.unsized is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(reply.unsized)
                    self.close_connection = True
                    return
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body or {})
                data = payload.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _stream(self, chunks: list[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.005)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    state = FakeOpenAIServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    httpd.block_on_close = False
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def request(**kw: Any) -> CompletionRequest:
    base: dict[str, Any] = {"model": "google/functiongemma-270m-it", "messages": (Message("user", "hi"),)}
    return CompletionRequest(**(base | kw))


_open_clients: list[OpenAICompatibleClient] = []


def client_for(server: FakeOpenAIServer, **kw: Any) -> OpenAICompatibleClient:
    opts: dict[str, Any] = {"timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.01} | kw
    client = OpenAICompatibleClient(server.base_url, **opts)
    _open_clients.append(client)
    return client


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _open_clients:
        await _open_clients.pop().aclose()


async def test_success_reads_content_usage_and_sends_model_id(server: FakeOpenAIServer) -> None:
    client = client_for(server)
    resp = await client.chat_completion(request(stop=("<end>",), max_tokens=32, seed=7))
    assert resp.content == "hello"
    assert resp.usage == TokenUsage(11, 3, 14)
    assert resp.model == "served/model" and resp.finish_reason == "stop"
    assert resp.latency_ms is not None and resp.latency_ms > 0
    (seen,) = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "google/functiongemma-270m-it"
    assert seen.body["messages"] == [{"role": "user", "content": "hi"}]
    assert seen.body["stop"] == ["<end>"] and seen.body["max_tokens"] == 32 and seen.body["seed"] == 7
    assert "tools" not in seen.body


async def test_500_then_success_is_retried(server: FakeOpenAIServer) -> None:
    server.script = [Reply(status=500, body={"error": "boom"}), Reply(body=completion("second"))]
    client = client_for(server)
    resp = await client.chat_completion(request())
    assert resp.content == "second"
    assert len(server.seen) == 2
    assert client.attempts == 2 and client.retries == 1


async def test_429_then_success_is_retried(server: FakeOpenAIServer) -> None:
    server.script = [Reply(status=429, body={"error": "slow down"}), Reply(body=completion("ok"))]
    resp = await client_for(server).chat_completion(request())
    assert resp.content == "ok" and len(server.seen) == 2


async def test_persistent_503_gives_http_error_after_retries(server: FakeOpenAIServer) -> None:
    server.script = [Reply(status=503, body={"error": "down"}) for _ in range(3)]
    with pytest.raises(ModelCallError) as info:
        await client_for(server, max_retries=2).chat_completion(request())
    assert info.value.kind == "model:http_503"
    assert "after 3 attempts" in str(info.value)
    assert len(server.seen) == 3


async def test_400_is_not_retried(server: FakeOpenAIServer) -> None:
    server.script = [Reply(status=400, body={"error": {"message": "bad grammar"}})]
    with pytest.raises(ModelCallError) as info:
        await client_for(server).chat_completion(request())
    assert info.value.kind == "model:http_400"
    assert "bad grammar" in str(info.value)
    assert len(server.seen) == 1


async def test_timeout_after_retries(server: FakeOpenAIServer) -> None:
    server.script = [Reply(sleep_s=1.0, body=completion()) for _ in range(2)]
    client = client_for(server, timeout_s=0.2, max_retries=1)
    with pytest.raises(ModelCallError) as info:
        await client.chat_completion(request())
    assert info.value.kind == "model:timeout"
    assert len(server.seen) == 2


async def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAICompatibleClient(f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_s=0.01, timeout_s=2)
    _open_clients.append(client)
    with pytest.raises(ModelCallError) as info:
        await client.chat_completion(request())
    assert info.value.kind == "model:connection"
    assert client.attempts == 2


async def test_extra_body_arrives_intact_with_tools(server: FakeOpenAIServer) -> None:
    grammar = 'root ::= "<start_function_call>" "call:" name "{" [^}]* "}" "<end_function_call>"\nname ::= "ls" | "cd"'
    extra = {
        "structured_outputs": {"grammar": grammar, "options": {"nested": [1, {"deep": True}]}},
        "skip_special_tokens": False,
    }
    snapshot = json.loads(json.dumps(extra))
    tool = ToolSchema("ls", "list files", {"type": "object", "properties": {"a": {"type": "boolean"}}})
    await client_for(server).chat_completion(request(extra_body=extra, tools=(tool,), send_tools=True))
    (seen,) = server.seen
    assert seen.body["structured_outputs"] == snapshot["structured_outputs"]
    assert seen.body["skip_special_tokens"] is False
    assert seen.body["tools"] == [tool.to_openai()]
    assert extra == snapshot  # the caller's dict is not modified


@pytest.mark.parametrize("tool_choice", [None, "none", "required"])
async def test_tool_choice_sent_only_when_set(server: FakeOpenAIServer, tool_choice: str | None) -> None:
    """A constrained request says tool_choice "none" (vLLM then returns the raw text, not its parser's
    calls); None leaves the server's default."""
    tool = ToolSchema("ls", "list files")
    await client_for(server).chat_completion(request(tools=(tool,), send_tools=True, tool_choice=tool_choice))
    body = server.seen[0].body
    assert body.get("tool_choice") == tool_choice and ("tool_choice" in body) == (tool_choice is not None)


async def test_tools_not_sent_when_send_tools_false(server: FakeOpenAIServer) -> None:
    tool = ToolSchema("ls", "list files")
    await client_for(server).chat_completion(request(tools=(tool,), send_tools=False))
    assert "tools" not in server.seen[0].body


async def test_tool_calls_decoded_and_malformed_kept_raw(server: FakeOpenAIServer) -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "docs"}'}},
        {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{not json"}},
        {"id": "c3", "type": "function", "function": {"name": "ls", "arguments": "[1]"}},
    ]
    server.script = [Reply(body=completion(None, calls))]
    resp = await client_for(server).chat_completion(request())
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [("c1", "cd", {"folder": "docs"})]
    assert len(resp.malformed_tool_calls) == 2
    assert json.loads(resp.malformed_tool_calls[0])["function"]["arguments"] == "{not json"
    assert json.loads(resp.malformed_tool_calls[1])["id"] == "c3"


def _chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    out: dict[str, Any] = {
        "id": "s",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "served/model",
        "choices": choices,
    }
    if usage:
        out["usage"] = usage
    return out


async def test_streaming_records_ttft_usage_and_assembles_calls(server: FakeOpenAIServer) -> None:
    fn0 = {"name": "grep", "arguments": '{"file_name": '}
    server.script = [
        Reply(
            sse=[
                _chunk({"role": "assistant", "content": ""}),
                _chunk({"content": "Let me "}),
                _chunk({"content": "look."}),
                _chunk({"tool_calls": [{"index": 0, "id": "t1", "type": "function", "function": fn0}]}),
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt", "pattern": "x"}'}}]}),
                _chunk({}, finish="tool_calls"),
                _chunk({}, usage={"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}),
            ]
        )
    ]
    resp = await client_for(server).chat_completion(request(stream=True))
    assert resp.content == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("t1", "grep", {"file_name": "a.txt", "pattern": "x"})
    ]
    assert resp.usage == TokenUsage(20, 9, 29)
    assert resp.finish_reason == "tool_calls"
    assert resp.ttft_ms is not None and resp.latency_ms is not None
    assert 0 < resp.ttft_ms <= resp.latency_ms
    body = server.seen[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_api_key_read_from_environment(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TEST_KEY", "sk-test-123")
    await client_for(server, api_key_env="HARNESS_TEST_KEY").chat_completion(request())
    assert server.seen[0].headers["authorization"] == "Bearer sk-test-123"


async def test_no_key_configured_sends_placeholder(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_TEST_KEY", raising=False)
    await client_for(server, api_key_env="HARNESS_TEST_KEY").chat_completion(request())
    assert server.seen[0].headers["authorization"] == "Bearer EMPTY"


# -- bounds and hostile answers (issue 14) ---------------------------------------------------------------

LIMIT = 64 * 1024
HUGE = "x" * (5 * LIMIT)


def _huge_stream() -> list[dict[str, Any]]:
    return [_chunk({"role": "assistant", "content": ""})] + [_chunk({"content": "y" * 4096}) for _ in range(40)]


TOO_LARGE: list[tuple[str, Reply, bool]] = [
    ("sized body", Reply(body=completion(HUGE)), False),
    ("unsized body", Reply(unsized=json.dumps(completion(HUGE)).encode()), False),
    ("streamed answer", Reply(sse=_huge_stream()), True),
]


@pytest.mark.parametrize(("label", "reply", "stream"), TOO_LARGE, ids=[t[0] for t in TOO_LARGE])
async def test_an_answer_over_max_response_bytes_is_a_named_error_not_retried(
    server: FakeOpenAIServer, label: str, reply: Reply, stream: bool
) -> None:
    server.script = [reply, Reply(body=completion())]
    client = client_for(server, max_response_bytes=LIMIT)
    with pytest.raises(ModelCallError) as info:
        await client.chat_completion(request(stream=stream))
    assert info.value.kind == "model:response_too_large"
    assert f"max_response_bytes={LIMIT}" in str(info.value)
    assert len(server.seen) == 1 and client.retries == 0  # the server would send it again


def test_the_default_bound_is_the_client_limits_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CLIENT_MAX_RESPONSE_BYTES", "123456")
    assert OpenAICompatibleClient("http://127.0.0.1:9/v1").max_response_bytes == 123456


BAD_USAGE: list[Any] = [
    {"prompt_tokens": "11", "completion_tokens": 3, "total_tokens": 14},
    {"prompt_tokens": -1, "completion_tokens": 3},
    {"prompt_tokens": True, "completion_tokens": 3},
    {"prompt_tokens": 1.5, "completion_tokens": 3},
    "lots",
    [1, 2],
]


@pytest.mark.parametrize("usage", BAD_USAGE, ids=str)
async def test_a_bad_usage_field_keeps_the_answer(server: FakeOpenAIServer, usage: Any) -> None:
    body = completion("the answer")
    body["usage"] = usage
    server.script = [Reply(body=body)]
    resp = await client_for(server).chat_completion(request())
    assert resp.content == "the answer" and resp.usage is None


async def test_a_bad_usage_field_keeps_a_streamed_answer(server: FakeOpenAIServer) -> None:
    bad = {"prompt_tokens": "many", "completion_tokens": 2, "total_tokens": 3}
    server.script = [Reply(sse=[_chunk({"content": "the answer"}, finish="stop"), _chunk({}, usage=bad)])]
    resp = await client_for(server).chat_completion(request(stream=True))
    assert resp.content == "the answer" and resp.usage is None and resp.finish_reason == "stop"
