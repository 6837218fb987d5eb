"""Property tests of the family modules over random tool schemas (odd names, nested and optional
parameters, enums, nullable types) and random valid calls, with the real tokenizers:

- the constraint compiles; the rendered calls are accepted token by token and the grammar ends there;
- parse(render(calls)) == calls, for every strategy;
- the parser never raises on arbitrary text;
- a call that breaks its schema is rejected by every strategy; a corrupted output is either rejected
  by the grammar or, when the grammar accepts it, parsed cleanly into calls that satisfy the schema.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jsoncheck import same

from harness.agents import DecodingConstraint, ToolCall, ToolSchema
from harness.grammar.families import FAMILIES, get_adapter
from harness.grammar.formats import strict_schema

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]  # ~20 s; the long profile: tox -e fuzz

CONSTRAINED = ("ebnf", "structural_tag", "json_schema")
CHEAP = settings(max_examples=10 * settings().max_examples)
"""Properties with no grammar compile afford ten times the profile's examples."""

# Names: FunctionGemma writes names bare, so no whitespace or : { } [ ] , < > -- but quotes,
# backslashes, dots, dollars, leading digits and non-ASCII letters are fair game.
tool_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_-.", min_size=1, max_size=12)
prop_names = st.text(alphabet="abcdefxyzABXY0129_-.$é\"'\\ü", min_size=1, max_size=8)
strings = (
    st.text(st.characters(exclude_categories=("Cs",)), max_size=16)
    .map(lambda s: unicodedata.normalize("NFC", s))
    .filter(lambda s: "<escape>" not in s)
)
enum_words = st.text(alphabet="abcxyz-_ ", min_size=1, max_size=6)

leaf_schemas = st.one_of(
    st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": ["string", "null"]},
            {"type": "integer", "nullable": True},
        ]
    ),
    st.lists(enum_words, min_size=1, max_size=4, unique=True).map(lambda e: {"type": "string", "enum": e}),
    st.lists(st.integers(-99, 99), min_size=1, max_size=4, unique=True).map(
        lambda e: {"type": "integer", "enum": e}
    ),
)


@st.composite
def object_schemas(draw: Any, values: Any, max_size: int = 4) -> dict[str, Any]:
    props = draw(st.dictionaries(prop_names, values, max_size=max_size))
    required = [k for k in props if draw(st.booleans())]
    return {"type": "object", "properties": props, "required": required}


