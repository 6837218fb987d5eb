"""The FunctionGemma chat template for vLLM (harness/templates/functiongemma.jinja) renders exactly what
``function_gemma.render_prompt`` renders, for OpenAI-format input, in transformers' sandboxed environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agents import Message, ToolCall, ToolResult, ToolSchema
from harness.grammar.families.function_gemma import ACTIVATION, render_prompt
from harness.grammar.families.function_gemma_template import (
    render_with_template,
    template_path,
    template_text,
    vllm_view,
)

DATA = Path(__file__).resolve().parent.parent / "data"
SHELLPER = [ToolSchema.from_openai(t) for t in json.loads((DATA / "shellper_tools.json").read_text())]
TOOLS = {t.name: t for t in SHELLPER}

NESTED = ToolSchema(
    name="put",
    description='Nested "quoted" {braces} é.',
    parameters={
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "description": "Tags.",
            },
            "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "rows": {
                "type": "array",
                "items": {"type": "object", "properties": {"Z": {"type": "number"}}, "required": ["Z"]},
            },
            "opts": {
                "type": "object",
                "properties": {
                    "z": {"type": "integer"},
                    "a": {"type": ["boolean", "null"]},
                    "A": {"type": "string"},
                },
                "required": ["z"],
            },
            "Mode": {"type": "string", "enum": ["x y", "z"], "nullable": True},
            "mode": {"type": ["null", "string"], "description": "Lower-case twin."},
            "free": {},
        },
        "required": ["tags", "opts"],
    },
)
NO_DESC = ToolSchema.from_openai({"type": "function", "function": {"name": "ping"}})


def call(id_: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id_, name, arguments)


def result(id_: str, name: str, output: Any) -> Message:
    return Message.tool(ToolResult(id_, name, output))


def assistant(content: str | None, *calls: ToolCall) -> Message:
    return Message("assistant", content, tuple(calls))


CD = call("c1", "cd", folder="docs")
LS = call("c2", "ls", a=True)
TAIL = call("c3", "tail", file_name='say "hi" }{ <b>.txt', lines=15)
ECHO = call("c4", "echo", content="naïve — 日本語 🙂\nline2\t}", file_name="out.txt")
DU = call("c5", "du", human_readable=False)

# id -> (messages, tools)
CASES: dict[str, tuple[list[Message], list[ToolSchema]]] = {
    "plain-user": ([Message("user", "List the files.")], SHELLPER),
    "no-tools": ([Message("user", "hi")], []),
    "system": ([Message("system", "  You manage files.  "), Message("user", " go ")], SHELLPER),
    "developer-with-activation": (
        [Message("developer", f"{ACTIVATION}. Be brief."), Message("user", "where?")],
        [TOOLS["pwd"]],
    ),
    "empty-system": ([Message("system", "   "), Message("user", "x")], [TOOLS["cd"]]),
    "later-system": (
        [Message("user", "a"), Message("system", "Be terse."), Message("user", "b")],
        [TOOLS["cd"]],
    ),
    "string-call-dict-result": (
        [
            Message("user", "go to docs"),
            assistant(None, CD),
            result("c1", "cd", {"current_working_directory": "docs"}),
        ],
        SHELLPER,
    ),
    "int-string-call-string-result": (
        [Message("user", "tail"), assistant(None, TAIL), result("c3", "tail", "line 1\nline 2 }\n")],
        SHELLPER,
    ),
    "bool-calls-parallel": (
        [
            Message("user", "ls and du"),
            assistant("Sure.", LS, DU),
            result("c2", "ls", {"current_directory_content": ["a.txt", ".hidden", "日本"]}),
            result("c5", "du", {"disk_usage": "1.5 KB", "bytes": 1536, "ratio": 0.25, "ok": True, "x": None}),
        ],
        SHELLPER,
    ),
    "results-then-answer-then-user": (
        [
            Message("system", "Files."),
            Message("user", "cd"),
            assistant(None, CD),
            result("c1", "cd", {"current_working_directory": "docs"}),
            assistant("Done: you are in docs."),
            Message("user", "now echo"),
            assistant(None, ECHO),
            result("c4", "echo", {"error": 'echo: "out.txt" {x}'}),
        ],
        SHELLPER,
    ),
    "calls-without-results": ([Message("user", "cd"), assistant(None, CD)], SHELLPER),
    "calls-without-results-then-user": (
        [Message("user", "cd"), assistant(None, CD), Message("user", "and again")],
        SHELLPER,
    ),
    "result-names-by-call-id": (
        [
            Message("user", "x"),
            assistant(None, CD, LS),
            Message("tool", '{"b": 1, "a": [1, 2.5, "s"]}', tool_call_id="c2"),  # no name: ls via the id
            Message("tool", "plain", tool_call_id="nope", name="given"),  # unknown id: its own name
            Message("tool", "", tool_call_id="nope"),  # neither: "unknown"
        ],
        SHELLPER,
    ),
    "orphan-tool": (
        [Message("user", "x"), Message("tool", "orphan", name="cat"), Message("user", "y")],
        [TOOLS["cat"]],
    ),
    "assistant-text-only": ([Message("user", "hi"), assistant("  Hello!  "), Message("user", "bye")], []),
    "unicode-everywhere": (
        [
            Message("system", "Réponds en français 🙂"),
            Message("user", "Crée « été »"),
            assistant(None, call("u1", "mkdir", dir_name="été 🙂")),
            result("u1", "mkdir", {"créé": "été 🙂", "ok": True}),
        ],
        SHELLPER,
    ),
    "nested-schema-and-arguments": (
        [
            Message("user", "put"),
            assistant(
                None,
                call(
                    "n1",
                    "put",
                    tags=["a", "b"],
                    opts={"z": 3, "a": None, "A": "x"},
                    rows=[{"Z": 1.5}, {"Z": -2e-07}],
                    matrix=[[1, 2], []],
                    mode="m",
                    Mode="x y",
                    free={"k": {"deep": [True, False]}},
                ),
            ),
            result("n1", "put", {"B": 1, "b": 2, "a": {"Y": [], "y": {}}}),
        ],
        [NESTED, NO_DESC],
    ),
    "awkward-tool-results": (
        [
            Message("user", "x"),
            assistant(None, CD),
            Message("tool", '  {"k": "v"}  ', tool_call_id="c1"),  # JSON whitespace around: an object
            Message("tool", '{"bad key": 1}', tool_call_id="c1"),  # key not bare: as text
            Message("tool", '{"k": "<escape>"}', tool_call_id="c1"),  # unwritable string: as text
            Message("tool", "[1, 2]", tool_call_id="c1"),  # not an object: as text
            Message("tool", '{"k": 1,}', tool_call_id="c1"),  # invalid JSON: as text
            Message("tool", '{"a": NaN}', tool_call_id="c1"),  # json.loads reads it; non-finite: as text
            Message("tool", '{"a": 1e400}', tool_call_id="c1"),  # overflows to inf: as text
        ],
        [TOOLS["cd"]],
    ),
}


def openai_of(
    messages: list[Message], tools: list[ToolSchema]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [m.to_openai() for m in messages], [t.to_openai() for t in tools]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_template_equals_renderer(case: tuple[list[Message], list[ToolSchema]]) -> None:
    messages, tools = case
    expected = render_prompt(messages, tools)
    raw_messages, raw_tools = openai_of(messages, tools)
    # As the OpenAI client sends them (arguments as JSON strings) and as vLLM hands them to the template
    # (arguments parsed to dicts, content None -> "", tools dumped with every field).
    assert render_with_template(raw_messages, raw_tools) == expected
    assert render_with_template(*vllm_view(raw_messages, raw_tools)) == expected


def test_template_writes_the_trained_format_not_vllms_example() -> None:
    messages, tools = CASES["int-string-call-string-result"]
    text = render_with_template(*openai_of(messages, tools))
    assert "<start_function_declaration>declaration:tail{description:<escape>" in text
    assert "lines:{description:<escape>" in text and "type:<escape>INTEGER<escape>" in text
    assert 'call:tail{file_name:<escape>say "hi" }{ <b>.txt<escape>,lines:15}' in text
    assert "<escape>15<escape>" not in text
    assert text.endswith("response:tail{value:<escape>line 1\nline 2 }\n<escape>}<end_function_response>")


def test_generation_prompt_follows_add_generation_prompt() -> None:
    messages, tools = CASES["plain-user"]
    raw = openai_of(messages, tools)
    with_prompt = render_with_template(*raw)
    assert with_prompt.endswith("<end_of_turn>\n<start_of_turn>model\n")
    assert render_with_template(*raw, add_generation_prompt=False) == with_prompt.removesuffix(
        "<start_of_turn>model\n"
    )
    messages, tools = CASES["string-call-dict-result"]  # after results the model continues its turn
    assert render_with_template(*openai_of(messages, tools)).endswith("}<end_function_response>")


def test_content_as_text_parts_renders_the_same() -> None:
    """vLLM passes content as a string or, for templates it thinks iterate content, as text parts."""
    messages, tools = CASES["results-then-answer-then-user"]
    raw_messages, raw_tools = openai_of(messages, tools)
    parts = [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if m["content"] else m
        for m in raw_messages
    ]
    assert render_with_template(parts, raw_tools) == render_prompt(messages, tools)


def test_through_the_functiongemma_tokenizer(fg_tokenizer: Any) -> None:
    """vLLM's path: the tokenizer's apply_chat_template supplies bos_token and drops None fields."""
    messages, tools = CASES["bool-calls-parallel"]
    raw_messages, raw_tools = openai_of(messages, tools)
    text = fg_tokenizer.hf.apply_chat_template(
        raw_messages,
        tools=raw_tools,
        chat_template=template_text(),
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == render_prompt(messages, tools)


def test_output_does_not_depend_on_trim_blocks() -> None:
    """Every line starts with a whitespace-stripping tag: a plain sandbox renders the same bytes."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(extensions=["jinja2.ext.loopcontrols"])
    messages, tools = CASES["nested-schema-and-arguments"]
    raw_messages, raw_tools = vllm_view(*openai_of(messages, tools))
    text = env.from_string(template_text()).render(
        messages=raw_messages, tools=raw_tools, add_generation_prompt=True, bos_token="<bos>"
    )
    assert text == render_prompt(messages, tools)


