"""The shared schema -> EBNF builder: escaping, rule names, schema keywords, canonical order, and the
portable spelling of FunctionGemma strings (string-level checks, no tokenizer needed)."""

from __future__ import annotations

from typing import Any

import pytest
from familycases import TRICKY_STRINGS

from harness.agents import ConstraintError, ToolCall, ToolSchema
from harness.grammar.families import function_gemma, qwen
from harness.grammar.formats import build_ebnf, strict_schema
from harness.grammar.formats._ebnf import EbnfBuilder
from harness.grammar.formats._syntax import FG_SYNTAX, JSON_SYNTAX, ebnf_literal, rule_name
from harness.grammar.formats._values import canonical_keys

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402


def accepts(ebnf: str, text: str) -> bool:
    return bool(_is_grammar_accept_string(xgr.Grammar.from_ebnf(ebnf), text))


def value_grammar(syntax: Any, schema: Any) -> str:
    builder = EbnfBuilder(syntax)
    builder.root = schema
    return builder.render(builder.value(schema, "v"))


LITERALS = ["plain", 'q"uote', "back\\slash", "new\nline\r\t", "\x01\x7f", "é 日本 🎉", "", "<escape>"]


@pytest.mark.parametrize("text", LITERALS, ids=repr)
def test_ebnf_literal_matches_exactly_its_text(text: str) -> None:
    assert accepts(f"root ::= {ebnf_literal(text)}", text)
    assert not accepts(f"root ::= {ebnf_literal(text)}", text + "x")


@pytest.mark.parametrize("parts", [("t0", "my.tool"), ("9lives",), ("a b", 'c"d\\e'), ("", "é")], ids=repr)
def test_rule_names_are_valid(parts: tuple[str, ...]) -> None:
    name = rule_name(*parts)
    assert accepts(f'root ::= {name}\n{name} ::= "x"', "x")


def test_canonical_order_is_case_insensitive_then_case_sensitive() -> None:
    assert canonical_keys(["b", "A", "a", "_z", "B1"]) == ["_z", "A", "a", "b", "B1"]