value_schemas = st.recursive(
    leaf_schemas,
    lambda inner: st.one_of(
        inner.map(lambda s: {"type": "array", "items": s}), object_schemas(inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def toolsets(draw: Any) -> list[ToolSchema]:
    names = draw(st.lists(tool_names, min_size=1, max_size=3, unique=True))
    return [ToolSchema(n, f"Tool {n}.", draw(object_schemas(value_schemas))) for n in names]


def values_for(schema: dict[str, Any]) -> Any:
    """A strategy for values valid under ``schema`` (the subset the generators above produce)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if schema.get("nullable"):
        types = [*types, "null"]
    return st.one_of([_typed_values(schema, t) for t in types])


def _typed_values(schema: dict[str, Any], type_: str) -> Any:
    if type_ == "string":
        return strings
    if type_ == "integer":
        return st.integers(-(10**12), 10**12)
    if type_ == "number":
        return st.one_of(st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False))
    if type_ == "boolean":
        return st.booleans()
    if type_ == "null":
        return st.none()
    if type_ == "array":
        return st.lists(values_for(schema["items"]), max_size=3)
    props, required = schema["properties"], set(schema["required"])
    return st.fixed_dictionaries(
        {k: values_for(v) for k, v in props.items() if k in required},
        optional={k: values_for(v) for k, v in props.items() if k not in required},
    )


@st.composite
def tools_and_calls(draw: Any, max_calls: int = 1) -> tuple[list[ToolSchema], list[ToolCall]]:
    tools = draw(toolsets())
    calls = []
    for _ in range(draw(st.integers(1, max_calls))):
        tool = draw(st.sampled_from(tools))
        calls.append(ToolCall.create(tool.name, draw(values_for(tool.parameters))))
    return tools, calls



def check_same_calls(got: Any, want: list[ToolCall], text: str) -> None:
    assert len(got) == len(want), text
    for g, w in zip(got, want, strict=True):
        assert g.name == w.name and same(g.arguments, w.arguments), f"{text!r}: {g} != {w}"


def compile_and_walk(family: str, tools: list[ToolSchema], c: DecodingConstraint, text: str) -> Any:
    from harness.grammar import compile_artifact, walk_text

    artifact = get_adapter(family).build_payload(tools, c).artifact
    assert artifact is not None
    return walk_text(compile_artifact(artifact, family).compiled, family, text)


@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
@given(data=tools_and_calls(max_calls=3), parallel=st.booleans())
def test_rendered_calls_are_accepted_and_parse_back(
    family: str, strategy: str, data: Any, parallel: bool
) -> None:
    tools, calls = data
    if not parallel:
        calls = calls[:1]
    c = DecodingConstraint(strategy=strategy, allow_parallel_calls=parallel)  # type: ignore[arg-type]
    adapter = get_adapter(family)
    text = adapter.render_output(calls, c)
    walked = compile_and_walk(family, tools, c, text)
    assert walked.accepted, f"{walked.reason}\n{text!r}"
    parsed = adapter.parse_response(text, [], tools)
    assert parsed.errors == () and parsed.content is None, parsed
    check_same_calls(parsed.tool_calls, calls, text)


@pytest.mark.parametrize("strategy", ["none", *CONSTRAINED])
@pytest.mark.parametrize("family", FAMILIES)
@CHEAP
@given(data=tools_and_calls(max_calls=3))
def test_parse_of_render_is_the_calls(family: str, strategy: str, data: Any) -> None:
    tools, calls = data
    c = DecodingConstraint(strategy=strategy, allow_parallel_calls=True)  # type: ignore[arg-type]
    adapter = get_adapter(family)
    text = adapter.render_output(calls, c)
    parsed = adapter.parse_response(text, [], tools)
    assert parsed.errors == (), parsed.errors
    check_same_calls(parsed.tool_calls, calls, text)


MARKUP = [
    "<start_function_call>",
    "<end_function_call>",
    "call:",
    "<escape>",
    "<start_function_response>",
    "<tool_call>",
    "</tool_call>",
    "\n",
    "<think>",
    "</think>",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    '"',
    '"name": ',
    '"arguments": ',
    "true",
    "-1.5e3",
    "null",
    "cd",
]
noisy_text = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(MARKUP), st.text(max_size=4)), max_size=24).map("".join),
)


@pytest.mark.parametrize("family", FAMILIES)
@CHEAP
@given(text=noisy_text, data=tools_and_calls())
def test_parser_never_raises(family: str, text: str, data: Any) -> None:
    tools, _ = data
    parsed = get_adapter(family).parse_response(text, [], tools)
    assert parsed.tool_calls or parsed.errors  # an answer is either calls or counted failures
    assert all(isinstance(c.arguments, dict) for c in parsed.tool_calls)
    assert all(e.kind.startswith("parse:") for e in parsed.errors)


def _mutations(tools: list[ToolSchema], call: ToolCall) -> list[tuple[str, ToolCall]]:
    """Ways to make ``call`` break its tool's schema (those that apply)."""
    tool = next(t for t in tools if t.name == call.name)
    props = tool.parameters["properties"]
    out = [
        (
            "unknown tool",
            ToolCall.create(
                call.name + "_x" if call.name + "_x" not in {t.name for t in tools} else "zz" + call.name,
                call.arguments,
            ),
        )
    ]
    extra = "extra_" + "_".join(props)
    out.append(("unknown argument", ToolCall.create(call.name, {**call.arguments, extra: 1})))
    for key in tool.parameters["required"]:
        out.append(
            (
                "missing required",
                ToolCall.create(call.name, {k: v for k, v in call.arguments.items() if k != key}),
            )
        )
    for key, value in call.arguments.items():
        schema = props[key]
        if isinstance(value, str) and "integer" not in str(schema.get("type")) and "enum" not in schema:
            out.append(("string given a number", ToolCall.create(call.name, {**call.arguments, key: 7})))
        if isinstance(value, bool) or (isinstance(value, int) and schema.get("type") == "integer"):
            out.append(("given an object", ToolCall.create(call.name, {**call.arguments, key: {"x": 1}})))
    return out


@pytest.mark.parametrize("family", FAMILIES)
@given(data=tools_and_calls(), choice=st.integers(0, 1000), strategy=st.sampled_from(CONSTRAINED))
def test_call_breaking_its_schema_is_rejected(family: str, data: Any, choice: int, strategy: str) -> None:
    tools, calls = data
    mutations = _mutations(tools, calls[0])
    label, bad = mutations[choice % len(mutations)]
    c = DecodingConstraint(strategy=strategy)  # type: ignore[arg-type]
    text = get_adapter(family).render_output([bad], c)
    walked = compile_and_walk(family, tools, c, text)
    assert not walked.accepted, f"{label}: accepted {text!r}"


EDIT_CHARS = [*'{}[],:"<>\\ \n0a-.', "<escape>", "true", "null"]


@pytest.mark.parametrize("family", FAMILIES)
@given(
    data=tools_and_calls(),
    strategy=st.sampled_from(CONSTRAINED),
    where=st.floats(0, 1),
    edit=st.sampled_from(["delete", "insert", "replace"]),
    piece=st.sampled_from(EDIT_CHARS),
)
def test_corrupted_output_is_rejected_or_parsed_cleanly(
    family: str, data: Any, strategy: str, where: float, edit: str, piece: str
) -> None:
    tools, calls = data
    c = DecodingConstraint(strategy=strategy)  # type: ignore[arg-type]
    adapter = get_adapter(family)
    text = adapter.render_output(calls, c)
    at = int(where * len(text))
    if edit == "delete":
        bad = text[:at] + text[at + 1 :]
    elif edit == "insert":
        bad = text[:at] + piece + text[at:]
    else:
        bad = text[:at] + piece + text[at + 1 :]
    assume(bad != text)
    walked = compile_and_walk(family, tools, c, bad)
    parsed = adapter.parse_response(bad, [], tools)  # never raises, accepted or not
    if walked.accepted:
        assert parsed.errors == () and len(parsed.tool_calls) == 1, f"{bad!r}: {parsed}"
        call = parsed.tool_calls[0]
        tool = next(t for t in tools if t.name == call.name)
        jsonschema.validate(call.arguments, strict_schema(tool.parameters))
        json.dumps(call.arguments)
