"""Request payloads carry vLLM's StructuredOutputsParams field names and types; the artifacts are what
xgrammar 0.2.8 reads (structural tags validate against its format schema); the json_schema schema
accepts valid calls and rejects invalid ones."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from familycases import (
    CONSTRAINED,
    FAMILIES,
    TOOLS_FILE,
    VALID_CALLS,
    calls_of,
    constraint,
    shellper_tools,
    walk,
)

from harness.agents import ConstraintError, DecodingConstraint, ToolSchema
from harness.grammar.families import FAMILIES as EXPORTED_FAMILIES
from harness.grammar.families import get_adapter

VLLM_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "json": (str, dict),
    "regex": (str,),
    "choice": (list,),
    "grammar": (str,),
    "json_object": (bool,),
    "structural_tag": (str,),
}
"""vLLM's StructuredOutputsParams constraint fields and their types (exactly one is set)."""
FIELD_OF = {"ebnf": "grammar", "structural_tag": "structural_tag", "json_schema": "json"}
EXTRA: dict[str, dict[str, Any]] = {
    "function_gemma": {"skip_special_tokens": False},
    "qwen": {"chat_template_kwargs": {"enable_thinking": False}},
}
STOP = {"function_gemma": ("<start_function_response>",), "qwen": ()}


def payload(family: str, strategy: str, parallel: bool = False, tools: Any = None) -> Any:
    tools = shellper_tools() if tools is None else tools
    return get_adapter(family).build_payload(tools, constraint(strategy, parallel))


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_payload_uses_vllm_field_names_and_types(family: str, strategy: str, parallel: bool) -> None:
    p = payload(family, strategy, parallel)
    field = FIELD_OF[strategy]
    assert set(p.extra_body) == {"structured_outputs", *EXTRA[family]}
    for key, value in EXTRA[family].items():
        assert p.extra_body[key] == value
    so = p.extra_body["structured_outputs"]
    # exactly one constraint field and no options: vLLM reads disable_any_whitespace only from the
    # server's configuration, so sending it would only suggest a language the server does not compile
    assert list(so) == [field]
    assert isinstance(so[field], VLLM_FIELD_TYPES[field])
    assert p.artifact is not None and p.artifact.kind == field and so[field] == p.artifact.value
    assert p.stop == STOP[family]
    # the raw text must come back for the family's own parser, not vLLM's tool parser
    assert p.tool_choice == "none"


@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_payload_reads_back_as_the_same_constraint(family: str, strategy: str) -> None:
    """The server side (harness.grammar.constraint_from_request) finds exactly the adapter's artifact."""
    from harness.grammar import constraint_from_request

    p = payload(family, strategy)
    assert constraint_from_request(p.extra_body, None) == p.artifact


@pytest.mark.parametrize("family", FAMILIES)
def test_strategy_none_sends_no_constraint(family: str) -> None:
    p = payload(family, "none")
    assert "structured_outputs" not in p.extra_body and p.artifact is None
    assert p.extra_body == EXTRA[family] and p.stop == STOP[family]
    assert p.tool_choice is None  # the server's own tool parser: what users of native tool calling get


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("family", FAMILIES)
def test_structural_tag_follows_xgrammar_format_schema(family: str, parallel: bool) -> None:
    from xgrammar.structural_tag import StructuralTag, TriggeredTagsFormat

    tag = StructuralTag.from_json(payload(family, "structural_tag", parallel).artifact.value)
    assert isinstance(tag.format, TriggeredTagsFormat)
    assert tag.format.at_least_one and tag.format.stop_after_first is (not parallel)
    # One tag holding every tool: xgrammar compiles each tag's content on its own (with its own copy
    # of the string rules), so one tag per tool costs several times the compile at 100 tools.
    assert len(tag.format.tags) == 1


@pytest.mark.parametrize("parallel", [False, True])
def test_qwen_structural_tag_matches_xgrammar_builtin_qwen_3(parallel: bool) -> None:
    import xgrammar as xgr

    openai_tools = get_adapter("qwen").format_tools(shellper_tools())  # as the adapter declares them
    builtin = xgr.get_model_structural_tag(
        "qwen_3",
        tools=openai_tools,
        tool_choice="required",
        reasoning="disabled",
        parallel_tool_calls=parallel,
    ).model_dump()["format"]
    ours = json.loads(payload("qwen", "structural_tag", parallel).artifact.value)["format"]
    for key in ("type", "triggers", "at_least_one", "stop_after_first", "excludes"):
        assert ours[key] == builtin[key], key
    # One tag instead of the built-in's one per tool (tests/families/test_qwen_structural_tag.py):
    # the built-in's begins all start with ours, and the end is the same.
    [tag] = ours["tags"]
    assert all(t["begin"].startswith(tag["begin"]) and t["end"] == tag["end"] for t in builtin["tags"])
    # Both accept the rendered calls.
    from xgrammar.testing import _is_grammar_accept_string

    builtin_grammar = xgr.Grammar.from_structural_tag(
        json.dumps({"type": "structural_tag", "format": builtin})
    )
    for call in VALID_CALLS:
        text = get_adapter("qwen").render_output(calls_of(call), constraint("structural_tag", parallel))
        assert _is_grammar_accept_string(builtin_grammar, text), text
        assert walk("qwen", "structural_tag", text, parallel).accepted


