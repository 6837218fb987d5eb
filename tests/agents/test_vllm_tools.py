"""What vLLM 0.32 builds itself for the ``required`` and ``strict`` strategies (``harness.grammar.formats.vllm_tools``):
the kind of constraint per family and request, the hermes structural tag's shape, the JSON-array fallback,
and the requests the strategies send. The byte-for-byte comparison with vLLM's own code is in
``tests/real_vllm/test_vllm_strict.py`` (it imports vLLM)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.agents.constraint import DecodingConstraint
from harness.agents.types import ToolSchema
from harness.grammar.families import get_adapter
from harness.grammar.formats.vllm_tools import ToolRequest, openai_tools, server_constraint, strategy_request
from harness.grammar.schema.keywords import (
    VLLM_COLUMNS,
    builder_of,
    check_keywords,
    enforces,
    markdown_table,
)
from harness.vocabulary import SERVER_STRATEGIES, Strategy

CAT = ToolSchema("cat", "show a file", {"type": "object", "properties": {"file_name": {"type": "string"}},
                                         "required": ["file_name"]})
LS = ToolSchema("ls", "list", {"type": "object", "properties": {"a": {"type": "boolean"}}})
TOOLS = [CAT, LS]
NAMED = {"type": "function", "function": {"name": "ls"}}

BUILDS = [  # (family, request, what vLLM builds)
    ("qwen", ToolRequest("required", False, False), "structural_tag:hermes"),
    ("qwen", ToolRequest(None, True, False), "structural_tag:hermes"),
    ("qwen", ToolRequest(None, False, None), "none"),  # auto, no strict tool: unconstrained
    ("qwen", ToolRequest(None, False, False), "structural_tag:hermes"),  # one call needs the envelope
    ("qwen", ToolRequest(NAMED, False, None), "structural_tag:hermes"),
    ("qwen", ToolRequest("none", True, None), "none"),
    ("function_gemma", ToolRequest("required", False, False), "json_array"),
    ("function_gemma", ToolRequest(None, True, False), "none"),  # no structural tag: strict does nothing
    ("function_gemma", ToolRequest(NAMED, False, None), "json_object"),
]


@pytest.mark.parametrize(("family", "request_fields", "built"), BUILDS)
def test_what_vllm_builds_per_family_and_request(family: str, request_fields: ToolRequest, built: str) -> None:
    got = server_constraint(family, TOOLS, request_fields)
    assert got.label == built
    assert (got.artifact is None) == (built == "none")


def tag(family: str, request_fields: ToolRequest) -> dict[str, Any]:
    artifact = server_constraint(family, TOOLS, request_fields).artifact
    assert artifact is not None and artifact.kind == "structural_tag"
    return json.loads(artifact.value)["format"]  # type: ignore[no-any-return]


def check_arguments(fmt: dict[str, Any], expected: dict[str, Any]) -> None:
    """Each tool's two tag shapes carry ``expected[tool]`` as its arguments' schema."""
    for one in fmt["tags"]:
        name = one["begin"].split('"name": "')[1].split('"')[0]
        assert one["content"]["json_schema"] == expected[name]


def test_required_on_hermes_leaves_arguments_free_and_strict_pins_them() -> None:
    required = tag("qwen", ToolRequest("required", False, False))
    assert required["type"] == "tags_with_separator" and required["at_least_one"] and required["stop_after_first"]
    check_arguments(required, {"cat": True, "ls": True})
    strict = tag("qwen", ToolRequest(None, True, None))
    assert strict["type"] == "triggered_tags" and strict["triggers"] == ["<tool_call>"]
    assert not strict["stop_after_first"]  # parallel calls allowed: no limit
    check_arguments(strict, {"cat": CAT.parameters, "ls": LS.parameters})
    assert [t["begin"] for t in strict["tags"][:2]] == ['<tool_call>\n{"name": "cat", "arguments": ',
                                                        '<tool_call>{"name": "cat", "arguments": ']


def test_one_strict_tool_pins_only_its_arguments_and_a_named_choice_only_its_tool() -> None:
    check_arguments(tag("qwen", ToolRequest(None, False, None, frozenset({"ls"}))), {"cat": True, "ls": LS.parameters})
    named = tag("qwen", ToolRequest(NAMED, False, None))
    assert {t["begin"].split('"name": "')[1].split('"')[0] for t in named["tags"]} == {"ls"}
    assert named["stop_after_first"]


@pytest.mark.parametrize(("parallel", "max_items"), [(False, 1), (None, None)])
def test_the_json_array_fallback(parallel: bool | None, max_items: int | None) -> None:
    artifact = server_constraint("function_gemma", TOOLS, ToolRequest("required", False, parallel)).artifact
    assert artifact is not None and artifact.kind == "json"
    schema = json.loads(artifact.value)
    assert schema["type"] == "array" and schema["minItems"] == 1 and schema.get("maxItems") == max_items
    assert [b["properties"]["name"]["enum"] for b in schema["items"]["anyOf"]] == [["cat"], ["ls"]]
    assert schema["items"]["anyOf"][0]["properties"]["parameters"] == CAT.parameters


STRATEGY_REQUESTS = [  # (strategy, parallel calls allowed, tool_choice, strict tools, parallel_tool_calls)
    (Strategy.required, False, "required", False, False),
    (Strategy.required, True, "required", False, None),
    (Strategy.strict, False, None, True, False),
]


@pytest.mark.parametrize(("strategy", "parallel", "choice", "strict", "sent_parallel"), STRATEGY_REQUESTS)
@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_the_strategies_send_no_grammar_but_their_tool_fields(family: str, strategy: Strategy, parallel: bool,
                                                              choice: str | None, strict: bool,
                                                              sent_parallel: bool | None) -> None:
    assert strategy_request(strategy, allow_parallel_calls=parallel) == ToolRequest(choice, strict, sent_parallel)
    payload = get_adapter(family).build_payload(TOOLS, DecodingConstraint(strategy, allow_parallel_calls=parallel))
    assert "structured_outputs" not in payload.extra_body
    assert (payload.tool_choice, payload.strict_tools, payload.parallel_tool_calls) == (choice, strict, sent_parallel)
    assert payload.server_built == server_constraint(family, TOOLS, ToolRequest(choice, strict, sent_parallel)).label


def test_strict_tools_are_sent_marked_strict() -> None:
    assert [t["function"].get("strict") for t in openai_tools(TOOLS, strict=True)] == [True, True]
    assert [t["function"].get("strict") for t in openai_tools(TOOLS, strict=False)] == [None, None]


UNIQUE = ToolSchema("tag", "tags", {"type": "object", "properties": {"t": {"type": "array", "uniqueItems": True}}})


@pytest.mark.parametrize(("family", "strategy", "builder"), [
    ("qwen", "strict", "vllm"), ("function_gemma", "required", "vllm"),
    ("qwen", "required", "free"), ("function_gemma", "strict", "free"),
])
def test_vllm_refuses_no_keyword_ahead_and_enforces_per_its_builder(family: str, strategy: str, builder: str) -> None:
    assert builder_of(family, strategy) == builder
    check_keywords([UNIQUE], family, strategy)  # vLLM lets it through: no ConstraintError
    assert not enforces(family, strategy, "uniqueItems")
    assert enforces(family, strategy, "enum") == (builder == "vllm")


def test_the_docs_keyword_table_is_the_module_table() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "vllm-strict.md").read_text(encoding="utf-8")
    assert markdown_table(VLLM_COLUMNS) in page


def test_the_server_strategies_are_the_vocabularys() -> None:
    assert SERVER_STRATEGIES == (Strategy.required, Strategy.strict)
    assert all(s.constrained and s.server_built for s in SERVER_STRATEGIES)


BROKEN = ToolSchema("grep", "search", {"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}})


@pytest.mark.parametrize(("family", "strategy", "refused"), [
    ("qwen", Strategy.strict, True), ("function_gemma", Strategy.required, True),
    ("qwen", Strategy.required, False),  # the arguments are free: nothing of the schema is compiled
    ("function_gemma", Strategy.strict, False),  # nothing is built
])
def test_a_tool_vllm_cannot_compile_is_refused_naming_it(family: str, strategy: Strategy, refused: bool) -> None:
    from harness.agents.constraint import ConstraintError

    build = lambda: get_adapter(family).build_payload([CAT, BROKEN], DecodingConstraint(strategy))  # noqa: E731
    if not refused:
        build()
        return
    with pytest.raises(ConstraintError, match=r"tool 'grep': vLLM's own constraint .* cannot compile its parameters"):
        build()