def test_arguments_that_are_not_a_json_object_raise() -> None:
    bad = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "cd", "arguments": "{folder: docs}"}}
        ],
    }
    with pytest.raises(jinja2.TemplateError, match="not a JSON object"):
        render_with_template([{"role": "user", "content": "x"}, bad], [TOOLS["cd"].to_openai()])


def test_empty_parameters_is_the_one_documented_difference() -> None:
    """``ToolSchema(parameters={})`` renders without ``parameters``; over the OpenAI API an empty ``{}`` is
    read as "no parameters" (``ToolSchema.from_openai`` and the template both use the empty object schema), so
    that spelling cannot reach the template. Both are valid declarations of a tool with no arguments."""
    bare = ToolSchema("pwd", "Where am I.", parameters={})
    messages = [Message("user", "where?")]
    ours = render_prompt(messages, [bare])
    theirs = render_with_template(*openai_of(messages, [bare]))
    assert "declaration:pwd{description:<escape>Where am I.<escape> }" in ours
    assert theirs == ours.replace(
        "Where am I.<escape> }", "Where am I.<escape>,parameters:{type:<escape>OBJECT<escape>} }"
    )
    assert theirs == render_prompt(messages, [ToolSchema.from_openai(bare.to_openai())])


def test_template_is_package_data_with_its_usage_comment() -> None:
    path = template_path()
    assert path.is_file() and path.parent.name == "templates"
    assert path.read_text(encoding="utf-8").startswith("{#- FunctionGemma chat template for vLLM")
    assert "--chat-template" in template_text()


