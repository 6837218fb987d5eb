"""``harness serve`` as a real subprocess on 127.0.0.1, called with the project's OpenAI client and httpx."""

from __future__ import annotations

import json

import httpx
import pytest

from harness.agents.client import CompletionRequest, ModelCallError
from harness.agents.constraint import DecodingConstraint
from harness.agents.types import Message, ToolCall
from harness.engines.remote.client import OpenAICompatibleClient
from harness.vocabulary import HARNESS_STRATEGIES as CONSTRAINED_STRATEGIES  # the grammars the harness builds

pytestmark = pytest.mark.slow


def _post(server, body, **kw):
    return httpx.post(server.url + "/chat/completions", json=body, timeout=120, **kw)


def _body(strategy="none", **extra):
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": "List the files."}],
        "max_tokens": 8,
        "temperature": 0,
    }
    if strategy != "none":
        body["structured_outputs"] = {"grammar": 'root ::= "yes" | "no"'}
    body.update(extra)
    return body


# --- local engine ---------------------------------------------------------------------------------


def test_models_endpoint(local_server):
    from harness.engines.local import LOCAL_MODEL_ID

    body = httpx.get(local_server.url + "/models", timeout=30).json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [LOCAL_MODEL_ID]


@pytest.mark.parametrize("stream", [False, True])
async def test_plain_completion_matches_in_process(local_server, local_engine, make_request, stream):
    request = make_request("none", max_tokens=16, stream=stream)
    request = CompletionRequest(**{**_fields(request), "tools": (), "stop": ()})
    expected = local_engine.complete(request)
    client = OpenAICompatibleClient(local_server.url, max_retries=0, timeout_s=300)
    try:
        got = await client.chat_completion(request)
    finally:
        await client.aclose()
    assert got.content == expected.content
    assert got.finish_reason == expected.finish_reason == "length"
    assert got.usage == expected.usage
    assert got.model == expected.model
    if stream:
        assert got.ttft_ms is not None


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_match_in_process(local_server, local_engine, make_request, strategy, stream):
    """Greedy: the server's parsed tool_calls are the in-process engine's output, parsed."""
    from harness.grammar.families import get_adapter

    request = make_request(strategy, max_tokens=40, stream=stream)
    expected = local_engine.complete(request)
    parsed = get_adapter("function_gemma").parse_response(expected.content, (), request.tools)
    client = OpenAICompatibleClient(local_server.url, max_retries=0, timeout_s=300)
    try:
        got = await client.chat_completion(request)
    finally:
        await client.aclose()
    native = "<start_function_call>" in (expected.content or "")  # vLLM's tool parsers read the native format only
    if parsed.ok and parsed.tool_calls and native:
        assert [(c.name, c.arguments) for c in got.tool_calls] == [(c.name, c.arguments) for c in parsed.tool_calls]
        assert got.finish_reason == "tool_calls"
    else:  # not a clean answer: the raw text comes back for the client's parser to judge
        assert got.tool_calls == ()
        assert got.content == expected.content


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
def test_server_output_is_valid_for_its_grammar(local_server, make_request, strategy):
    """tool_choice none: the raw text, walked through the compiled grammar."""
    from harness.grammar import compile_artifact, constraint_from_request, get_tokenizer
    from harness.grammar.decode import GoldSource, decode

    request = make_request(strategy, parallel=True, max_tokens=40)
    body = {
        "model": request.model,
        "messages": [m.to_openai() for m in request.messages],
        "tools": [t.to_openai() for t in request.tools],
        "tool_choice": "none",
        "max_tokens": 40,
        "temperature": 0,
        "stop": list(request.stop),
        **request.extra_body,
    }
    answer = _post(local_server, body).json()
    choice = answer["choices"][0]
    text = choice["message"]["content"]
    assert choice["message"]["tool_calls"] == []
    tok = get_tokenizer("function_gemma")
    compiled = compile_artifact(constraint_from_request(request.extra_body, None), "function_gemma").compiled
    ids = tok.encode(text)
    walked = decode(compiled, GoldSource(ids), tok, max_tokens=len(ids) + 1)
    if choice["finish_reason"] == "stop":
        assert walked.error is None and walked.terminated, text
    else:
        assert walked.error is None or walked.rejected_at == len(ids), text


def test_usage_and_vllm_shape(local_server):
    answer = _post(local_server, _body("ebnf")).json()
    assert answer["object"] == "chat.completion"
    assert answer["id"].startswith("chatcmpl-")
    assert isinstance(answer["created"], int)
    choice = answer["choices"][0]
    assert choice["index"] == 0 and choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] in ("yes", "no")
    usage = answer["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_sse_stream_shape(local_server):
    body = _body(stream=True, stream_options={"include_usage": True})
    with httpx.stream("POST", local_server.url + "/chat/completions", json=body, timeout=120) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in resp.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert len(text) > 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 8


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"structured_outputs": {"grammer": 'root ::= "a"'}}, "unknown structured_outputs field"),
        ({"structured_outputs": {"grammar": 'root ::= "a"', "json": {"type": "object"}}}, "only one"),
        ({"structured_outputs": {"grammar": 'root ::= "a"'}, "response_format": {"type": "json_object"}}, "only one"),
        ({"structured_outputs": {"grammar": 5}}, "must be an EBNF string"),
        ({"structured_outputs": {"structural_tag": {"type": "structural_tag"}}}, "must be a string"),
        ({"structured_outputs": {"grammar": 'root ::= "a" |'}}, "cannot compile"),
        ({"structured_outputs": {"json": {"type": "integer", "multipleOf": 5}}}, "not supported by xgrammar"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {
            "type": "string", "format": "uri", "minLength": 1}}}}, "schema: minLength/maxLength beside a format"),
        ({"response_format": {"type": "grammar"}}, "response_format.type"),
        ({"guided_json": {"type": "object"}}, "removed"),
        ({"structured_output": {"grammar": 'root ::= "a"'}}, "unknown request field"),
        ({"n": 2}, "not supported"),
    ],
)
def test_bad_constraints_are_400(local_server, extra, needle):
    resp = _post(local_server, _body(**extra))
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert needle in error["message"]
    assert error["code"] == 400


