"""The quick accept in front of jsonschema never accepts what jsonschema refuses, and covers the schemas
the ``.pym`` annotations produce (else the sandboxed call would pay jsonschema's full price)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from sandbox_helpers import TOOLS_DIR

from harness.sandbox import discover_tools
from harness.sandbox.validation import compile_validator, first_problem, quick_accept

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "l", "w", "c", "x", "overwrite", "append", "None"]),
    st.text(max_size=5),
)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)
EXTRA = {
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "bool-enum": {"type": "boolean", "enum": [True]},
    "int-enum": {"type": "integer", "enum": [1, 2]},
    "mixed-enum": {"enum": [1, "1", None, False]},
    "optional-string": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "open-object": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    "array": {"type": "array"},
}


def _schemas() -> dict[str, dict[str, Any]]:
    found = dict(EXTRA)
    for tool in discover_tools(TOOLS_DIR):
        for hidden in (False, True):
            found[f"{tool.name}/{'all' if hidden else 'visible'}"] = tool.script.validation_schema(include_hidden=hidden)
        for spec in tool.script.inputs.values():
            found[f"{tool.name}.{spec.name}"] = spec.validation_schema
    return found


SCHEMAS = _schemas()


def _values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    names = [*schema.get("properties", {}), "other"]
    argument_like = st.dictionaries(st.sampled_from(names), JSON, max_size=len(names))
    return st.one_of(JSON, argument_like)


def test_the_tools_schemas_are_covered() -> None:
    uncovered = [name for name, schema in SCHEMAS.items() if quick_accept(schema) is None]
    assert uncovered == []


@settings(max_examples=4 * settings().max_examples, deadline=None)
@given(data=st.data())
def test_the_quick_accept_never_accepts_what_jsonschema_refuses(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SCHEMAS)))
    schema = SCHEMAS[name]
    value = data.draw(_values(schema))
    if quick_accept(schema)(value):  # type: ignore[misc]
        assert Draft202012Validator(schema).is_valid(value), (name, value)
    check = compile_validator(schema)
    assert check.is_valid(value) == Draft202012Validator(schema).is_valid(value), (name, value)


def test_refusals_keep_jsonschemas_messages() -> None:
    check = compile_validator(SCHEMAS["wc/visible"])
    assert first_problem(check, {"file_name": "a", "mode": "x"}) == ("argument 'mode': must be one of 'l', 'w', 'c', got 'x'", "mode")
    assert first_problem(check, {"file_name": "a", "mode": "w"}) is None
    assert first_problem(check, {"mode": "w"}) == ("missing required argument 'file_name'", "file_name")