@pytest.mark.parametrize("call", VALID_CALLS, ids=lambda c: f"{c[0]}{sorted(c[1])}")
def test_json_schema_accepts_rendered_calls(call: Any) -> None:
    schema = json.loads(payload("qwen", "json_schema").artifact.value)
    for family in FAMILIES:
        text = get_adapter(family).render_output(calls_of(call), constraint("json_schema"))
        jsonschema.validate(json.loads(text), schema)


INVALID_JSON_CALLS = [
    {"name": "rmrf", "arguments": {}},
    {"name": "cd", "arguments": {}},
    {"name": "cd", "arguments": {"folder": 1}},
    {"name": "cd", "arguments": {"folder": "x", "extra": 1}},
    {"name": "wc", "arguments": {"file_name": "x", "mode": "q"}},
    {"name": "cd"},
    {"name": "cd", "arguments": {"folder": "x"}, "id": 3},
    [{"name": "cd", "arguments": {"folder": "x"}}],
]


@pytest.mark.parametrize("doc", INVALID_JSON_CALLS, ids=repr)
def test_json_schema_rejects_invalid_calls(doc: Any) -> None:
    schema = json.loads(payload("function_gemma", "json_schema").artifact.value)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_parallel_json_schema_is_a_non_empty_list() -> None:
    schema = json.loads(payload("qwen", "json_schema", parallel=True).artifact.value)
    jsonschema.validate([{"name": "pwd", "arguments": {}}], schema)
    for bad in ([], {"name": "pwd", "arguments": {}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


BAD_TOOLSETS: list[tuple[str, list[ToolSchema], str, tuple[str, ...]]] = [
    ("no tools", [], "at least one tool", ("ebnf", "structural_tag", "json_schema")),
    (
        "duplicate name",
        [ToolSchema("a", "x"), ToolSchema("a", "y")],
        "two tools",
        ("ebnf", "structural_tag", "json_schema"),
    ),
    # Only the EBNF builder reads schemas itself; JSON-schema artifacts leave $ref to xgrammar.
    (
        "$ref",
        [ToolSchema("a", "x", {"type": "object", "properties": {"p": {"$ref": "#/x"}}})],
        r"\$ref",
        ("ebnf",),
    ),
]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", BAD_TOOLSETS, ids=lambda c: c[0])
def test_unbuildable_constraint_is_an_error(family: str, case: Any) -> None:
    _, tools, message, strategies = case
    for strategy in strategies:
        with pytest.raises(ConstraintError, match=message):
            payload(family, strategy, tools=tools)


@pytest.mark.parametrize("name", ["a b", "a:b", "a{b", "a,b", "x<y", ""])
def test_function_gemma_refuses_names_its_syntax_cannot_write(name: str) -> None:
    tool = ToolSchema("t", "x", {"type": "object", "properties": {name: {"type": "string"}}})
    with pytest.raises(ConstraintError, match="FunctionGemma"):
        payload("function_gemma", "ebnf", tools=[tool])
    payload("qwen", "ebnf", tools=[tool])  # JSON keys can be anything


def test_get_adapter() -> None:
    assert EXPORTED_FAMILIES == ("function_gemma", "qwen")
    for family in EXPORTED_FAMILIES:
        assert get_adapter(family).family == family
    with pytest.raises(ValueError, match="function_gemma, qwen"):
        get_adapter("llama")


def test_families_build_everything_without_importing_xgrammar() -> None:
    code = (
        "import sys, json\n"
        "from harness.agents import DecodingConstraint, ToolSchema, ToolCall\n"
        "from harness.grammar.families import FAMILIES, get_adapter\n"
        f"tools = [ToolSchema.from_openai(t) for t in json.load(open({str(TOOLS_FILE)!r}))]\n"
        "for f in FAMILIES:\n"
        "    a = get_adapter(f)\n"
        "    for s in ('none', 'ebnf', 'structural_tag', 'json_schema'):\n"
        "        c = DecodingConstraint(strategy=s)\n"
        "        a.build_payload(tools, c); a.render_output([ToolCall.create('pwd', {})], c)\n"
        "    a.parse_response('x', [], tools); a.render_prompt([], tools)\n"
        "bad = [m for m in ('xgrammar', 'torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_strategy_never_reaches_an_adapter() -> None:
    with pytest.raises(ConstraintError):
        DecodingConstraint(strategy="grammar")  # type: ignore[arg-type]
