"""``harness serve``'s request body (``harness.engines.serve.chat_request``): every refusal names its field,
checked in process against the served oracle (the HTTP path is tests/engines/test_server.py)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.engines.oracle import ServedOracle
from harness.engines.serve.chat_request import BadRequest, parse_body

ENGINE = ServedOracle()
TOOL = {"type": "function", "function": {"name": "ls", "description": "list", "parameters": {"type": "object", "properties": {}}}}


def body(**fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "oracle-qwen", "messages": [{"role": "user", "content": "hi"}]}
    out.update(fields)
    return {k: v for k, v in out.items() if v is not DROP}


DROP = object()


def _tool(parameters: Any, **marks: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "ls", "parameters": parameters, **marks}}

CALL = {"id": "c1", "function": {"name": "ls", "arguments": "[1]"}}

REFUSED = [
    (body(structured_outputs={"grammer": 'root ::= "a"'}), "unknown structured_outputs field"),
    (body(structured_outputs={"grammar": 'root ::= "a"', "json": {"type": "object"}}), "only one"),
    (body(structured_outputs={"grammar": 'root ::= "a"'}, response_format={"type": "json_object"}), "only one"),
    (body(structured_outputs={"grammar": 5}), "must be an EBNF string"),
    (body(structured_outputs={"structural_tag": {"type": "structural_tag"}}), "must be a string"),
    (body(structured_outputs={"grammar": 'root ::= "a" |'}), "cannot compile"),
    (body(response_format={"type": "grammar"}), "response_format.type"),
    (body(guided_json={"type": "object"}), "guided_json: removed from vLLM in v0.12"),
    (body(structured_output={"grammar": 'root ::= "a"'}), "unknown request field(s) structured_output"),
    (body(n=2), "n=2 is not supported (only 1)"),
    (body(model=5), "model: Input should be a valid string"),
    (body(messages=[]), "messages: List should have at least 1 item"),
    (body(messages=DROP), "messages: Field required"),
    (body(messages=[{"role": "robot", "content": "x"}]), "messages[0].role: Input should be"),
    (body(messages=[{"role": "user", "content": [{"type": "image_url"}]}]), "messages[0].content"),
    (body(messages=[{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [CALL]}]),
     "messages[1].tool_calls[0] needs function.name and JSON-object arguments"),
    (body(stop=[1]), "stop"),
    (body(max_tokens=0), "max_tokens: Input should be greater than or equal to 1"),
    (body(max_tokens="5"), "max_tokens: Input should be a valid integer"),
    (body(temperature=-1), "temperature: Input should be greater than or equal to 0"),
    (body(seed=1.5), "seed: Input should be a valid integer"),
    (body(tools=[{"type": "function"}]), "tools[0]: not an OpenAI tool"),
    ([1, 2], "the request body must be a JSON object"),
    # issue 14's malformed bodies: each a 400 naming the field, never a 500 or a 200
    (body(stop=5), "stop"),
    (body(stop={}), "stop"),
    (body(messages=[{"role": "assistant", "tool_calls": 5}]), "messages[0].tool_calls"),
    (body(stream_options="x"), "stream_options"),
    (body(temperature=float("nan")), "temperature: Input should be a finite number"),
    (body(temperature=float("inf")), "temperature: Input should be a finite number"),
    (body(temperature=2.5), "temperature: Input should be less than or equal to 2"),
    (body(max_tokens=True), "max_tokens: Input should be a valid integer"),
    (body(seed=True), "seed: Input should be a valid integer"),
    (body(seed=2**64), "seed: Input should be less than or equal to"),
    (body(top_p=0), "top_p: Input should be greater than 0"),
    (body(top_p=1.5), "top_p: Input should be less than or equal to 1"),
    (body(stream="yes"), "stream: Input should be a valid boolean"),
    (body(skip_special_tokens="no"), "skip_special_tokens: Input should be a valid boolean"),
    (body(tool_choice=5), "tool_choice"),
    (body(tools=[_tool("x")]), "tools[0]: tool 'ls': function.parameters must be a JSON schema object, got str"),
    (body(tools=[_tool({"type": "object", "properties": 5})]), "function.parameters.properties must be an object"),
    (body(tools=[_tool({"type": "object", "properties": {"a": 5}})]), "function.parameters.properties.a must be"),
    (body(tools=[_tool({"type": "object", "required": "a"})]), "function.parameters.required must be a list"),
    (body(structured_outputs={"grammar": "root ::= " + " | ".join(f'"{i}"' for i in range(40_000))}),
     "structured_outputs is 468911 bytes: over the bound max_constraint_bytes=262144"),
    (body(structured_outputs={"choice": [str(i) for i in range(100_000)]}), "over the bound max_constraint_bytes"),
    (body(tools=[_tool({"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 60}
                                                        for i in range(3000)}})], tool_choice="required",
          model="oracle-function_gemma"),
     "the json constraint built from this request is"),  # vLLM's JSON-array fallback (no structural tag)
    (body(tools=[_tool({"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 60}
                                                        for i in range(3000)}}, strict=True)]),
     "the structural_tag constraint built from this request is"),  # Qwen's hermes tag pins a strict tool
    (body(tools=[_tool({"type": "object"})], tool_choice="required", structured_outputs={"json": {"type": "object"}}),
     "makes vLLM build its own constraint (structural_tag:hermes)"),
]


@pytest.mark.parametrize(("raw", "needle"), REFUSED)
def test_refusals_are_400_and_name_the_field(raw: Any, needle: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_body(raw, ENGINE)
    assert info.value.status == 400
    assert needle in str(info.value)


def test_a_model_not_served_is_404() -> None:
    with pytest.raises(BadRequest) as info:
        parse_body(body(model="Qwen/Qwen3-0.6B"), ENGINE)
    assert (info.value.status, info.value.kind) == (404, "NotFoundError")


def test_a_good_body_becomes_the_engines_request() -> None:
    parsed = parse_body(body(
        tools=[TOOL], tool_choice="none", stop="END", max_tokens=9, max_completion_tokens=7, stream=True,
        stream_options={"include_usage": True}, structured_outputs={"choice": ["a", "b"]}, user="u", n=1,
        messages=[{"role": "user", "content": [{"type": "text", "text": "h"}, {"type": "text", "text": "i"}]},
                  {"role": "assistant", "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}}]}],
    ), ENGINE)
    request = parsed.request
    assert (parsed.family, parsed.tool_choice.mode, parsed.include_usage) == ("qwen", "none", True)
    assert (request.model, request.stop, request.max_tokens, request.temperature) == ("oracle-qwen", ("END",), 7, 1.0)
    assert request.top_p == 1.0 and parse_body(body(top_p=0.9), ENGINE).request.top_p == 0.9  # the local engine honours it
    assert request.messages[0].content == "hi" and request.messages[1].tool_calls[0].name == "ls"
    assert list(request.extra_body["structured_outputs"]) == ["grammar"]  # choice, as the canonical grammar
    assert [t.name for t in request.tools] == ["ls"]
