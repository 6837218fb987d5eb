"""A server that breaks the chat-completions protocol is a server error, never the model's answer
(issue 22, item 1): the client raises ``model:bad_response`` naming what was wrong, retries it like the
other ``model:`` errors, and a run counts those samples among its errors with nothing scored, and exits
2 when every sample ended so (the engine answered none).

The server is a real HTTP server that answers every request 200 with a fault's exact bytes
(``faulty_server``), as a broken proxy in front of a model server would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.agents import CompletionRequest, Message, ModelCallError
from harness.engines import OpenAICompatibleClient
from tests.engines.faulty_server import (
    GOOD_BODY,
    GOOD_STREAM,
    SSE,
    Fault,
    body,
    chunk,
    completion,
    faulty_server,
    sse,
)

CALL = {"index": 0, "id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


def call(**fn: Any) -> dict[str, Any]:
    """A tool call of a non-streamed message, its ``function`` fields replaced by ``fn``."""
    return {"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"} | fn}


def tool_message(*calls: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


# (fault, stream?, the bytes on the wire, what the error says). Streamed faults come first: the run
# streams. Each answers 200: a status error is another error kind (model:http_NNN).
FAULTS: list[tuple[str, bool, Fault, str]] = [
    ("stream: no events at all", True, Fault(b"", SSE), "no events"),
    ("stream: only [DONE]", True, sse(), "no events"),
    ("stream: a JSON body where a stream was asked", True, GOOD_BODY, "application/json, not text/event-stream"),
    ("stream: plain text body", True, Fault(b"hello", "text/plain"), "text/plain, not text/event-stream"),
    ("stream: an HTML error page", True, Fault(b"<html>502 Bad Gateway</html>", "text/html"), "no events"),
    ("stream: an event that is not JSON", True, sse("hello"), "stream event 1 is not JSON"),
    ("stream: an event that is a JSON array", True, sse([1, 2]), "stream event 1 is an array"),
    ("stream: an event that is null", True, sse(None, chunk(finish="stop")), "stream event 1 is null"),
    ("stream: choices an object", True, sse({"choices": {"delta": {}}}), "choices is an object"),
    ("stream: a choice that is a string", True, sse({"choices": ["hi"]}), "choices[0] is a string"),
    ("stream: delta null", True, sse(chunk(None) | {"choices": [{"delta": None}]}), "delta is null"),
    ("stream: content a number", True, sse(chunk({"content": 5}, "stop")), "delta.content is a number"),
    ("stream: tool_calls an object", True, sse(chunk({"tool_calls": CALL}, "stop")), "tool_calls is an object"),
    ("stream: a tool call without index", True,
     sse(chunk({"tool_calls": [{k: v for k, v in CALL.items() if k != "index"}]}, "tool_calls")), "index"),
    ("stream: tool arguments a number", True,
     sse(chunk({"tool_calls": [CALL | {"function": {"name": "ls", "arguments": 5}}]}, "tool_calls")),
     "arguments is a number"),
    ("stream: tool arguments an object", True,
     sse(chunk({"tool_calls": [CALL | {"function": {"name": "ls", "arguments": {"a": 1}}}]}, "tool_calls")),
     "arguments is an object"),
    ("stream: a tool call never named", True,
     sse(chunk({"tool_calls": [CALL | {"function": {"arguments": "{}"}}]}, "tool_calls")), "never given a function name"),
    ("stream: cut before finish_reason", True, sse(chunk({"content": "hel"}), done=False), "no finish_reason"),
    ("stream: no choices in any event", True, sse({"id": "s", "choices": []}), "no finish_reason"),
    ("stream: only a usage event", True,
     sse({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}), "no finish_reason"),
    ("stream: finish_reason a number", True, sse(chunk({"content": "hi"}, 5)), "finish_reason is a number"),
    ("stream: an error event", True, sse(chunk({"content": "hi"}), {"error": {"message": "engine died"}}),
     "engine died"),
    ("body: not JSON", False, Fault(b"this is not json", "text/plain"), "the body is not JSON"),
    ("body: empty", False, Fault(b""), "the body is empty"),
    ("body: truncated JSON", False, Fault(b'{"choices": [{"mess'), "the body is not JSON"),
    ("body: a JSON array", False, body([1, 2]), "the body is an array"),
    ("body: a JSON string", False, body('"hello"'), "the body is a string"),
    ("body: null", False, body("null"), "the body is null"),
    ("body: no choices", False, body({"id": "x", "object": "chat.completion"}), "no choices"),
    ("body: empty choices", False, body(completion() | {"choices": []}), "no choices"),
    ("body: a null choice", False, body(completion() | {"choices": [None]}), "choices[0] is null"),
    ("body: a null message", False, body(completion() | {"choices": [{"message": None, "finish_reason": "stop"}]}),
     "choices[0].message is null"),
    ("body: a message that is a string", False, body(completion("hello")), "choices[0].message is a string"),
    ("body: content a number", False, body(completion({"role": "assistant", "content": 5})), "content is a number"),
    ("body: tool_calls an object", False, body(completion(tool_message() | {"tool_calls": call()})),
     "tool_calls is an object"),
    ("body: a tool call that is a number", False, body(completion(tool_message(5))), "tool_calls[0] is a number"),
    ("body: a tool call without function", False, body(completion(tool_message({"id": "t1"}))),
     "tool_calls[0].function is null"),
    ("body: a tool name that is not a string", False, body(completion(tool_message(call(name=5)))),
     "name is a number"),
    ("body: tool arguments an array", False, body(completion(tool_message(call(arguments=[1])))),
     "arguments is an array"),
    ("body: tool arguments null", False, body(completion(tool_message(call(arguments=None)))), "arguments is null"),
    ("body: no finish_reason", False, body(completion(finish=None)), "finish_reason is null"),
    ("body: an error object", False, body({"error": {"message": "overloaded"}}), "overloaded"),
]

# What the protocol leaves to the model stays the model's answer (scored, not a server error).
MODEL_ANSWERS: list[tuple[str, bool, Fault, str | None, int]] = [
    ("stream: vLLM's shape, usage last", True,
     sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "hi"}), chunk(finish="stop"),
         {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}), "hi", 0),
    ("stream: an empty answer with its finish_reason", True, sse(chunk({"content": ""}, "stop")), None, 0),
    ("stream: arguments that are not JSON (the model wrote them)", True,
     sse(chunk({"tool_calls": [CALL | {"function": {"name": "ls", "arguments": "{oops"}}]}, "tool_calls")), None, 1),
    ("body: arguments a JSON array string (the model wrote it)", False,
     body(completion(tool_message(call(arguments="[1]")))), None, 1),
    ("body: arguments sent as an object (some servers decode them)", False,
     body(completion(tool_message(call(arguments={"a": True})))), None, 0),
    ("body: an empty tool name (the model wrote it)", False, body(completion(tool_message(call(name="")))), None, 1),
    ("body: a bad usage field", False, body(completion(usage="lots")), "hello", 0),
]


def request(stream: bool) -> CompletionRequest:
    return CompletionRequest(model="m", messages=(Message("user", "hi"),), stream=stream)


async def ask(url: str, stream: bool, max_retries: int = 2) -> Any:
    client = OpenAICompatibleClient(url, timeout_s=5.0, max_retries=max_retries, backoff_s=0.001)
    try:
        return await client.chat_completion(request(stream)), client
    finally:
        await client.aclose()


@pytest.mark.parametrize(("label", "stream", "fault", "said"), FAULTS, ids=[f[0] for f in FAULTS])
async def test_a_protocol_fault_is_a_bad_response_retried(label: str, stream: bool, fault: Fault, said: str) -> None:
    with faulty_server(fault) as server:
        with pytest.raises(ModelCallError) as info:
            await ask(server.base_url, stream, max_retries=2)
    assert info.value.kind == "model:bad_response"
    assert said in str(info.value) and "after 3 attempts" in str(info.value)
    assert server.requests == 3


@pytest.mark.parametrize(("label", "stream", "fault", "said"), FAULTS[:3] + FAULTS[-3:], ids=lambda v: str(v)[:30])
async def test_a_fault_that_passes_is_answered_on_retry(label: str, stream: bool, fault: Fault, said: str) -> None:
    with faulty_server(fault, times=1, after=GOOD_STREAM if stream else GOOD_BODY) as server:
        response, client = await ask(server.base_url, stream)
    assert response.content == "hello" and server.requests == 2 and client.retries == 1


@pytest.mark.parametrize(("label", "stream", "answer", "content", "malformed"), MODEL_ANSWERS,
                         ids=[a[0] for a in MODEL_ANSWERS])
async def test_what_the_model_wrote_stays_its_answer(
    label: str, stream: bool, answer: Fault, content: str | None, malformed: int
) -> None:
    with faulty_server(answer) as server:
        response, _ = await ask(server.base_url, stream)
    assert response.content == content and len(response.malformed_tool_calls) == malformed
    assert server.requests == 1


# The run: `harness run suites/smoke --engine openai --base-url PROXY --model M --family qwen`
# behind a proxy that breaks the protocol. Every sample is an error of the server, none scored.
RUN_FAULTS: list[tuple[str, Fault]] = [
    ("a stream with no events", Fault(b"", SSE)),
    ("a null message", body(completion() | {"choices": [{"message": None, "finish_reason": "stop"}]})),
    ("tool arguments that are not an object", sse(chunk({"tool_calls": [CALL | {"function": {"name": "ls",
                                                                                              "arguments": 7}}]}))),
]


@pytest.mark.slow
@pytest.mark.parametrize(("label", "fault"), RUN_FAULTS, ids=[f[0] for f in RUN_FAULTS])
def test_a_run_behind_a_broken_server_counts_errors_and_scores_nothing(
    tmp_path: Path, label: str, fault: Fault
) -> None:
    out = tmp_path / "run"
    # The preflight's probes (2 lanes) and json_schema's known-answer probe pass; then it breaks. This fake
    # answers one canned stream whatever the constraint: it enforces nothing, so json_schema runs labeled
    # "not enforced" (--allow-unenforced) rather than being refused before the first sample.
    with faulty_server(fault, healthy_first=3) as server:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "run", "suites/smoke", "--engine", "openai", "--base-url",
             server.base_url, "--model", "m", "--family", "qwen", "--strategy", "none,json_schema", "--limit", "2",
             "--allow-unenforced", "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2  # every sample ended in a model: error: the engine answered none
    assert "every one of the 4 samples run ended in a model: error (model:bad_response 4)" in done.stderr
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4
    assert {(s["status"], s["error_kind"]) for s in samples} == {("error", "model:bad_response")}
    assert server.requests == 3 + 4 * 4  # every sample tried 4 times: retried like the other model: errors
    assert json.loads((out / "run.json").read_text())["not_enforced"] == ["qwen/json_schema"]
    assert "4 errors" in done.stdout
    errors = json.loads((out / "errors.json").read_text())
    assert {e["error_kind"] for e in errors} == {"model:bad_response"} and sum(e["count"] for e in errors) == 4


@pytest.mark.slow
def test_a_run_with_some_server_faults_still_exits_0(tmp_path: Path) -> None:
    """Failures are results: only a run whose every sample ended in a model: error exits non-zero."""
    out = tmp_path / "run"
    # the preflight's probe passes, then the first sample's 4 attempts break
    with faulty_server(Fault(b"", SSE), times=4, after=GOOD_STREAM, healthy_first=1) as server:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "run", "suites/smoke", "--engine", "openai", "--base-url",
             server.base_url, "--model", "m", "--family", "qwen", "--strategy", "none",
             "--limit", "3", "--concurrency", "1", "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert "3 samples run (0 resumed, 1 errors)" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("label", "fault"), RUN_FAULTS, ids=[f[0] for f in RUN_FAULTS])
def test_a_server_broken_from_the_start_stops_the_run_at_its_preflight(tmp_path: Path, label: str, fault: Fault) -> None:
    out = tmp_path / "run"
    with faulty_server(fault) as server:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "run", "suites/smoke", "--engine", "openai", "--base-url",
             server.base_url, "--model", "m", "--family", "qwen", "--strategy", "none", "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "preflight: a probe request of qwen/none" in done.stderr
    assert "failed: model:bad_response: " in done.stderr and "model:bad_response: model:bad_response" not in done.stderr
    assert not (out / "samples.jsonl").exists() or not (out / "samples.jsonl").read_text()  # nothing scored
