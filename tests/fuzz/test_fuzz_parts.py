"""The parts of ``harness fuzz`` that need no grammar: drawing values, mutants, the oracle, outcomes,
what is kept (calls files, JUnit, baselines), reading tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agents import ToolCall, ToolSchema
from harness.files import InputFileError
from harness.fuzz.inputs import load_fuzz_tools
from harness.fuzz.keep import read_expected, write_calls_files, write_expected, write_junit
from harness.fuzz.mutants import escaping_mutant, judge, value_mutants
from harness.fuzz.outcomes import CellReport, Counterexample, FuzzReport, Outcome, compare, worst
from harness.fuzz.values import schema_problem, validator, values_for
from harness.fuzz.walker import call_prefix
from harness.grammar.families import get_adapter
from harness.grammar.formats import strict_schema
from harness.grammar.schema.keywords import KEYWORDS, TABLES, builder_of, enforces

pytestmark = pytest.mark.fuzz

KEYWORD_TOOLS = Path(__file__).parent / "data" / "keyword_tools.json"

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"d": {"type": "string", "format": "date"}, "n": {"type": "integer", "minimum": 3}},
     "required": ["d"]},
    {"type": "object", "properties": {"xs": {"type": "array", "minItems": 1, "items": {
        "type": "object", "properties": {"k": {"enum": ["a", "b"]}, "v": {"type": "number", "exclusiveMaximum": 2}},
        "required": ["k"]}}}, "required": ["xs"]},
    {"type": "object", "properties": {"v": {"oneOf": [{"type": "integer", "multipleOf": 5}, {"type": "string", "format": "email"}]},
                                      "c": {"const": "k"}}, "required": ["v", "c"]},
    {"type": "object", "properties": {"o": {"type": "object"}, "t": {"type": ["string", "null"], "maxLength": 3}}},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_drawn_values_satisfy_the_strict_schema(schema: dict[str, Any]) -> None:
    strict = strict_schema(schema)
    check = validator(strict)

    @settings(max_examples=2 * settings().max_examples, database=None, deadline=None)
    @given(values_for(strict))
    def drawn(value: Any) -> None:
        assert check.is_valid(value), value

    drawn()


BAD_SCHEMAS = [
    ({"type": "object", "properties": {"a": {"type": "strng"}}}, "properties/a/type"),
    ({"type": "object", "properties": {"a": {"minimum": "3"}}}, "properties/a/minimum"),
    ({"type": "object", "required": "a"}, "required"),
]


@pytest.mark.parametrize(("schema", "where"), BAD_SCHEMAS)
def test_schema_problem_names_the_place(schema: dict[str, Any], where: str) -> None:
    problem = schema_problem(schema)
    assert problem is not None and where in problem


def test_a_valid_schema_has_no_problem() -> None:
    assert all(schema_problem(s) is None for s in SCHEMAS)


TOOL = ToolSchema("book", "Book.", {"type": "object", "properties": {
    "room": {"type": "string", "enum": ["north", "south"]}, "people": {"type": "integer", "minimum": 1, "maximum": 9},
    "day": {"type": "string", "format": "date"}}, "required": ["room", "people"]})
CALL = ToolCall.create("book", {"room": "north", "people": 3, "day": "2024-01-31"})


@pytest.mark.parametrize("seed", range(24))
def test_value_mutants_are_invalid_and_name_their_keyword(seed: int) -> None:
    check = validator(strict_schema(TOOL.parameters))
    mutants = value_mutants([TOOL], CALL, check, seed, count=3)
    assert mutants
    for mutant in mutants:
        assert mutant.call is not None
        if mutant.keyword == "tool":
            assert mutant.call.name not in {"book"}
            continue
        assert not check.is_valid(mutant.call.arguments), mutant
        assert mutant.keyword in KEYWORDS, mutant


def test_mutants_cover_the_keywords_of_the_schema() -> None:
    check = validator(strict_schema(TOOL.parameters))
    seen = {m.keyword for seed in range(200) for m in value_mutants([TOOL], CALL, check, seed)}
    assert {"tool", "enum", "minimum", "maximum", "format", "type", "required", "additionalProperties"} <= seen


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_escaping_mutants_are_judged_invalid_or_dropped(family: str) -> None:
    from harness.agents import DecodingConstraint

    adapter = get_adapter(family)
    text = adapter.render_output([CALL], DecodingConstraint(strategy="ebnf"))
    checks = {"book": validator(strict_schema(TOOL.parameters))}
    invalid = 0
    for seed in range(30):
        mutant = escaping_mutant(family, "ebnf", text, seed)
        assert mutant is not None and mutant.text != text
        invalid += not judge(adapter, mutant.text or "", [TOOL], checks, parallel=False).valid
    assert invalid >= 20


JUDGED = [
    ("qwen", '<tool_call>\n{"name": "book", "arguments": {"people": 3, "room": "north"}}\n</tool_call>', True, None),
    ("qwen", '<tool_call>\n{"name": "book", "arguments": {"people": 30, "room": "north"}}\n</tool_call>', False, "maximum"),
    ("qwen", '<tool_call>\n{"name": "book", "arguments": {"people": 3, "room": "west"}}\n</tool_call>', False, "enum"),
    ("qwen", '<tool_call>\n{"name": "book", "arguments": {"day": "2024-02-30", "people": 3, "room": "north"}}\n</tool_call>',
     False, "format"),
    ("qwen", '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>', False, "parse:unknown_tool"),
    ("qwen", '<tool_call>\n{"name": "book", "arguments": {"people": 3, "room": "north"}', False, "parse:unterminated_call"),
    ("qwen", '<tool_call>\n{"name": "book", "arguments": {"people": 3, "room": "<think>x</think>"}}\n</tool_call>',
     False, "enum"),
    ("function_gemma", "<start_function_call>call:book{people:3,room:<escape>south<escape>}<end_function_call>", True, None),
    ("function_gemma", "<start_function_call>call:book{people:3}<end_function_call>", False, "required"),
    ("function_gemma", "<start_function_call>call:book{people:3,room:south}<end_function_call>", False, "parse:bad_arguments"),
]


@pytest.mark.parametrize(("family", "text", "valid", "keyword"), JUDGED)
def test_the_oracle_judges_texts(family: str, text: str, valid: bool, keyword: str | None) -> None:
    checks = {"book": validator(strict_schema(TOOL.parameters))}
    verdict = judge(get_adapter(family), text, [TOOL], checks, parallel=False)
    assert (verdict.valid, verdict.keyword) == (valid, keyword), verdict


def test_keyword_table_speaks_of_known_keywords_only() -> None:
    for table in TABLES.values():
        assert set(table) <= set(KEYWORDS)
    assert builder_of("qwen", "structural_tag") == "harness" and builder_of("function_gemma", "structural_tag") == "harness"
    assert builder_of("qwen", "json_schema") == "xgrammar"
    assert enforces("qwen", "ebnf", "enum") and enforces("qwen", "ebnf", "format")
    assert not enforces("qwen", "ebnf", "uniqueItems") and not enforces("qwen", "json_schema", "uniqueItems")


def test_call_prefix_is_the_text_before_the_arguments() -> None:
    assert call_prefix("<start_function_call>call:ls{}<end_function_call>", "{}") == "<start_function_call>call:ls"
    assert call_prefix('<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>', "{}") == (
        '<tool_call>\n{"name": "ls", "arguments": ')


def _report(*cells: CellReport) -> FuzzReport:
    return FuzzReport(tools_path="t.json", families=["qwen"], strategies=["ebnf"], examples=5, seed=0,
                      cells=list(cells), seconds=1.0)


FOUND = Counterexample(outcome=Outcome.validation_error, tool="book", family="qwen", strategy="ebnf",
                       expect="accepted", calls=[{"name": "book", "arguments": {"room": "south", "people": 1}}],
                       why="valid call rejected", shrunk=True)
FAILING_CELL = CellReport(tool="book", family="qwen", strategy="ebnf", outcome=Outcome.validation_error,
                          classes={"validation_error": 3, "not_enforced": 2}, not_enforced={"format": 2},
                          counterexamples=[FOUND])
PASSING_CELL = CellReport(tool="ls", family="qwen", strategy="ebnf", outcome=Outcome.passing)


def test_worst_class_is_the_most_severe() -> None:
    assert worst({Outcome.not_enforced, Outcome.build_error, Outcome.validation_error}) is Outcome.validation_error
    assert worst(set()) is Outcome.passing


def test_baseline_comparison_finds_worse_and_better(tmp_path: Path) -> None:
    report = _report(FAILING_CELL, PASSING_CELL)
    path = tmp_path / "expected.json"
    write_expected(report, path)
    assert read_expected(path) == {"book/qwen/ebnf": ["validation_error"], "ls/qwen/ebnf": []}
    assert compare(report, read_expected(path)) == ([], [])
    worse, better = compare(report, {"book/qwen/ebnf": ["round_trip_error"]})
    assert worse == ["book/qwen/ebnf: validation_error"] and better == ["book/qwen/ebnf: round_trip_error gone"]


# Baselines on disk, as earlier versions wrote them: a fuzz cell is one tool in one lane, so its key
# stays "cells" (the word lane names the family x strategy pair) and both shapes keep reading.
UPDATE_WRITES = '{\n "cells": {\n  "book/qwen/ebnf": [\n   "validation_error"\n  ],\n  "ls/qwen/ebnf": []\n }\n}\n'


@pytest.mark.parametrize("content", [UPDATE_WRITES, '{"book/qwen/ebnf": ["validation_error"], "ls/qwen/ebnf": []}'])
def test_an_old_baseline_reads_and_compares_as_written(tmp_path: Path, content: str) -> None:
    path = tmp_path / "expected.json"
    path.write_text(content)
    assert read_expected(path) == {"book/qwen/ebnf": ["validation_error"], "ls/qwen/ebnf": []}
    assert compare(_report(FAILING_CELL, PASSING_CELL), read_expected(path)) == ([], [])
    write_expected(_report(FAILING_CELL, PASSING_CELL), path)
    assert path.read_text() == UPDATE_WRITES  # --update writes today's bytes


@pytest.mark.parametrize("content", ['[1, 2]', '{"cells": {"a/b/c": ["nonsense"]}}', '{"cells": {"a/b/c": "x"}}'])
def test_a_bad_baseline_names_the_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "expected.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=r"expected\.json"):
        read_expected(path)


def test_counterexamples_become_calls_files_and_junit(tmp_path: Path) -> None:
    from junitparser import JUnitXml

    report = _report(FAILING_CELL, PASSING_CELL)
    files = write_calls_files(report, tmp_path / "ce")
    assert [f.name for f in files] == ["qwen-ebnf.jsonl"]
    line = json.loads(files[0].read_text().splitlines()[0])
    assert line["calls"] == FOUND.calls and line["expect"] == "accepted" and line["outcome"] == "validation_error"
    write_junit(report, tmp_path / "fuzz.xml")
    cases = [case for suite in JUnitXml.fromfile(str(tmp_path / "fuzz.xml")) for case in suite]
    assert [(c.name, c.is_passed) for c in cases] == [("book", False), ("ls", True)]


def test_tools_that_cannot_be_read_are_named_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    good = {"type": "function", "function": {"name": "ok", "parameters": {"type": "object", "properties": {}}}}
    bad = {"type": "function", "function": {"name": "bad", "parameters": {"type": "object", "properties": []}}}
    path.write_text(json.dumps([good, bad, {"nothing": 1}]))
    loaded = load_fuzz_tools(path)
    assert [t.name for t in loaded.tools] == ["ok"]
    assert [name for name, _ in loaded.problems] == ["bad", "tool 2"]
    assert all(str(path) in why for _, why in loaded.problems)


@pytest.mark.parametrize("name", ["missing.json", "empty.json", "dir"])
def test_a_path_without_tools_is_an_input_error(tmp_path: Path, name: str) -> None:
    (tmp_path / "empty.json").write_text("[]")
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputFileError, match=name):
        load_fuzz_tools(tmp_path / name)


def test_a_bundle_and_a_pym_folder_give_the_same_tools() -> None:
    root = Path(__file__).resolve().parents[2]
    from_bundle = load_fuzz_tools(root / "bundles" / "shellper")
    from_folder = load_fuzz_tools(root / "bundles" / "shellper" / "tools")
    assert [t.name for t in from_bundle.tools] == [t.name for t in from_folder.tools] and len(from_bundle.tools) == 18


def test_the_keyword_tools_file_reads() -> None:
    assert [t.name for t in load_fuzz_tools(KEYWORD_TOOLS).tools] == ["book_room", "ship_order", "set_value"]


@settings(max_examples=2 * settings().max_examples, database=None, deadline=None)
@given(st.sampled_from(SCHEMAS))
def test_values_for_never_raises_while_building(schema: dict[str, Any]) -> None:
    assert values_for(strict_schema(schema)) is not None


def test_the_documented_keyword_table_is_the_module_table() -> None:
    from harness.grammar.schema.keywords import markdown_table

    page = (Path(__file__).resolve().parents[2] / "docs" / "schemas.md").read_text(encoding="utf-8")
    assert markdown_table() in page


RANGES = [(3, 7), (0, 100), (-5, 5), (-100, -7), (10, None), (None, -3), (None, 12), (-12, None), (0, 0),
          (99, 101), (123, 4567), (-987, 65), (0, None), (None, 0), (500, 500), (7, 1000000)]


def _as_regex(expr: str) -> str:
    import re

    return re.sub(r'"([^"]*)"', lambda m: re.escape(m.group(1)), expr).replace(" ", "") + r"\Z"


@pytest.mark.parametrize(("low", "high"), RANGES)
def test_integer_ranges_hold_exactly_their_integers(low: int | None, high: int | None) -> None:
    """The EBNF of integer bounds (plain literals, classes and repetitions, so read here as a regex)."""
    import re

    from harness.grammar.schema import integer_range

    pattern = re.compile(_as_regex(integer_range(low, high)))
    for value in [*range(-1100, 1100), 10**6, 10**6 + 1, -(10**6), 12345678]:
        inside = (low is None or value >= low) and (high is None or value <= high)
        assert bool(pattern.match(str(value))) == inside, value
    assert not any(pattern.match(t) for t in ("-0", "007", "+1", ""))


@pytest.mark.parametrize("valid_first", [True, False])
def test_a_text_mutant_equal_to_a_valid_calls_text_is_judged_apart(valid_first: bool) -> None:
    """A large draw meets a text mutant whose text is a valid call's: the parser's answer and the oracle's
    verdict on that text are kept apart (one cache for both ended `harness fuzz` with exit 3)."""
    from harness.fuzz.cell import ToolCase, check_mutants, check_valid, render
    from harness.fuzz.mutants import Mutant
    from harness.fuzz.run import FuzzOptions, build_grammar

    tool = ToolSchema(name="echo", description="Echo.", parameters={
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    grammar = build_grammar("qwen", "ebnf", [tool], FuzzOptions(families=("qwen",), strategies=("ebnf",)))
    case = ToolCase(tool=tool, check=grammar.checks["echo"])
    value = {"text": "hi"}
    same = Mutant("the valid text itself", "escaping", text=render(grammar, [ToolCall.create("echo", value)]))
    for step in ([0, 1] if valid_first else [1, 0]):
        if step == 0:
            assert check_valid(grammar, case, value) is None
        else:
            assert check_mutants(grammar, case, value, 0, mutants=[same])[2] == []  # valid, so not a finding