# (schema, accepted JSON texts, rejected JSON texts)
JSON_VALUES: list[tuple[dict[str, Any], list[str], list[str]]] = [
    ({"type": "integer"}, ["0", "-7", "120"], ["01", "1.0", "+1", '"1"']),
    ({"type": "number"}, ["0", "-7.25", "1e-05", "2E+3"], [".5", "1.", "NaN"]),
    ({"type": ["string", "null"]}, ['"a"', "null"], ["1"]),
    ({"type": "integer", "nullable": True}, ["3", "null"], ['"3"']),
    ({"enum": ["a", 1, None, True]}, ['"a"', "1", "null", "true"], ['"b"', "false"]),
    ({"const": "x"}, ['"x"'], ['"y"']),
    ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, ["1", "false"], ['"1"']),
    ({"type": "array", "items": {"type": "integer"}}, ["[]", "[1, 2]", "[ 1,2 ]"], ['["1"]', "[1,]"]),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1}, ["[1]"], ["[]"]),
    ({"type": "object"}, ["{}", '{"k": [1, {"z": null}]}'], ['{"k"}']),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, ['{"a": 1, "b": 2}'], ['{"a": "1"}']),
    (
        {
            "type": "object",
            "properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
            "required": ["b"],
        },
        ['{"b": 1}', '{"a": "x", "b": 1}', '{ "a" : "x" , "b" : 1 }'],
        ['{"b": 1, "a": "x"}', '{"a": "x"}', '{"b": 1, "c": 2}', '{"b": 1, "b": 2}', '{"b":   1}'],
    ),
    ({"type": "object", "properties": {}}, ["{}", '{"a": 1}'], ['{"a"}']),
    ({}, ['"s"', "1", "[true]", '{"a": {}}'], ["nul"]),
    # objects the schema opens, and counted members
    ({"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": True},
     ['{"b": 1}', '{"a": [1], "b": 1, "c": null}', "{}"], ['{"b": "x"}']),
    ({"type": "object", "additionalProperties": {"type": "integer"}, "properties": {"k": {"type": "string"}}},
     ['{"k": "s", "z": 2}', '{"a": 1}'], ['{"a": "1"}', '{"k": 1}']),
    ({"type": "object", "minProperties": 1}, ['{"a": 1}', '{"a": 1, "b": 2}'], ["{}"]),
    ({"type": "object", "maxProperties": 1, "properties": {"a": {}, "b": {}}, "additionalProperties": False},
     ["{}", '{"b": 1}'], ['{"a": 1, "b": 2}']),
    ({"type": "object", "minProperties": 2, "properties": {"a": {}, "b": {}, "c": {}}},
     ['{"a": 1, "c": 2}'], ['{"b": 1}', "{}"]),
    # arrays
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
     ["[]", "[1]", '[1, "a"]'], ['[1, "a", 2]', '["a"]']),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}, "minItems": 2},
     ["[1, true]", "[1, true, false]"], ["[1]", "[1, 2]"]),
    # strings: format, pattern, lengths (an escape is one character)
    ({"type": "string", "format": "date"}, ['"2024-02-29"', '"2023-12-31"'],
     ['"2023-02-29"', '"2023-13-01"', '"0000-01-01"', '"2024-1-01"']),
    ({"type": "string", "format": "date-time"}, ['"2024-01-01T23:59:59.5+01:00"', '"2024-01-01t00:00:00z"'],
     ['"2024-01-01T23:59:60Z"', '"2024-01-01T24:00:00Z"']),
    ({"type": "string", "format": "email"}, ['"a@b"', '"weird name@x y"'], ['"ab"']),
    ({"type": "string", "format": "ipv4"}, ['"192.168.0.1"', '"0.0.0.0"'], ['"192.168.00.1"', '"256.1.1.1"']),
    ({"type": "string", "format": "ipv6"}, ['"::1"', '"1:2:3:4:5:6:7:8"', '"::ffff:1.2.3.4"', '"1::"'],
     ['"1:2:3:4:5:6:7:8:9"', '"1:::2"', '"12345::"']),
    ({"type": "string", "format": "uuid"}, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567e89b12d3a456426614174000"']),
    ({"type": "string", "format": "hostname"}, ['"example.com"', '"a-b.c"'], ['"-a.com"', '"a..b"']),
    ({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}, ['"ABC-12"', '"ABC-12\\n"'], ['"ABC-1"', '"xABC-12"']),
    ({"type": "string", "pattern": "b+"}, ['"b"', '"abba"'], ['"ac"']),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ['"ab"', '"a\\n"', '"\\u00e9\\"x"'], ['"a"', '"abcd"']),
    # numbers: exact bounds, fractions included; multipleOf
    ({"type": "number", "minimum": 0.5, "exclusiveMaximum": 30}, ["0.5", "0.50", "29.999", "1"],
     ["0.49", "30", "30.0", "-1", "0"]),
    ({"type": "number", "exclusiveMinimum": -1.25, "maximum": -0.5}, ["-1.2", "-0.5", "-1"], ["-1.25", "-0.4", "0"]),
    ({"type": "integer", "multipleOf": 5}, ["0", "-15", "1005"], ["7", "-3"]),
    ({"type": "integer", "multipleOf": 3, "minimum": 1, "maximum": 10}, ["3", "9"], ["0", "12", "4"]),
    # $ref, recursive
    ({"$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
     ["{}", '{"k": {"k": {}}}'], ['{"k": 1}']),
]


# FunctionGemma's raw string text: lengths count characters, and the text never holds <escape>
FG_VALUES: list[tuple[dict[str, Any], list[str], list[str]]] = [
    ({"type": "string", "maxLength": 4}, ["", "<", "a<b", "<esc"], ["abcde", "<escape>"]),
    ({"type": "string", "minLength": 2}, ["a<b", "x" * 40], ["<", "ab<escape>"]),
    ({"type": "string", "format": "date"}, ["2024-02-29"], ["2023-02-29"]),
]


@pytest.mark.parametrize("case", FG_VALUES, ids=lambda c: str(c[0])[:50])
def test_function_gemma_strings_follow_the_schema(case: Any) -> None:
    schema, good, bad = case
    grammar = value_grammar(FG_SYNTAX, schema)
    for text in good:
        assert accepts(grammar, f"<escape>{text}<escape>"), text
    for text in bad:
        assert not accepts(grammar, f"<escape>{text}<escape>"), text


