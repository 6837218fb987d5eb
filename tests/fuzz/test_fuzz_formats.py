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