def test_object_content_of_a_tool_message_renders_as_its_json() -> None:
    """Direct transformers users may put a dict in a tool message; it renders as that JSON text would."""
    messages = [
        Message("user", "x"),
        assistant(None, CD),
        Message("tool", '{"b": [1], "a": "é"}', tool_call_id="c1"),
    ]
    raw_messages, raw_tools = openai_of(messages, [TOOLS["cd"]])
    raw_messages[-1]["content"] = {"b": [1], "a": "é"}
    assert render_with_template(raw_messages, raw_tools) == render_prompt(messages, [TOOLS["cd"]])


# Tool-result content the JSON reader must judge exactly as json.loads does (object or text).
JSON_TEXTS = [
    '{"a": "x\\"y\\\\z\\/\\b\\f\\n\\r\\t"}',
    '{"e": "\\u00e9\\u263a\\ud83d\\ude00\\ud800x\\udc00\\ud800\\ud800\\udc00"}',
    '{"n": [0, -0, 12, -3.50, 1e3, 2E-2, 1.5e+2, 123456789012345678901234567890]}',
    '{"a":{"b":{"c":[[],{}]}},"A":true,"_":false,"z":null}',
    '{"dup": 1, "dup": 2}',
    '\n\t {"ws" : [ 1 , 2 ] } \r\n',
    '{"x": "raw\ttab"}',
    '{"x": "bad \\x escape"}',
    '{"x": "\\u12G4"}',
    '{"x": 01}',
    '{"x": 1.}',
    '{"x": .5}',
    '{"x": -}',
    '{"x": truex}',
    '{"x": tru}',
    '{"x": -Infinity}',
    '{"x": Infinity}',
    '{"x": 1} extra',
    '{"x": 1}{"y": 2}',
    '{"x" 1}',
    '{"x": [1 2]}',
    '{"x": [1,]}',
    "{'x': 1}",
    '{"": 1}',
    '{"a:b": 1}',
    '{"ok": "unclosed}',
    '{"x": "}{ \\" <b>"}',
    '\ufeff{"x": 1}',
    "{",
    "{}",
    '"just a string"',
    "null",
    "",
]


