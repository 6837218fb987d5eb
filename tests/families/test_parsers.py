"""The parsers read exactly what the constraints let through, and the native unconstrained output:
typed errors, never a silent {}, text around calls kept, never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from familycases import (
    CONSTRAINED,
    FAMILIES,
    TRICKY_STRINGS,
    VALID_CALLS,
    calls_of,
    check_round_trip,
    same,
    shellper_tools,
)

from harness.agents import ToolCall
from harness.grammar.families import get_adapter

S, E = "<start_function_call>", "<end_function_call>"

# (output, expected calls, expected content, expected error kinds)
FG_OUTPUTS: list[tuple[str, list[tuple[str, dict[str, Any]]], str | None, list[str]]] = [
    (
        f"{S}call:tail{{file_name:<escape>a.txt<escape>,lines:15}}{E}",
        [("tail", {"file_name": "a.txt", "lines": 15})],
        None,
        [],
    ),
    (f"{S}call:ls{{a:true}}{E}", [("ls", {"a": True})], None, []),
    (f"{S}call:ls{{a:false}}{E}", [("ls", {"a": False})], None, []),
    (f"{S}call:cd{{folder:<escape>5<escape>}}{E}", [("cd", {"folder": "5"})], None, []),
    (f"{S}call:cd{{folder:<escape>true<escape>}}{E}", [("cd", {"folder": "true"})], None, []),
    (f"{S}call:echo{{content:null}}{E}", [("echo", {"content": None})], None, []),
    (
        f"{S}call:f{{x:-2.5e3,y:0,z:[1,<escape>a<escape>,[]],o:{{k:{{}}}}}}{E}",
        [("f", {"x": -2500.0, "y": 0, "z": [1, "a", []], "o": {"k": {}}})],
        None,
        [],
    ),
    (f"{S}call:pwd{{}}{E}", [("pwd", {})], None, []),
    (f"{S}call:pwd{{}}{E}<start_function_response>", [("pwd", {})], None, []),
    (f"{S}call:pwd{{}}{E}<end_of_turn>", [("pwd", {})], None, []),
    (f"{S}call:pwd{{}}{E}{S}call:ls{{a:true}}{E}", [("pwd", {}), ("ls", {"a": True})], None, []),
    (f"Let me look.{S}call:pwd{{}}{E} Done.", [("pwd", {})], "Let me look. Done.", []),
    ("The folder is empty.", [], "The folder is empty.", ["parse:no_call"]),
    ("", [], None, ["parse:no_call"]),
    (f"{S}call:format_disk{{}}{E}", [], None, ["parse:unknown_tool"]),
    (f"{S}call:cd{{folder:docs}}{E}", [], None, ["parse:bad_arguments"]),
    (
        f"{S}call:cd{{folder:<escape>a<escape>,folder:<escape>b<escape>}}{E}",
        [],
        None,
        ["parse:bad_arguments"],
    ),
    (f"{S}call:tail{{file_name:<escape>x<escape>,lines:15abc}}{E}", [], None, ["parse:bad_arguments"]),
    (f"{S}cd{{folder:<escape>x<escape>}}{E}", [], None, ["parse:bad_arguments"]),
    (f"{S}call:pwd{E}", [], None, ["parse:bad_arguments"]),
    (f"{S}call:cd{{folder:<escape>x<escape>}} and more", [], None, ["parse:bad_arguments"]),
    (f"{S}call:cd{{folder:<escape>doc", [], None, ["parse:unterminated_call"]),
    (f"{S}call:cd{{folder:<escape>doc<escape>", [], None, ["parse:unterminated_call"]),
    (f"{S}call:cd{{folder:<escape>doc<escape>}}", [], None, ["parse:unterminated_call"]),
    (
        f"{S}call:cd{{folder:<escape>a<escape>}}{E}{S}call:cd{{folder:b}}{E}",
        [("cd", {"folder": "a"})],
        None,
        ["parse:bad_arguments"],
    ),
    ('{"name": "cd", "arguments": {"folder": "d"}}', [("cd", {"folder": "d"})], None, []),
    (
        '[{"name": "pwd", "arguments": {}}, {"name": "ls", "arguments": {"a": true}}]',
        [("pwd", {}), ("ls", {"a": True})],
        None,
        [],
    ),
    ('{"name": "cd", "arguments": "{\\"folder\\": \\"d\\"}"}', [("cd", {"folder": "d"})], None, []),
    ('{"name": "cd", "arguments": {"folder": ', [], None, ["parse:bad_json"]),
    ('{"name": "cd"}', [], None, ["parse:bad_arguments"]),
    ('{"name": "cd", "arguments": [1]}', [], None, ["parse:bad_arguments"]),
    ('{"arguments": {}}', [], None, ["parse:bad_arguments"]),
    ("[1, 2]", [], None, ["parse:bad_arguments", "parse:bad_arguments"]),
    ("[]", [], None, ["parse:no_call"]),
]

Q_OPEN, Q_CLOSE = "<tool_call>\n", "\n</tool_call>"
QWEN_OUTPUTS: list[tuple[str, list[tuple[str, dict[str, Any]]], str | None, list[str]]] = [
    (
        f'{Q_OPEN}{{"name": "tail", "arguments": {{"file_name": "a", "lines": 15}}}}{Q_CLOSE}',
        [("tail", {"file_name": "a", "lines": 15})],
        None,
        [],
    ),
    (f'{Q_OPEN}{{"name":"ls","arguments":{{"a":true}}}}{Q_CLOSE}', [("ls", {"a": True})], None, []),
    (
        f'{Q_OPEN}{{"name": "cd", "arguments": {{"folder": "5"}}}}{Q_CLOSE}',
        [("cd", {"folder": "5"})],
        None,
        [],
    ),
    (
        f'{Q_OPEN}{{"name": "pwd", "arguments": {{}}}}{Q_CLOSE}\n{Q_OPEN}{{"name": "ls", "arguments": {{}}}}{Q_CLOSE}',
        [("pwd", {}), ("ls", {})],
        None,
        [],
    ),
    (
        f'I will check.\n{Q_OPEN}{{"name": "pwd", "arguments": {{}}}}{Q_CLOSE}',
        [("pwd", {})],
        "I will check.\n",
        [],
    ),
    (
        f'<think>\nthe user wants pwd\n</think>\n\n{Q_OPEN}{{"name": "pwd", "arguments": {{}}}}{Q_CLOSE}',
        [("pwd", {})],
        None,
        [],
    ),
    (f'{Q_OPEN}{{"name": "pwd", "arguments": {{}}}}{Q_CLOSE}<|im_end|>', [("pwd", {})], None, []),
    (
        f'{Q_OPEN}{{"name": "echo", "arguments": {{"content": "a</tool_call>b"}}}}{Q_CLOSE}',
        [("echo", {"content": "a</tool_call>b"})],
        None,
        [],
    ),
    (
        f'{Q_OPEN}{{"name": "cd", "arguments": "{{\\"folder\\": \\"d\\"}}"}}{Q_CLOSE}',
        [("cd", {"folder": "d"})],
        None,
        [],
    ),
    ("Nothing to do.", [], "Nothing to do.", ["parse:no_call"]),
    (f'{Q_OPEN}{{"name": "format_disk", "arguments": {{}}}}{Q_CLOSE}', [], None, ["parse:unknown_tool"]),
    (f"{Q_OPEN}{{'name': 'cd'}}{Q_CLOSE}", [], None, ["parse:bad_json"]),
    (f'{Q_OPEN}{{"name": "cd", "arguments": {{"folder": "d"}}}}}}{Q_CLOSE}', [], None, ["parse:bad_json"]),
    (f"{Q_OPEN}[1, 2]{Q_CLOSE}", [], None, ["parse:bad_arguments"]),
    (f"{Q_OPEN}42{Q_CLOSE}", [], None, ["parse:bad_arguments"]),
    (f'{Q_OPEN}{{"name": "cd", "arguments": 7}}{Q_CLOSE}', [], None, ["parse:bad_arguments"]),
    (f'{Q_OPEN}{{"name": "cd", "arguments": "folder=d"}}{Q_CLOSE}', [], None, ["parse:bad_arguments"]),
    (f'{Q_OPEN}{{"name": "cd", "arguments": {{"folder": "d"}}}}', [], None, ["parse:unterminated_call"]),
    (f'{Q_OPEN}{{"name": "cd", "arguments": {{"fol', [], None, ["parse:unterminated_call"]),
    (
        f'{Q_OPEN}{{"name": "pwd", "arguments": {{}}}}{Q_CLOSE}{Q_OPEN}{{"name": "cd"}}{Q_CLOSE}',
        [("pwd", {})],
        None,
        ["parse:bad_arguments"],
    ),
    ('{"name": "cd", "arguments": {"folder": "d"}}', [("cd", {"folder": "d"})], None, []),
    ('[{"name": "pwd", "arguments": {}}]', [("pwd", {})], None, []),
    ('{"name": "cd", "arguments": {"folder": "d"}', [], None, ["parse:bad_json"]),
    # a JSON string is a plain answer (json_schema with allow_text_answer): its text is the content
    ('"just a string"', [], "just a string", ["parse:no_call"]),
]

GARBAGE = [
    "",
    " ",
    "\x00\x01",
    "{",
    "[",
    "}{][",
    "<escape>",
    "<start_function_call>",
    "<start_function_call>call:",
    "<start_function_call>call:{",
    "<start_function_call>call:x{:}",
    "<start_function_call>call:x{a:}<end_function_call>",
    "<start_function_call>call:x{a:[}<end_function_call>",
    "<start_function_call>call:x{a:{b:<escape>}}}<end_function_call>",
    "<start_function_call>call:x{a:1,}<end_function_call>",
    "<start_function_call>call:x{,}<end_function_call>",
    "<tool_call>",
    "<tool_call></tool_call>",
    "<tool_call>\n{\n</tool_call>",
    "<tool_call>null</tool_call>",
    "<tool_call>{}</tool_call>",
    '<tool_call>{"name": null, "arguments": null}</tool_call>',
    "<think>unfinished",
    "null",
    "1e999",
    '{"name": ["cd"], "arguments": {}}',
    '[{"name": "cd", "arguments": {}}, 3, null]',
    "\ud7ff\ue000\uffff",
    "[" * 100_000,
    "<tool_call>" + "[" * 100_000,
    "<start_function_call>call:cd{folder:" + "[" * 100_000,
    '{"name": "cd", "arguments": "' + "[" * 100_000 + '"}',
]


def check_parsed(family: str, output: str, calls: list[Any], content: str | None, kinds: list[str]) -> None:
    parsed = get_adapter(family).parse_response(output, [], shellper_tools() if family == "qwen" else [])
    got = [(c.name, c.arguments) for c in parsed.tool_calls]
    assert len(got) == len(calls) and all(
        g[0] == w[0] and same(g[1], w[1]) for g, w in zip(got, calls, strict=True)
    ), f"{output!r}: got {got}"
    assert [e.kind for e in parsed.errors] == kinds, f"{output!r}: {parsed.errors}"
    assert parsed.content == content, f"{output!r}: content {parsed.content!r}"
    assert all(e.message for e in parsed.errors)


@pytest.mark.parametrize("case", FG_OUTPUTS, ids=lambda c: repr(c[0][:60]))
def test_function_gemma_output(case: Any) -> None:
    output, calls, content, kinds = case
    if any(name == "format_disk" for name, _ in calls) or "format_disk" in output:
        parsed = get_adapter("function_gemma").parse_response(output, [], shellper_tools())
        assert [e.kind for e in parsed.errors] == kinds and parsed.tool_calls == ()
        return
    check_parsed("function_gemma", output, calls, content, kinds)


@pytest.mark.parametrize("case", QWEN_OUTPUTS, ids=lambda c: repr(c[0][:60]))
def test_qwen_output(case: Any) -> None:
    check_parsed("qwen", *case)


@pytest.mark.parametrize("text", GARBAGE, ids=repr)
@pytest.mark.parametrize("family", FAMILIES)
def test_parser_never_raises_and_never_returns_an_empty_silent_answer(family: str, text: str) -> None:
    parsed = get_adapter(family).parse_response(text, [], shellper_tools())
    assert parsed.tool_calls or parsed.errors
    for call in parsed.tool_calls:
        assert isinstance(call.arguments, dict)


@pytest.mark.parametrize("call", VALID_CALLS, ids=lambda c: f"{c[0]}{sorted(c[1])}")
@pytest.mark.parametrize("strategy", ["none", *CONSTRAINED])
@pytest.mark.parametrize("family", FAMILIES)
def test_parse_of_render_is_the_call(family: str, strategy: str, call: Any) -> None:
    check_round_trip(family, strategy, calls_of(call))


@pytest.mark.parametrize("value", TRICKY_STRINGS)
@pytest.mark.parametrize("strategy", ["none", *CONSTRAINED])
@pytest.mark.parametrize("family", FAMILIES)
def test_tricky_strings_round_trip(family: str, strategy: str, value: str) -> None:
    check_round_trip(family, strategy, calls_of(("echo", {"content": value, "file_name": value})))


@pytest.mark.parametrize("strategy", ["none", *CONSTRAINED])
@pytest.mark.parametrize("family", FAMILIES)
def test_parallel_calls_round_trip_in_order(family: str, strategy: str) -> None:
    pairs = [("cd", {"folder": "a"}), ("tail", {"file_name": "b", "lines": 2}), ("cd", {"folder": "c"})]
    check_round_trip(family, strategy, calls_of(*pairs), parallel=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_server_parsed_calls_are_used_as_they_are(family: str) -> None:
    api = [ToolCall.create("cd", {"folder": "x"}), ToolCall.create("nope", {})]
    parsed = get_adapter(family).parse_response("ignored <tool_call>", api, shellper_tools())
    assert [c.name for c in parsed.tool_calls] == ["cd"]
    assert parsed.tool_calls[0] is api[0]
    assert [e.kind for e in parsed.errors] == ["parse:unknown_tool"]
    assert parsed.content == "ignored <tool_call>"


@pytest.mark.parametrize("family", FAMILIES)
def test_without_tools_any_name_is_read(family: str) -> None:
    adapter = get_adapter(family)
    text = adapter.render_output(
        calls_of(("anything", {"k": 1})), __import__("familycases").constraint("none")
    )
    parsed = adapter.parse_response(text, [], [])
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("anything", {"k": 1})]


def test_function_gemma_string_holding_escape_cannot_be_rendered() -> None:
    from harness.agents.constraint import ConstraintError

    with pytest.raises(ConstraintError, match="escape"):
        get_adapter("function_gemma").render_output(
            calls_of(("cd", {"folder": "a<escape>b"})), __import__("familycases").constraint("ebnf")
        )
