"""Every constraint of both families, compiled with the real tokenizers and walked token by token
(mask filled at every step, gold token checked, termination required): valid SHELLper calls are
accepted, invalid ones rejected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from familycases import (
    CONSTRAINED,
    FAMILIES,
    TRICKY_STRINGS,
    VALID_CALLS,
    calls_of,
    constraint,
    walk,
)

from harness.grammar.families import get_adapter

# (what is wrong, tool, arguments): schema violations every strategy must reject.
INVALID_CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("unknown tool", "rmrf", {"file_name": "x"}),
    ("unknown tool, prefix of a real one", "c", {"folder": "x"}),
    ("unknown argument", "cat", {"file_name": "a", "force": True}),
    ("argument of another tool", "pwd", {"folder": "x"}),
    ("missing required argument", "cp", {"source": "a.txt"}),
    ("all required arguments missing", "grep", {}),
    ("string argument given a number", "cd", {"folder": 5}),
    ("string argument given a boolean", "cat", {"file_name": True}),
    ("string argument given null", "cat", {"file_name": None}),
    ("integer argument given a string", "tail", {"file_name": "x", "lines": "15"}),
    ("integer argument given a float", "tail", {"file_name": "x", "lines": 1.5}),
    ("boolean argument given a string", "ls", {"a": "true"}),
    ("enum argument outside the enum", "wc", {"file_name": "x", "mode": "lines"}),
]

# (what is wrong, valid call, how the text is corrupted): malformed output in any strategy.
MALFORMED: list[tuple[str, tuple[str, dict[str, Any]], Callable[[str], str]]] = [
    ("number with a letter", ("tail", {"file_name": "x", "lines": 15}), lambda t: t.replace("15", "15a")),
    (
        "number with a leading zero",
        ("tail", {"file_name": "x", "lines": 15}),
        lambda t: t.replace("15", "015"),
    ),
    ("number with two points", ("tail", {"file_name": "x", "lines": 15}), lambda t: t.replace("15", "1.5.")),
    ("boolean misspelt", ("ls", {"a": True}), lambda t: t.replace("true", "True")),
    ("output cut short", ("cd", {"folder": "docs"}), lambda t: t[:-3]),
    ("text after the call", ("cd", {"folder": "docs"}), lambda t: t + " done"),
    ("text before the call", ("cd", {"folder": "docs"}), lambda t: "Sure! " + t),
]

# Native-syntax corruptions, per family (the JSON strategy has its own grammar).
NATIVE_INVALID: dict[str, list[tuple[str, str]]] = {
    "function_gemma": [
        (
            "whitespace after a comma",
            "<start_function_call>call:cp{destination:<escape>b<escape>, source:<escape>a<escape>}<end_function_call>",
        ),
        (
            "schema order instead of canonical order",
            "<start_function_call>call:cp{source:<escape>a<escape>,destination:<escape>b<escape>}<end_function_call>",
        ),
        (
            "argument given twice",
            "<start_function_call>call:cd{folder:<escape>a<escape>,folder:<escape>b<escape>}<end_function_call>",
        ),
        ("bare string value", "<start_function_call>call:cd{folder:docs}<end_function_call>"),
        ("JSON quotes for a string", '<start_function_call>call:cd{folder:"docs"}<end_function_call>'),
        (
            "quoted key",
            "<start_function_call>call:cd{<escape>folder<escape>:<escape>d<escape>}<end_function_call>",
        ),
        ("string not closed", "<start_function_call>call:cd{folder:<escape>docs}<end_function_call>"),
        ("missing call: prefix", "<start_function_call>cd{folder:<escape>docs<escape>}<end_function_call>"),
        ("no argument braces", "<start_function_call>call:pwd<end_function_call>"),
        ("two calls without parallel calls", "<start_function_call>call:pwd{}<end_function_call>" * 2),
    ],
    "qwen": [
        (
            "whitespace beyond the bound",
            '<tool_call>\n{"name": "ls", "arguments": {"a":    true}}\n</tool_call>',
        ),
        (
            "schema order instead of canonical order",
            '<tool_call>\n{"name": "cp", "arguments": {"source": "a", "destination": "b"}}\n</tool_call>',
        ),
        (
            "argument given twice",
            '<tool_call>\n{"name": "cd", "arguments": {"folder": "a", "folder": "b"}}\n</tool_call>',
        ),
        ("single quotes", "<tool_call>\n{'name': 'cd', 'arguments': {'folder': 'd'}}\n</tool_call>"),
        (
            "raw newline in a string",
            '<tool_call>\n{"name": "cd", "arguments": {"folder": "a\nb"}}\n</tool_call>',
        ),
        (
            "bad escape in a string",
            '<tool_call>\n{"name": "cd", "arguments": {"folder": "a\\qb"}}\n</tool_call>',
        ),
        (
            "arguments as a JSON string",
            '<tool_call>\n{"name": "cd", "arguments": "{\\"folder\\": \\"d\\"}"}\n</tool_call>',
        ),
        ("frame without its newline", '<tool_call>{"name": "cd", "arguments": {"folder": "d"}}</tool_call>'),
        (
            "two calls without parallel calls",
            '<tool_call>\n{"name": "pwd", "arguments": {}}\n</tool_call>\n' * 2,
        ),
    ],
}


def check_accepted(family: str, strategy: str, text: str, parallel: bool = False) -> None:
    result = walk(family, strategy, text, parallel)
    assert result.accepted, f"{family}/{strategy} rejected {text!r}: {result.reason}"


def check_rejected(family: str, strategy: str, text: str, parallel: bool = False) -> None:
    result = walk(family, strategy, text, parallel)
    assert not result.accepted, f"{family}/{strategy} accepted {text!r}"


def render(
    family: str, strategy: str, pairs: list[tuple[str, dict[str, Any]]], parallel: bool = False
) -> str:
    return get_adapter(family).render_output(calls_of(*pairs), constraint(strategy, parallel))


@pytest.mark.parametrize("call", VALID_CALLS, ids=lambda c: f"{c[0]}{sorted(c[1])}")
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_valid_call_is_accepted(family: str, strategy: str, call: tuple[str, dict[str, Any]]) -> None:
    check_accepted(family, strategy, render(family, strategy, [call]))


@pytest.mark.parametrize("value", TRICKY_STRINGS)
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_any_json_string_is_accepted(family: str, strategy: str, value: str) -> None:
    check_accepted(
        family, strategy, render(family, strategy, [("echo", {"content": value, "file_name": value})])
    )


@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_parallel_calls_are_accepted_only_when_allowed(family: str, strategy: str) -> None:
    pairs = [("cd", {"folder": "a"}), ("tail", {"file_name": "b", "lines": 2}), ("pwd", {})]
    check_accepted(family, strategy, render(family, strategy, pairs, parallel=True), parallel=True)
    check_accepted(family, strategy, render(family, strategy, pairs[:1], parallel=True), parallel=True)
    check_rejected(family, strategy, render(family, strategy, pairs, parallel=True))


@pytest.mark.parametrize("case", INVALID_CALLS, ids=lambda c: c[0])
@pytest.mark.parametrize("parallel", [False, True], ids=["single", "parallel"])
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_schema_violation_is_rejected(
    family: str, strategy: str, parallel: bool, case: tuple[str, str, dict[str, Any]]
) -> None:
    _, name, args = case
    check_rejected(family, strategy, render(family, strategy, [(name, args)], parallel), parallel)


@pytest.mark.parametrize("case", MALFORMED, ids=lambda c: c[0])
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_malformed_output_is_rejected(family: str, strategy: str, case: Any) -> None:
    _, call, corrupt = case
    text = render(family, strategy, [call])
    check_accepted(family, strategy, text)
    bad = corrupt(text)
    assert bad != text
    check_rejected(family, strategy, bad)


@pytest.mark.parametrize("strategy", ["ebnf", "structural_tag"])
@pytest.mark.parametrize(
    "family_case",
    [(fam, case) for fam, cases in NATIVE_INVALID.items() for case in cases],
    ids=lambda fc: f"{fc[0]}-{fc[1][0]}",
)
def test_native_corruption_is_rejected(strategy: str, family_case: tuple[str, tuple[str, str]]) -> None:
    family, (_, text) = family_case
    check_rejected(family, strategy, text)


@pytest.mark.parametrize("family", FAMILIES)
def test_canonical_order_is_accepted_where_schema_order_is_not(family: str) -> None:
    """cp declares (source, destination); every strategy wants the canonical (destination, source)."""
    for strategy in CONSTRAINED:
        text = render(family, strategy, [("cp", {"source": "a", "destination": "b"})])
        assert text.index("destination") < text.index("source")
        check_accepted(family, strategy, text)


def test_function_gemma_control_tokens_are_single_tokens_in_the_walk(fg_tokenizer: Any) -> None:
    text = render("function_gemma", "ebnf", [("cd", {"folder": "x"})])
    result = walk("function_gemma", "ebnf", text)
    assert result.accepted
    ids = result.token_ids
    for token in ("<start_function_call>", "<end_function_call>", "<escape>"):
        assert fg_tokenizer.token_id(token) in ids


def test_function_gemma_control_text_inside_a_string_is_a_string() -> None:
    """A string may hold another control token's text; the parser tracks <escape> delimiters."""
    pairs = [("echo", {"content": "<end_function_call><start_function_call>call:rm{}"})]
    text = render("function_gemma", "ebnf", pairs)
    check_accepted("function_gemma", "ebnf", text)
    parsed = get_adapter("function_gemma").parse_response(text, [], [])
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == pairs


def test_function_gemma_escape_cannot_appear_inside_a_string() -> None:
    bad = "<start_function_call>call:cd{folder:<escape>a<escape>b<escape>}<end_function_call>"
    for strategy in ("ebnf", "structural_tag"):
        check_rejected("function_gemma", strategy, bad)
