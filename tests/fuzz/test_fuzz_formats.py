"""``harness fuzz`` draws values for the string formats tools use (hypothesis-jsonschema drew ``uuid`` as
any text, all of it filtered out) and for recursive ``$ref`` schemas, to a bounded depth, instead of
refusing them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agents import ToolSchema
from harness.fuzz import FuzzOptions, Outcome, fuzz
from harness.fuzz.values import MAX_REF_DEPTH, inline_refs, validator, values_for

pytestmark = pytest.mark.fuzz

FORMATS = ["date-time", "date", "time", "uuid", "email", "uri", "ipv4", "ipv6", "hostname", "uri-reference"]


def one(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}, "required": ["x"]}


def draw(schema: dict[str, Any], count: int = 20) -> list[Any]:
    got: list[Any] = []

    @settings(max_examples=count, database=None)
    @given(values_for(schema))
    def collect(value: Any) -> None:
        got.append(value)

    collect()
    return got


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("extra", [{}, {"maxLength": 40}, {"minLength": 8}])
def test_formats_draw_valid_values(fmt: str, extra: dict[str, Any]) -> None:
    """Every format draws many distinct values, each valid for the validator (format checked)."""
    schema = one({"type": "string", "format": fmt, **extra})
    values = draw(schema)
    check = validator(schema)
    assert all(check.is_valid(v) for v in values)
    assert len({v["x"] for v in values}) >= 5, values


NODE = {"type": "object", "properties": {"label": {"type": "string", "maxLength": 3},
                                         "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["label"]}
DEFS = {"type": "object", "properties": {"root": {"$ref": "#/$defs/N"}}, "required": ["root"],
        "$defs": {"N": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]},
                                                           "v": {"type": "integer"}}, "required": ["next", "v"]}}}


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(("schema", "most"), [(NODE, MAX_REF_DEPTH + 1), (DEFS, MAX_REF_DEPTH + 2)])
def test_recursive_refs_draw_values_of_bounded_depth(schema: dict[str, Any], most: int) -> None:
    values = draw(schema, 40)
    check = validator(schema)
    assert values and all(check.is_valid(v) for v in values)
    assert max(depth(v) for v in values) <= most
    assert max(depth(v) for v in values) >= 2  # the recursion is followed, not cut at once
    assert "$ref" not in json.dumps(inline_refs(schema))


@given(st.integers(1, 4))
def test_inlining_stops_at_the_depth_asked(limit: int) -> None:
    inlined = json.dumps(inline_refs(NODE, limit))
    assert inlined.count('"children"') == limit + 1 and '"items": false' in inlined


def test_a_recursive_tool_is_fuzzed(tmp_path) -> None:
    """A recursive tool gets cells that pass in the harness's own grammars (it was refused before)."""
    tool = ToolSchema("tree", "A tree.", NODE)
    report = fuzz([tool], FuzzOptions(families=("qwen",), strategies=("ebnf",), examples=6,
                                      walks=2, hypothesis_home=tmp_path))
    assert {c.outcome for c in report.cells} == {Outcome.passing}, [c.classes for c in report.cells]
    assert all(c.examples >= 3 for c in report.cells)


ZOD_IPV4 = r"^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])$"
COMBINED: list[tuple[dict[str, Any], int | None]] = [
    ({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 8}, 10),  # pydantic constr(...)
    ({"type": "string", "format": "uri", "minLength": 1}, 10),  # pydantic AnyUrl
    ({"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083}, 10),  # pydantic HttpUrl
    ({"type": "string", "format": "email", "maxLength": 8}, 10),
    ({"type": "string", "format": "uri", "maxLength": 12}, 10),
    ({"type": "string", "format": "hostname", "maxLength": 5}, 10),
    ({"type": "string", "format": "ipv4", "maxLength": 7}, 5),
    ({"type": "string", "format": "date-time", "maxLength": 25}, 5),
    ({"type": "string", "format": "email", "minLength": 30}, 10),
    ({"type": "string", "pattern": "^[a-z]+$", "minLength": 20, "maxLength": 25}, 10),
    ({"type": "string", "pattern": "[0-9]", "minLength": 3, "maxLength": 4}, 10),  # searched: any text around
    ({"type": "string", "pattern": r"^\d{5}$", "minLength": 5}, 10),
    ({"type": "string", "pattern": r"^(ab|c)*\w$", "maxLength": 6}, 10),
    ({"type": "string", "format": "time", "maxLength": 9}, 5),  # 12:00:00Z
    ({"type": "string", "format": "ipv4", "pattern": ZOD_IPV4, "maxLength": 7}, 5),  # zod writes both
    ({"type": "string", "format": "date-time", "pattern": "Z$", "maxLength": 20}, 5),
    ({"type": "string", "format": "uuid", "maxLength": 10}, None),  # a UUID has 36 characters
    ({"type": "string", "pattern": "^[a-z]{3}$", "maxLength": 10, "minLength": 5}, None),
]
"""A string under a format or pattern and lengths together, and how many distinct values ``harness
fuzz`` draws of 20 at least (None: none exists, reported as such)."""


@pytest.mark.parametrize(("schema", "least"), COMBINED, ids=[json.dumps(s, sort_keys=True) for s, _ in COMBINED])
def test_combined_bounds_are_drawn_together(schema: dict[str, Any], least: int | None, tmp_path) -> None:
    """Values meet every bound at once (they were drawn from the format or pattern, then filtered by
    length: an email of at most 8 characters drew none)."""
    from harness.fuzz.run import draw_case

    tool = ToolSchema("t", "A tool.", one(schema))
    case = draw_case(tool, FuzzOptions(families=("qwen",), strategies=("ebnf",), examples=20, hypothesis_home=tmp_path))
    if least is None:
        assert case.values == [] and case.problem is not None and case.problem[0] is Outcome.schema_unsatisfiable
        return
    assert case.problem is None, case.problem
    assert all(validator(one(schema)).is_valid(v) for v in case.values)
    assert len({v["x"] for v in case.values}) >= least, case.values


def test_a_tool_under_combined_bounds_is_fuzzed(tmp_path) -> None:
    """An email of at most 8 characters and a long pattern pass in the harness's own grammars, with values."""
    tools = [ToolSchema("short_email", "An email.", one({"type": "string", "format": "email", "maxLength": 8})),
             ToolSchema("long_word", "A word.", one({"type": "string", "pattern": "^[a-z]+$", "minLength": 20}))]
    report = fuzz(tools, FuzzOptions(families=("qwen",), strategies=("ebnf",), examples=6,
                                     walks=1, hypothesis_home=tmp_path))
    assert {c.outcome for c in report.cells} == {Outcome.passing}, [(c.tool, c.classes, c.message) for c in report.cells]
    assert all(c.examples >= 5 for c in report.cells)
