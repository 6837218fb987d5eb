"""Malformed requests: ``harness serve`` refuses every one with a 4xx; a real vLLM server refuses some
and accepts others (it coerces types, ignores unknown fields). The table records which, so the README's
list of "400 here, accepted by vLLM" stays true: a row whose vLLM status changes fails here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from servers import Server

pytestmark = pytest.mark.slow

LS = {"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {}}}}


def _tool(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "ls", "parameters": parameters}}


# label -> (fields over a valid body, whether vLLM 0.32 accepts it)
MALFORMED: dict[str, tuple[dict[str, Any], bool]] = {
    "stop a number": ({"stop": 5}, False),
    "stop an object": ({"stop": {}}, False),
    "tool_calls a number": ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": 5}]}, False),
    "stream_options a string": ({"stream_options": "x"}, False),
    "temperature 3": ({"temperature": 3}, False),
    "tool parameters a string": ({"tools": [_tool("x")]}, False),
    "tool_choice a number": ({"tools": [LS], "tool_choice": 5}, False),
    "max_tokens 0": ({"max_tokens": 0}, False),
    "max_tokens true": ({"max_tokens": True}, True),
    "max_tokens a string": ({"max_tokens": "5"}, True),
    "seed true": ({"seed": True}, True),
    "stream yes": ({"stream": "yes"}, True),
    "skip_special_tokens no": ({"skip_special_tokens": "no"}, True),
    "tool properties a number": ({"tools": [_tool({"type": "object", "properties": 5})]}, False),
    "an unknown field": ({"temprature": 0.5}, True),
    "a misspelt constraint field": ({"structured_outputs": {"grammer": 'root ::= "a"'}}, False),
    "n 2": ({"n": 2}, False),
}


@pytest.fixture(scope="module")
def oracle_serve() -> Iterator[Server]:
    server = Server("oracle")
    yield server
    server.stop()


def status(base_url: str, body: dict[str, Any]) -> int:
    return httpx.post(base_url + "/chat/completions", content=json.dumps(body),
                      headers={"content-type": "application/json"}, timeout=180).status_code


@pytest.mark.parametrize("label", sorted(MALFORMED))
def test_harness_refuses_what_vllm_refuses_and_more(label: str, vllm_servers: dict[str, Any],
                                                    oracle_serve: Server) -> None:
    fields, vllm_accepts = MALFORMED[label]
    vllm = vllm_servers["function_gemma"]
    base = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "temperature": 0}
    theirs = status(vllm.base_url, {**base, "model": vllm.model.served_name, **fields})
    ours = status(oracle_serve.url, {**base, "model": "oracle-function_gemma", "oracle": {"calls": []}, **fields})
    assert 400 <= ours < 500, f"harness serve answered {ours}"
    assert (theirs == 200) == vllm_accepts, f"vLLM answered {theirs}"
