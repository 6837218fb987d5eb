"""A ``oneOf`` whose branches provably cannot both match (types apart, or a required tag property with
``const``/``enum`` values that differ: pydantic's discriminated unions) builds as the union it is in
every harness strategy; any other ``oneOf`` is refused by name. ``propertyNames: {"type": "string"}``
(zod's records) is the no-op it is; a ``propertyNames`` that constrains keys stays refused."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from harness.agents import ConstraintError, DecodingConstraint, ToolCall, ToolSchema
from harness.grammar.families import FAMILIES, get_adapter, keywords_used
from harness.grammar.schema import tool_problem

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    bark: str


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


def tagged(*tags: dict[str, Any], required: bool = True, typed: bool = True) -> dict[str, Any]:
    """A oneOf of objects, each with its ``tag`` schema and one more property."""
    branches = []
    for i, tag in enumerate(tags):
        branch: dict[str, Any] = {"properties": {"tag": tag, f"p{i}": {"type": "string"}},
                                  "required": ["tag", f"p{i}"] if required or i else [f"p{i}"]}
        branches.append({"type": "object", **branch} if typed else branch)
    return {"type": "object", "properties": {"x": {"oneOf": branches}}, "required": ["x"]}


ENUM_DEFS = {"type": "object", "required": ["x"], "properties": {"x": {"oneOf": [
    {"type": "object", "properties": {"kind": {"$ref": "#/$defs/A"}}, "required": ["kind"]},
    {"type": "object", "properties": {"kind": {"$ref": "#/$defs/B"}}, "required": ["kind"]}]}},
    "$defs": {"A": {"enum": ["a1", "a2"], "type": "string"}, "B": {"enum": ["b"], "type": "string"}}}

# (what, the tool's parameters, refused: the text the refusal names, None when it builds)
SCHEMAS: list[tuple[str, dict[str, Any], str | None]] = [
    ("pydantic discriminated union", Pet.model_json_schema(), None),
    ("const tags", tagged({"const": "a"}, {"const": "b"}), None),
    ("enum tags apart", tagged({"enum": ["a", "b"]}, {"enum": ["c"]}), None),
    ("tags true and 1 (JSON: not equal)", tagged({"const": True}, {"const": 1}), None),
    ("enum tags as $ref (a pydantic Enum)", ENUM_DEFS, None),
    ("types apart", {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
     None),
    ("enum tags that overlap", tagged({"enum": ["a", "b"]}, {"const": "b"}), "oneOf"),
    ("tags 1 and 1.0 (JSON: equal)", tagged({"const": 1}, {"const": 1.0}), "oneOf"),
    ("a branch that does not require its tag", tagged({"const": "a"}, {"const": "b"}, required=False), "oneOf"),
    ("branches that are not said to be objects", tagged({"const": "a"}, {"const": "b"}, typed=False), "oneOf"),
    ("a container as a tag", tagged({"const": [1]}, {"const": [2]}), "oneOf"),
    ("a discriminator whose branches share a tag", {**tagged({"const": "a"}, {"const": "a"}),
                                                   "discriminator": {"propertyName": "tag"}}, "oneOf"),
    ("propertyNames: string (a record)", {"type": "object", "properties": {"m": {
        "type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"type": "string"}}}}, None),
    ("propertyNames with a pattern", {"type": "object", "properties": {"m": {
        "type": "object", "propertyNames": {"type": "string", "pattern": "^a"}}}}, "propertyNames"),
    ("propertyNames with a length", {"type": "object", "properties": {"m": {
        "type": "object", "propertyNames": {"maxLength": 3}}}}, "propertyNames"),
]
HARNESS_STRATEGIES = ("ebnf", "structural_tag", "json_schema")


@pytest.mark.parametrize("strategy", HARNESS_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("what", "schema", "refused"), SCHEMAS, ids=[w for w, _, _ in SCHEMAS])
def test_a_union_builds_when_proven_and_is_refused_by_name_otherwise(
    family: str, strategy: str, what: str, schema: dict[str, Any], refused: str | None
) -> None:
    tool = ToolSchema(name="t", description=what, parameters=schema)
    problem = tool_problem(tool, family, strategy)
    if refused is None:
        assert problem is None
        payload = get_adapter(family).build_payload([tool], DecodingConstraint(strategy=strategy))
        assert payload.artifact is not None and payload.artifact.refused == ()
    else:
        assert problem is not None and f"{refused} " in problem and "tool 't'" in problem
        with pytest.raises(ConstraintError, match=refused):
            get_adapter(family).build_payload([tool], DecodingConstraint(strategy=strategy))


def accepts(family: str, strategy: str, tool: ToolSchema, arguments: dict[str, Any]) -> bool:
    constraint = DecodingConstraint(strategy=strategy)
    adapter = get_adapter(family)
    artifact = adapter.build_payload([tool], constraint).artifact
    assert artifact is not None
    grammar = xgr.Grammar.from_ebnf(artifact.value) if artifact.kind == "grammar" else \
        xgr.Grammar.from_json_schema(artifact.value, any_whitespace=False, separators=(",", ":"))
    return bool(_is_grammar_accept_string(grammar, adapter.render_output([ToolCall.create("t", arguments)],
                                                                         constraint)))


PET = ToolSchema(name="t", description="a pet", parameters=Pet.model_json_schema())
# (arguments, whether Pet's schema allows them)
PETS: list[tuple[dict[str, Any], bool]] = [
    ({"pet": {"kind": "cat", "lives": 9}}, True),
    ({"pet": {"kind": "dog", "bark": "woof"}}, True),
    ({"pet": {"kind": "cat", "bark": "woof"}}, False),  # a dog's fields under a cat's tag
    ({"pet": {"kind": "cow", "lives": 1}}, False),
    ({"pet": {"lives": 1}}, False),
]


@pytest.mark.parametrize("strategy", ("ebnf", "json_schema"))
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("arguments", "valid"), PETS, ids=repr)
def test_the_built_union_is_the_schemas_language(family: str, strategy: str, arguments: dict[str, Any],
                                                 valid: bool) -> None:
    import jsonschema

    assert jsonschema.Draft202012Validator(PET.parameters).is_valid(arguments) is valid
    assert accepts(family, strategy, PET, arguments) is valid


def test_a_noop_property_names_is_no_keyword_used() -> None:
    record = {"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"type": "integer"}}
    assert "propertyNames" not in keywords_used(record)
    assert "propertyNames" in keywords_used({**record, "propertyNames": {"type": "string", "pattern": "^a"}})
