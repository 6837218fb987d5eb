"""Defects of xgrammar's JSON-schema converter come out as minimal reproductions whose standalone script
reproduces them with xgrammar alone; a cell whose constraint they spoil says ``defective: <label>``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.agents import ToolSchema
from harness.fuzz import FuzzOptions, fuzz, keep_defects
from harness.fuzz.defects import (
    Defect,
    find_defects,
    label_of,
    shrink,
    subschema_at,
    write_defects,
    xgrammar_accepts,
)

pytestmark = pytest.mark.fuzz

# (label, kind, the property's schema, an instance the fuzz met): xgrammar 0.2.8's known defects.
KNOWN = [
    ("format:email", "rejects_valid", {"type": "string", "format": "email"}, "0@A.A.AC"),
    ("minimum", "rejects_valid", {"type": "number", "minimum": 0.5}, 1.3515625),
    ("maxLength", "rejects_valid", {"type": "string", "maxLength": 8}, "ab\x01"),
    ("format:date-time", "accepts_invalid", {"type": "string", "format": "date-time"}, "2024-01-01T00:00:60Z"),
]


def tool_with(schema: dict[str, Any]) -> ToolSchema:
    return ToolSchema("probe", "A probe.", {"type": "object", "properties": {"x": schema}, "required": ["x"]})


def check_defect(found: list[Defect], label: str, kind: str) -> Defect:
    assert [(d.label, d.kind) for d in found] == [(label, kind)]
    return found[0]


@pytest.mark.parametrize(("label", "kind", "schema", "value"), KNOWN)
def test_a_known_defect_is_found_minimal_and_its_script_reproduces_it(
        tmp_path: Path, label: str, kind: str, schema: dict[str, Any], value: Any) -> None:
    tool = tool_with(schema)
    strict = {**tool.parameters, "additionalProperties": False}
    defect = check_defect(find_defects(tool, strict, [{"x": value}], deadline=float("inf")), label, kind)
    assert defect.path == "x" and "type" in defect.minimal_schema
    assert len(defect.instance) <= len(json.dumps(value))
    (written,) = write_defects([defect], tmp_path)
    assert written.file is not None
    folder = Path(written.file).parent
    readme = (folder / "README.md").read_text()
    assert defect.xgrammar_version in readme and defect.instance in readme and defect.validator_says in readme
    run = subprocess.run([sys.executable, written.file], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "DEFECT REPRODUCED" in run.stdout


AGREEING = [
    ({"type": "string", "format": "email"}, "a@example.com"),
    ({"type": "number", "minimum": 0.5}, 2.5),
    ({"type": "string", "maxLength": 3}, "abcd"),
    ({"type": "integer", "maximum": 3}, 4),
]


@pytest.mark.parametrize(("schema", "value"), AGREEING)
def test_where_xgrammar_and_the_validator_agree_nothing_is_found(schema: dict[str, Any], value: Any) -> None:
    tool = tool_with(schema)
    assert find_defects(tool, {**tool.parameters, "additionalProperties": False}, [{"x": value}], deadline=float("inf")) == []


def test_shrinking_drops_the_keywords_the_defect_does_not_need() -> None:
    schema = {"type": "string", "format": "email", "minLength": 1, "description": "who"}
    small, value = shrink(schema, "0@A.A.AC", "rejects_valid")
    assert small == {"type": "string", "format": "email"}
    assert xgrammar_accepts(small, json.dumps(value)) is False


PLACES = [
    (("a",), {"type": "object", "properties": {"a": {"type": "integer"}}}, {"type": "integer"}),
    (("a", 1), {"properties": {"a": {"prefixItems": [{"type": "string"}, {"type": "number"}]}}}, {"type": "number"}),
    (("a", 0, "b"), {"properties": {"a": {"items": {"properties": {"b": {"const": 1}}}}}}, {"const": 1}),
    (("a",), {"properties": {"a": {"anyOf": [{"type": "string"}]}}}, {"anyOf": [{"type": "string"}]}),
    (("a", "b"), {"properties": {"a": {"anyOf": [{"type": "object"}]}}}, None),
    (("a",), {"properties": {"a": {"$ref": "#/$defs/x"}}}, None),
]


@pytest.mark.parametrize(("path", "schema", "expected"), PLACES)
def test_the_schema_of_a_place(path: tuple[Any, ...], schema: dict[str, Any], expected: Any) -> None:
    assert subschema_at(schema, path) == expected


@pytest.mark.parametrize(("schema", "label"), [
    ({"type": "string", "format": "uri", "maxLength": 3}, "maxLength+format:uri"),  # xgrammar drops lengths there
    ({"type": "string", "format": "uri"}, "format:uri"),
    ({"type": "string", "pattern": "^a+$", "minLength": 2, "maxLength": 3}, "minLength+maxLength+pattern"),
    ({"type": "number", "exclusiveMinimum": 0}, "exclusiveMinimum"),
    ({"type": "string"}, "type"),
    ({"type": "number", "format": "float", "minimum": 0}, "minimum"),
])
def test_a_defect_is_labelled_by_its_most_specific_keyword(schema: dict[str, Any], label: str) -> None:
    assert label_of(schema) == label


@pytest.mark.slow
def test_the_fuzz_writes_each_known_defect_and_names_it_in_the_summary(tmp_path: Path) -> None:
    tools = [ToolSchema.from_openai(t) for t in json.loads(
        (Path(__file__).parent / "data" / "keyword_tools.json").read_text())]
    report = fuzz(tools[:2], FuzzOptions(families=("qwen",), strategies=("json_schema",), examples=100,
                                        database=tmp_path / "db", jobs=1, shrink=False))
    keep_defects(report, tmp_path / "defects")
    labels = {d.label for d in report.defects}
    assert {"format:email", "minimum"} <= labels or {"format:email", "exclusiveMaximum"} <= labels, labels
    assert report.summary()["defective"]["qwen/json_schema"] == sorted(labels)
    for defect in report.defects:
        assert defect.file is not None and Path(defect.file).is_file()


def _strings(*names: str, required: tuple[str, ...] = ("location", "genre")) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(required)}


# xgrammar 0.2.8 (found on BFCL's corpus): beside a tool whose arguments are the same but for a property
# named "title", a tool loses its "title": the two objects compile to one rule.
TITLE_PAIR = [ToolSchema("find_concert", "Find.", _strings("genre", "location")),
              ToolSchema("search_books", "Search.", _strings("genre", "location", "title"))]
BYSTANDERS = [ToolSchema(f"tool_{i}", "Other.", _strings("q", f"n{i}", required=("q",))) for i in range(5)]


def test_a_defect_only_a_tool_set_shows_is_reduced_to_the_tools_it_needs(tmp_path: Path) -> None:
    from harness.fuzz.toolset_defects import LABEL, toolset_defect

    tools = [*BYSTANDERS[:3], TITLE_PAIR[0], *BYSTANDERS[3:], TITLE_PAIR[1]]
    from harness.agents import DecodingConstraint
    from harness.grammar.families import get_adapter

    schema = json.loads(get_adapter("qwen").build_payload(tools, DecodingConstraint("json_schema")).artifact.value)
    call = {"name": "search_books", "arguments": {"genre": "jazz", "location": "Oslo", "title": "Blue"}}
    defect = toolset_defect(schema, call, tool="search_books", deadline=float("inf"))
    assert defect is not None and (defect.label, defect.kind) == (LABEL, "rejects_valid")
    names = [b["properties"]["name"]["const"] for b in defect.minimal_schema["anyOf"]]
    assert names == ["find_concert", "search_books"]  # the bystanders dropped, the order kept
    assert len(defect.instance) < len(json.dumps(call))  # the call shrunk too
    assert toolset_defect(schema, {**call, "name": "tool_0", "arguments": {"q": "x"}}, tool="tool_0",
                          deadline=float("inf")) is None  # a call xgrammar gets right
    (written,) = write_defects([defect], tmp_path)
    run = subprocess.run([sys.executable, str(written.file)], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1 and "DEFECT REPRODUCED" in run.stdout, run.stdout + run.stderr


@pytest.mark.slow
def test_the_fuzz_writes_a_tool_set_defect_and_names_it(tmp_path: Path) -> None:
    report = fuzz(TITLE_PAIR, FuzzOptions(families=("qwen",), strategies=("json_schema",), examples=20,
                                          database=tmp_path / "db", jobs=1, shrink=False))
    keep_defects(report, tmp_path / "defects")
    assert [d.key for d in report.defects] == ["anyOf:tool_set-rejects_valid"]
    assert report.summary()["defective"]["qwen/json_schema"] == ["anyOf:tool_set"]
    assert report.defects[0].file is not None and Path(report.defects[0].file).is_file()
