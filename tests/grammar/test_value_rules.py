"""Value rules of the harness's own grammars, text by text through the real xgrammar: bounded numbers
(exponents and exclusive bounds as the harness reads numbers back), in both families' syntaxes."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from harness.grammar.formats._ebnf import EbnfBuilder
from harness.grammar.formats._syntax import FG_SYNTAX, JSON_SYNTAX

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

SYNTAXES = {"qwen": JSON_SYNTAX, "function_gemma": FG_SYNTAX}


def accepts(syntax: Any, schema: Any, text: str) -> bool:
    builder = EbnfBuilder(syntax)
    builder.root = schema
    grammar = xgr.Grammar.from_ebnf(builder.render(builder.value(schema, "v")))
    return bool(_is_grammar_accept_string(grammar, text))


GT0 = {"type": "number", "exclusiveMinimum": 0}
OPEN01 = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
GE0 = {"type": "number", "minimum": 0}
LAT = {"type": "number", "minimum": -90, "maximum": 90}
LT0 = {"type": "number", "exclusiveMaximum": 0}
MICRO = {"type": "number", "minimum": 1e-6, "maximum": 1e6}
DRAFT4 = {"type": "number", "minimum": 1, "exclusiveMinimum": True}
INT_GT = {"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 3}

NUMBERS: list[tuple[dict[str, Any], str, bool]] = [
    # (schema, text, accepted): what the validator says of the value the text reads back as
    (GT0, "5e-324", True), (GT0, "1e-300", True), (GT0, "1e-05", True), (GT0, "1.5e+16", True),
    (GT0, "0.0001", True), (GT0, "7", True), (GT0, "1E3", True),
    (GT0, "0", False), (GT0, "-0.0", False), (GT0, "0.0", False), (GT0, "0e5", False),
    (GT0, "1e-400", False), (GT0, "2e-324", False), (GT0, "-5e-324", False),
    (OPEN01, "0.9999999999999999", True), (OPEN01, "5e-324", True), (OPEN01, "9.9e-1", True),
    (OPEN01, "1", False), (OPEN01, "1.0", False), (OPEN01, "0.99999999999999995", False), (OPEN01, "1e0", False),
    (GE0, "0", True), (GE0, "-0.0", True), (GE0, "-0", True), (GE0, "1e-400", True), (GE0, "0e-3", True),
    (GE0, "-1e-300", False), (GE0, "-5e-324", False),
    (LAT, "90", True), (LAT, "9e1", True), (LAT, "-90.0", True), (LAT, "-9.0e+01", True), (LAT, "1e-300", True),
    (LAT, "90.1", False), (LAT, "9.1e1", False), (LAT, "-90.5", False), (LAT, "1e2", False),
    (LT0, "-5e-324", True), (LT0, "-1e300", True), (LT0, "-0.0", False), (LT0, "0", False), (LT0, "-1e-400", False),
    (MICRO, "1e-06", True), (MICRO, "1e-6", True), (MICRO, "0.000001", True), (MICRO, "1e+06", True),
    (MICRO, "9.99999e-07", False), (MICRO, "1.000001e6", False), (MICRO, "1000000.5", False),
    (DRAFT4, "1.5", True), (DRAFT4, "1", False), (DRAFT4, "1.0", False),
    (INT_GT, "1", True), (INT_GT, "2", True), (INT_GT, "0", False), (INT_GT, "3", False),
]


@pytest.mark.parametrize("family", SYNTAXES)
@pytest.mark.parametrize(("schema", "text", "expected"), NUMBERS, ids=lambda v: json.dumps(v) if isinstance(v, dict) else repr(v))
def test_bounded_numbers_accept_exactly_what_reads_back_valid(family: str, schema: dict[str, Any], text: str,
                                                             expected: bool) -> None:
    assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)) is expected or schema is DRAFT4
    assert accepts(SYNTAXES[family], schema, text) is expected


def string_text(family: str, value: str) -> str:
    return f"<escape>{value}<escape>" if family == "function_gemma" else json.dumps(value, ensure_ascii=False)


CONSTR = {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"}
ANY_URL = {"type": "string", "format": "uri", "minLength": 1}
EMAIL8 = {"type": "string", "format": "email", "maxLength": 8}
UUID_PATTERN = {"type": "string", "format": "uuid", "pattern": "^[0-9a-f-]+$"}
DATE_LONG = {"type": "string", "format": "date", "minLength": 10, "maxLength": 10}
IPV4_SHORT = {"type": "string", "format": "ipv4", "maxLength": 9}
SEARCHED = {"type": "string", "pattern": "ab", "maxLength": 4}
DT_PATTERN = {"type": "string", "format": "date-time", "pattern": "Z$", "minLength": 20}

STRINGS: list[tuple[dict[str, Any], str, bool]] = [
    # (schema, string, accepted): format, pattern and lengths together, as the validator judges them
    (CONSTR, "ab", True), (CONSTR, "abcdefgh", True), (CONSTR, "a", False), (CONSTR, "aaaaaaaazz", False),
    (CONSTR, "ab1", False), (CONSTR, "abc\n", True), (CONSTR, "abcdefgh\n", False),
    (ANY_URL, "https://example.com/a", True), (ANY_URL, "no scheme", False),
    (EMAIL8, "a@b.c", True), (EMAIL8, "ab@cd.ef", True), (EMAIL8, "abc@de.fg", False), (EMAIL8, "abcdefgh", False),
    (UUID_PATTERN, "123e4567-e89b-12d3-a456-426614174000", True),
    (UUID_PATTERN, "123E4567-E89B-12D3-A456-426614174000", False), (UUID_PATTERN, "123e4567", False),
    (DATE_LONG, "2024-02-29", True), (DATE_LONG, "2024-02-29\n", False), (DATE_LONG, "2023-02-29", False),
    (IPV4_SHORT, "10.0.0.1", True), (IPV4_SHORT, "192.168.0.1", False), (IPV4_SHORT, "1.2.3", False),
    (SEARCHED, "ab", True), (SEARCHED, "xaby", True), (SEARCHED, "xxaby", False), (SEARCHED, "ba", False),
    (DT_PATTERN, "2024-01-01T00:00:00Z", True), (DT_PATTERN, "2024-01-01T00:00:00+01:00", False),
]


@pytest.mark.parametrize("family", SYNTAXES)
@pytest.mark.parametrize(("schema", "value", "expected"), STRINGS, ids=lambda v: json.dumps(v) if isinstance(v, dict) else repr(v))
def test_format_pattern_and_lengths_are_enforced_together(family: str, schema: dict[str, Any], value: str,
                                                          expected: bool) -> None:
    check = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert check.is_valid(value) is expected
    assert accepts(SYNTAXES[family], schema, string_text(family, value)) is expected


TAG = {"type": "string", "pattern": "^<[a-z]+>$"}
TAG8 = {"type": "string", "pattern": "^<[a-z]+>$", "maxLength": 8}
HOLDS_LT = {"type": "string", "pattern": "a<"}

FG_DELIMITER: list[tuple[dict[str, Any], str, bool]] = [
    # (schema, string, FunctionGemma's grammar accepts it): a pattern that names `<` alone lets the string
    # hold it, never as the `<escape>` that would end the string (the one valid string it cannot write)
    (TAG, "<b>", True), (TAG, "<escap>", True), (TAG, "<escapes>", True), (TAG, "<escape>", False),
    (TAG8, "<esc>", True), (TAG8, "<escape>", False), (TAG8, "<escapes>", False),
    (HOLDS_LT, "a<", True), (HOLDS_LT, "xa<b", True), (HOLDS_LT, "a<escape>", False), (HOLDS_LT, "a<<escape", True),
]


@pytest.mark.parametrize(("schema", "value", "expected"), FG_DELIMITER, ids=lambda v: json.dumps(v) if isinstance(v, dict) else repr(v))
def test_a_pattern_naming_lt_never_lets_function_gemma_write_its_delimiter(schema: dict[str, Any], value: str,
                                                                            expected: bool) -> None:
    assert jsonschema.Draft202012Validator(schema).is_valid(value) is (expected or "<escape>" in value)
    assert accepts(FG_SYNTAX, schema, string_text("function_gemma", value)) is expected


def test_no_format_regex_names_lt() -> None:
    """Only a pattern is asked whether it names ``<`` (``_expressions``): a format's regex that named it
    would let FunctionGemma's grammar write ``<escape>`` inside the string."""
    from harness.grammar.schema._strings import FORMAT_REGEXES, _names_lt

    assert _names_lt("^<[a-z]+>$") and not _names_lt("^[a-z]+$")
    assert [name for name, regex in FORMAT_REGEXES.items() if _names_lt(regex)] == []