def test_bad_constraint_streaming_is_400_before_the_stream(local_server):
    resp = _post(local_server, _body(stream=True, structured_outputs={"grammar": 1}))
    assert resp.status_code == 400


async def test_400_reaches_the_client_as_model_error_without_retries(local_server):
    client = OpenAICompatibleClient(local_server.url, max_retries=3)
    request = CompletionRequest(
        model="local", messages=(Message("user", "hi"),), extra_body={"structured_outputs": {"choice": []}}
    )
    try:
        with pytest.raises(ModelCallError) as info:
            await client.chat_completion(request)
    finally:
        await client.aclose()
    assert info.value.kind == "model:http_400"
    assert client.attempts == 1


def test_qwen_request_to_local_engine_is_a_clear_error(local_server):
    resp = _post(local_server, _body(model="Qwen/Qwen3-0.6B"))
    assert resp.status_code == 404
    message = resp.json()["error"]["message"]
    assert "no Qwen model weights are available on PyPI" in message
    assert "OpenAI-compatible server" in message


# --- oracle engine --------------------------------------------------------------------------------


GOLD = {
    "function_gemma": [ToolCall.create("mkdir", {"dir_name": "reports"})],
    "qwen": [ToolCall.create("tail", {"file_name": "server.log", "lines": 5})],
}


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
@pytest.mark.parametrize("strategy", ["none", *CONSTRAINED_STRATEGIES])
@pytest.mark.parametrize("stream", [False, True])
async def test_oracle_replays_gold_as_tool_calls(oracle_server, shellper_tools, family, strategy, stream):
    from harness.grammar.families import get_adapter

    tools = shellper_tools
    constraint = DecodingConstraint(strategy=strategy)
    payload = get_adapter(family).build_payload(tools, constraint)
    gold = GOLD[family]
    extra = {
        **payload.extra_body,
        "oracle": {"calls": [{"name": c.name, "arguments": c.arguments} for c in gold], "strategy": strategy},
    }
    request = CompletionRequest(
        model=f"oracle-{family}",
        messages=(Message("user", "do it"),),
        tools=tools,
        extra_body=extra,
        stop=payload.stop,
        stream=stream,
    )
    client = OpenAICompatibleClient(oracle_server.url, max_retries=0)
    try:
        got = await client.chat_completion(request)
    finally:
        await client.aclose()
    if strategy == "json_schema":
        # As vLLM: its tool parsers read the family's native format only, so a JSON answer is content.
        assert got.tool_calls == () and got.finish_reason == "stop"
        parsed = get_adapter(family).parse_response(got.content, (), tools)
        assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(c.name, c.arguments) for c in gold]
        return
    assert [(c.name, c.arguments) for c in got.tool_calls] == [(c.name, c.arguments) for c in gold]
    assert got.finish_reason == "tool_calls"


def test_oracle_gold_the_grammar_rejects_is_reported(oracle_server, shellper_tools):
    from harness.grammar.families import get_adapter

    payload = get_adapter("function_gemma").build_payload(shellper_tools, DecodingConstraint(strategy="ebnf"))
    body = {
        "model": "oracle-function_gemma",
        "messages": [{"role": "user", "content": "x"}],
        "tools": [t.to_openai() for t in shellper_tools],
        **payload.extra_body,
        "oracle": {"calls": [{"name": "format_disk", "arguments": {}}]},
    }
    answer = _post(oracle_server, body).json()
    assert answer["harness"]["grammar_error"] == "grammar:rejected_gold"
    assert answer["choices"][0]["message"]["tool_calls"] == []


def test_oracle_without_gold_is_400(oracle_server):
    resp = _post(oracle_server, {"model": "oracle-qwen", "messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 400
    assert "oracle" in resp.json()["error"]["message"]


def test_oracle_models(oracle_server):
    ids = [m["id"] for m in httpx.get(oracle_server.url + "/models", timeout=30).json()["data"]]
    assert ids == ["oracle-function_gemma", "oracle-qwen"]


def _fields(request: CompletionRequest) -> dict:
    return {f: getattr(request, f) for f in request.__dataclass_fields__}


def test_connections_are_accepted_with_nodelay() -> None:
    # Accepted sockets inherit TCP_NODELAY from the listening one; without it every keep-alive
    # response waited ~40 ms (Nagle against delayed ACK) and all latencies through the server carried it.
    import socket

    from harness.engines.serve.server import listen_socket

    sock = listen_socket("127.0.0.1", 0)
    try:
        client = socket.create_connection(sock.getsockname())
        accepted, _ = sock.accept()
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        accepted.close()
        client.close()
    finally:
        sock.close()