@pytest.mark.parametrize("case", JSON_VALUES, ids=lambda c: str(c[0])[:50])
def test_json_values_follow_the_schema(case: Any) -> None:
    schema, good, bad = case
    grammar = value_grammar(JSON_SYNTAX, schema)
    for text in good:
        assert accepts(grammar, text), text
    for text in bad:
        assert not accepts(grammar, text), text


FG_VALUES: list[tuple[dict[str, Any], list[str], list[str]]] = [
    ({"type": "string"}, ["<escape>a}b<escape>", "<escape><escape>"], ["a", "<escape>a<escape>b<escape>"]),
    ({"type": "integer"}, ["15", "-2"], ["<escape>15<escape>"]),
    ({"type": "boolean"}, ["true", "false"], ["True", "<escape>true<escape>"]),
    (
        {"type": "array", "items": {"type": "string"}},
        ["[]", "[<escape>a<escape>,<escape>b<escape>]"],
        ["[a]", "[<escape>a<escape>, <escape>b<escape>]"],
    ),
    ({"type": "object"}, ["{}", "{k:1,z:{a:null}}"], ["{<escape>k<escape>:1}", "{k :1}"]),
    ({"enum": ["l", "w"]}, ["<escape>l<escape>"], ["l", "<escape>c<escape>"]),
]


@pytest.mark.parametrize("case", FG_VALUES, ids=lambda c: str(c[0])[:50])
def test_function_gemma_values_follow_the_schema(case: Any) -> None:
    schema, good, bad = case
    grammar = value_grammar(FG_SYNTAX, schema)
    for text in good:
        assert accepts(grammar, text), text
    for text in bad:
        assert not accepts(grammar, text), text


def test_portable_function_gemma_grammar_is_the_same_language() -> None:
    tools = [
        ToolSchema(
            "echo",
            "x",
            {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
        )
    ]
    fast = build_ebnf(function_gemma.FORMAT, tools, parallel=False)
    portable = build_ebnf(function_gemma.FORMAT, tools, parallel=False, portable=True)
    assert "TagDispatch" in fast and "TagDispatch" not in portable
    texts = [function_gemma._call_text(ToolCall.create("echo", {"content": s})) for s in TRICKY_STRINGS]
    texts += [t.replace("<escape>}", "<escape>x<escape>}") for t in texts]  # an <escape> inside the string
    for text in texts:
        assert accepts(fast, text) == accepts(portable, text), text


def test_strict_schema_closes_objects_and_orders_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "b": {"type": "object", "properties": {"y": {}, "x": {}}},
            "a": {"type": "integer", "nullable": True},
        },
    }
    strict = strict_schema(schema)
    assert list(strict["properties"]) == ["a", "b"]
    assert strict["additionalProperties"] is False
    assert strict["properties"]["b"]["additionalProperties"] is False
    assert list(strict["properties"]["b"]["properties"]) == ["x", "y"]
    assert strict["properties"]["a"]["type"] == ["integer", "null"]
    assert list(schema["properties"]) == ["b", "a"]  # the input is not touched


@pytest.mark.parametrize(
    "schema",
    [{"allOf": [{"type": "string"}, {"minLength": 1}]}, {"type": "date"}, {"enum": []}, {"$ref": "#/defs/x"}],
    ids=repr,
)
def test_unsupported_schemas_are_errors(schema: dict[str, Any]) -> None:
    with pytest.raises(ConstraintError):
        value_grammar(JSON_SYNTAX, schema)


def test_qwen_tool_names_are_json_escaped_in_the_frame() -> None:
    tool = ToolSchema('we"ird\\name', "x")
    text = qwen.ADAPTER.render_output([ToolCall.create(tool.name, {})], __import__("familycases").constraint("ebnf"))
    assert text.startswith('<tool_call>\n{"name": "we\\"ird\\\\name"')
    assert accepts(build_ebnf(qwen.FORMAT, [tool], parallel=False), text)
    assert [c.name for c in qwen.parse_response(text, [], [tool]).tool_calls] == [tool.name]
