"""``harness serve`` answers as vLLM does: the same requests go to ``harness serve --engine local`` and to a
real vLLM server on the same Gemma 3 270M weights, and the shape of the answers must agree (finish
reason, content, tool calls, usage; the stream's chunks). Each request forces its answer with a
constraint, so the two models' different numerics cannot make the answers differ."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from servers import Server

from .test_real_vllm import bundle_tools

pytestmark = pytest.mark.slow

CALL = '"<start_function_call>call:pwd{}<end_function_call>"'
TWO_CALLS = '"<start_function_call>call:pwd{}<end_function_call><start_function_call>call:ls{}<end_function_call>"'
ONE_KEY = {"type": "object", "properties": {"a": {"type": "integer", "enum": [1]}}, "required": ["a"],
           "additionalProperties": False}
PWD = {"type": "function", "function": {"name": "pwd"}}

# case -> extra body fields (on top of: the SHELLper tools, one user message, greedy, max_tokens 32)
CASES: dict[str, dict[str, Any]] = {
    "named-function": {"tool_choice": PWD},
    "required-one-call": {"tool_choice": "required", "parallel_tool_calls": False, "only_tools": ["pwd"]},
    "json-answer-is-content": {"structured_outputs": {"json": ONE_KEY}},
    "native-call-parsed": {"structured_outputs": {"grammar": f"root ::= {CALL}"}},
    "parallel-false-keeps-first": {"structured_outputs": {"grammar": f"root ::= {TWO_CALLS}"}, "parallel_tool_calls": False},
    "parallel-default-keeps-both": {"structured_outputs": {"grammar": f"root ::= {TWO_CALLS}"}},
    "tool-choice-none-raw-text": {"structured_outputs": {"grammar": f"root ::= {CALL}"}, "tool_choice": "none"},
}


@pytest.fixture(scope="module")
def harness_serve() -> Iterator[Server]:
    server = Server("local")
    yield server
    server.stop()


def body_for(case: str, model: str) -> dict[str, Any]:
    extra = dict(CASES[case])
    only = extra.pop("only_tools", None)
    tools = [t.to_openai() for t in bundle_tools() if only is None or t.name in only]
    return {"model": model, "messages": [{"role": "user", "content": "Where am I?"}], "tools": tools,
            "temperature": 0, "max_tokens": 32, "skip_special_tokens": False, **extra}


def shape(answer: dict[str, Any]) -> dict[str, Any]:
    """What a client relies on, without ids, timestamps or the model's free text."""
    choice = answer["choices"][0]
    message = choice["message"]
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or ()]
    usage = answer.get("usage") or {}
    return {
        "finish_reason": choice["finish_reason"],
        "content": message.get("content"),
        "tool_calls": calls,
        "usage_keys": sorted(k for k in ("prompt_tokens", "completion_tokens", "total_tokens") if k in usage),
    }


def post(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(base_url + "/chat/completions", json=body, timeout=180)
    assert reply.status_code == 200, reply.text
    return reply.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", sorted(CASES))
def test_harness_serve_answers_as_vllm(case: str, vllm_servers: dict[str, Any], harness_serve: Server) -> None:
    from harness.engines.local import LOCAL_MODEL_ID

    vllm = vllm_servers["function_gemma"]
    theirs = shape(post(vllm.base_url, body_for(case, vllm.model.served_name)))
    ours = shape(post(harness_serve.url, body_for(case, LOCAL_MODEL_ID)))
    assert ours == theirs


def chunk_kinds(base_url: str, body: dict[str, Any]) -> list[str]:
    """The stream as a list of chunk kinds: role, content, tool_call, finish:<reason>, usage."""
    kinds: list[str] = []
    with httpx.stream("POST", base_url + "/chat/completions", json=body, timeout=180) as reply:
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if not chunk["choices"]:
                kinds.append("usage" if chunk.get("usage") else "empty")
                continue
            choice = chunk["choices"][0]
            delta = choice.get("delta") or {}
            if delta.get("role"):
                kinds.append("role")
            if delta.get("content"):
                kinds.append("content")
            if delta.get("tool_calls"):
                kinds.append("tool_call")
            if choice.get("finish_reason"):
                kinds.append(f"finish:{choice['finish_reason']}")
    return [k for i, k in enumerate(kinds) if k != "content" or i == 0 or kinds[i - 1] != "content"]


@pytest.mark.parametrize("case", ["native-call-parsed", "json-answer-is-content"])
def test_streams_end_alike(case: str, vllm_servers: dict[str, Any], harness_serve: Server) -> None:
    """Streaming with usage: the chunk kinds after the role chunk, the finish reason and a last chunk with
    the usage and no choices."""
    from harness.engines.local import LOCAL_MODEL_ID

    vllm = vllm_servers["function_gemma"]
    extra = {"stream": True, "stream_options": {"include_usage": True}}
    theirs = chunk_kinds(vllm.base_url, {**body_for(case, vllm.model.served_name), **extra})
    ours = chunk_kinds(harness_serve.url, {**body_for(case, LOCAL_MODEL_ID), **extra})
    if case == "native-call-parsed" and theirs[-2] == "finish:length":
        # vLLM 0.32 under tool_choice auto generated on to max_tokens after the forced call (usage: 32 of
        # 32 tokens, seen in both modes); its non-streamed answer then says "tool_calls", its stream
        # "length". harness serve stops at the grammar's end and says "tool_calls" in both.
        theirs = [*theirs[:-2], "finish:tool_calls", theirs[-1]]
    assert ours[-2:] == theirs[-2:] and theirs[-1] == "usage"
    assert set(ours) == set(theirs)