@pytest.mark.parametrize("content", JSON_TEXTS)
def test_tool_result_text_is_judged_as_json_loads_does(content: str) -> None:
    messages = [Message("user", "x"), assistant(None, CD), Message("tool", content, tool_call_id="c1")]
    assert render_with_template(*openai_of(messages, [TOOLS["cd"]])) == render_prompt(messages, [TOOLS["cd"]])


json_keys = st.text(alphabet="abAB_-.é 1:", min_size=0, max_size=4)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_keys, inner, max_size=3),
    max_leaves=8,
)


@settings(deadline=None, max_examples=2 * settings().max_examples)
@given(
    output=st.dictionaries(json_keys, json_values, max_size=4),
    arguments=st.dictionaries(st.text(alphabet="abAB_", min_size=1, max_size=3), json_values, max_size=3),
    ensure_ascii=st.booleans(),
)
def test_random_results_and_arguments_agree(
    output: dict[str, Any], arguments: dict[str, Any], ensure_ascii: bool
) -> None:
    content = json.dumps(output, ensure_ascii=ensure_ascii)
    messages = [
        Message("user", "x"),
        assistant(None, ToolCall("r1", "cd", arguments)),
        Message("tool", content, tool_call_id="r1"),
    ]
    assert render_with_template(*openai_of(messages, [TOOLS["cd"]])) == render_prompt(messages, [TOOLS["cd"]])
