"""ToolSchema.from_openai: OpenAI-style tools and BFCL's own function docs (its type names mapped)."""

from __future__ import annotations

import pytest

from harness.agents.types import GORILLA_TYPES, ToolSchema, json_schema_types

# (schema in, schema out)
TYPE_CASES = [
    ({"type": "dict", "properties": {}}, {"type": "object", "properties": {}}),
    (
        {"type": "dict", "properties": {"x": {"type": "float"}, "y": {"type": "tuple", "items": {"type": "dict"}}}},
        {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "array", "items": {"type": "object"}}}},
    ),
    ({"type": ["bool", "null"]}, {"type": ["boolean", "null"]}),
    ({"anyOf": [{"type": "long"}, {"type": "string"}]}, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ({"type": "object", "additionalProperties": {"type": "any"}}, {"type": "object", "additionalProperties": {"type": "string"}}),
    ({"type": "object", "properties": {"a": {"type": "integer", "enum": [1]}}}, None),  # JSON Schema already: unchanged
    ({"type": "mystery"}, None),  # unknown names are left for the grammar compiler to report
]


@pytest.mark.parametrize(("schema", "expected"), TYPE_CASES)
def test_bfcl_type_names_become_json_schema(schema: dict, expected: dict | None) -> None:
    out = json_schema_types(schema)
    if expected is None:
        assert out is schema
    else:
        assert out == expected


def test_from_openai_reads_a_bfcl_function_doc() -> None:
    doc = {
        "name": "tail",
        "description": "Display the last part of a file.",
        "parameters": {
            "type": "dict",
            "properties": {"file_name": {"type": "string"}, "lines": {"type": "integer", "default": 10}},
            "required": ["file_name"],
        },
        "response": {"type": "dict", "properties": {"last_lines": {"type": "string"}}},
    }
    schema = ToolSchema.from_openai(doc)
    assert schema.parameters["type"] == "object"
    assert schema.required == ("file_name",)
    assert doc["parameters"]["type"] == "dict"  # the input is not modified


def test_type_table_is_bfcls() -> None:
    """The table holds exactly BFCL's conversions of the names JSON Schema lacks."""
    mapping = pytest.importorskip(
        "bfcl_eval.constants.type_mappings",
        reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23",
    ).GORILLA_TO_OPENAPI
    json_names = {"string", "integer", "number", "boolean", "array", "object", "null"}
    assert GORILLA_TYPES == {k: v for k, v in mapping.items() if k not in json_names}
