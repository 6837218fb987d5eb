"""Tool schemas as users write them (pydantic's ``model_json_schema()``: ``$defs`` and ``$ref``, optional
fields, enums, lists of models, recursive models; open objects) in every constrained lane: each builds,
compiles with the real tokenizer, and accepts the model's own instances (``model_dump()``) walked
token by token; calls that break the schema are rejected."""

from __future__ import annotations

import enum
import functools
from typing import Any, Optional

import pytest
from pydantic import BaseModel, Field

from harness.agents.constraint import ConstraintError, DecodingConstraint
from harness.agents.types import ToolCall, ToolSchema
from harness.grammar.families import FAMILIES, get_adapter
from harness.vocabulary import (
    HARNESS_STRATEGIES as CONSTRAINED_STRATEGIES,  # the 6 lanes: the grammars the harness builds
)


class Colour(enum.StrEnum):
    red = "red"
    green = "green"


class Address(BaseModel):
    street: str
    city: str
    zip_code: Optional[str] = None  # noqa: UP045 - pydantic's anyOf-with-null spelling, as users write it


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    colour: Colour = Colour.red
    home: Address
    others: list[Address] = []
    nickname: Optional[str] = None  # noqa: UP045


class TreeNode(BaseModel):
    label: str
    children: list[TreeNode] = []


class Settings(BaseModel):
    name: str
    extra: dict[str, int] = {}
    tags: dict[str, Any] = {}


MODELS: dict[str, type[BaseModel]] = {"person": Person, "tree": TreeNode, "settings": Settings}

INSTANCES: list[tuple[str, BaseModel]] = [
    ("person", Person(name="Ada", age=36, home=Address(street="1 Main St", city="Oslo"))),
    ("person", Person(name="Bo \"B\" \\ ok", age=0, colour=Colour.green, nickname="bo",
                      home=Address(street="x", city="y", zip_code="0150"),
                      others=[Address(street="a", city="b"), Address(street="c", city="d", zip_code="9")])),
    ("tree", TreeNode(label="root")),
    ("tree", TreeNode(label="r", children=[TreeNode(label="a", children=[TreeNode(label="b")]), TreeNode(label="c")])),
    ("settings", Settings(name="s")),
    ("settings", Settings(name="s", extra={"Player1": 3, "Player2": 4}, tags={"k": [1, "x", None], "z": {"q": True}})),
]

INVALID: list[tuple[str, dict[str, Any]]] = [
    ("person", {"name": "Ada", "age": 151, "home": {"street": "s", "city": "c"}}),  # age above maximum
    ("person", {"name": "Ada", "age": 3, "home": {"street": "s"}}),  # nested required city missing
    ("person", {"name": "Ada", "age": 3, "colour": "blue", "home": {"street": "s", "city": "c"}}),  # enum
    ("tree", {"label": "r", "children": [{"children": []}]}),  # recursive node without its label
    ("settings", {"name": "s", "extra": {"a": "not an int"}}),  # additionalProperties' schema
]


def tool_of(name: str) -> ToolSchema:
    return ToolSchema(name=name, description=f"Take a {name}.", parameters=MODELS[name].model_json_schema())


@functools.cache
def compiled(family: str, strategy: str) -> Any:
    from harness.grammar import compile_artifact

    tools = [tool_of(name) for name in MODELS]
    payload = get_adapter(family).build_payload(tools, DecodingConstraint(strategy=strategy))
    assert payload.artifact is not None and payload.artifact.refused == ()
    return compile_artifact(payload.artifact, family).compiled


def walk(family: str, strategy: str, name: str, arguments: dict[str, Any]) -> Any:
    from harness.grammar import walk_text

    text = get_adapter(family).render_output([ToolCall.create(name, arguments)], DecodingConstraint(strategy=strategy))
    return walk_text(compiled(family, strategy), family, text)


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("name", "instance"), INSTANCES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(INSTANCES)])
def test_a_models_own_instances_are_accepted(family: str, strategy: str, name: str, instance: BaseModel) -> None:
    result = walk(family, strategy, name, instance.model_dump(mode="json"))
    assert result.accepted, result.reason


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("name", "arguments"), INVALID, ids=[f"{n}-{i}" for i, (n, _) in enumerate(INVALID)])
def test_calls_breaking_the_models_schema_are_rejected(family: str, strategy: str, name: str,
                                                       arguments: dict[str, Any]) -> None:
    import jsonschema

    assert not jsonschema.Draft202012Validator(MODELS[name].model_json_schema()).is_valid(arguments)
    assert not walk(family, strategy, name, arguments).accepted


CYCLE = {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "required": ["n"],
         "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}, "required": ["next"]}}}


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_ref_cycle_with_no_base_case_is_refused_by_name(family: str, strategy: str) -> None:
    tool = ToolSchema(name="loop", description="", parameters=CYCLE)
    with pytest.raises(ConstraintError, match=r"tool 'loop'.*\$ref '#/\$defs/N'.*no base case"):
        get_adapter(family).build_payload([tool], DecodingConstraint(strategy=strategy))


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_one_refused_tool_is_named_and_the_rest_are_constrained(family: str, strategy: str) -> None:
    odd = ToolSchema(name="odd", description="", parameters={
        "type": "object", "properties": {"x": {"type": "string", "pattern": "(a)\\1"}}})
    payload = get_adapter(family).build_payload([odd, tool_of("tree")], DecodingConstraint(strategy=strategy))
    assert payload.artifact is not None
    assert [name for name, _ in payload.artifact.refused] == ["odd"]
    assert "backreference" in payload.artifact.refused[0][1]


OPEN = {"type": "object", "properties": {"m": {"type": "object", "minProperties": 1}}}


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("arguments", "accepted"), [({"m": {"a": 1}}, True), ({"m": {}}, False)])
def test_min_properties_on_an_open_object(family: str, strategy: str, arguments: dict[str, Any], accepted: bool) -> None:
    from harness.grammar import compile_artifact, walk_text

    tool = ToolSchema(name="open", description="", parameters=OPEN)
    constraint = DecodingConstraint(strategy=strategy)
    payload = get_adapter(family).build_payload([tool], constraint)
    assert payload.artifact is not None
    text = get_adapter(family).render_output([ToolCall.create("open", arguments)], constraint)
    result = walk_text(compile_artifact(payload.artifact, family).compiled, family, text)
    assert result.accepted == accepted, result.reason


DEEP: dict[str, Any] = {"type": "object"}
for _ in range(3000):
    DEEP = {"type": "object", "properties": {"a": DEEP}}


@pytest.mark.parametrize("strategy", CONSTRAINED_STRATEGIES)
@pytest.mark.parametrize(("parameters", "message"), [
    (DEEP, "nested too deeply"),
    ({"type": "object", "properties": {f"p{i}": {} for i in range(400)}, "minProperties": 200,
      "additionalProperties": False}, "over 50,000 grammar states"),
])
def test_schemas_too_big_to_spell_are_refused_not_hung(strategy: str, parameters: dict[str, Any], message: str) -> None:
    tool = ToolSchema(name="big", description="", parameters=parameters)
    try:
        get_adapter("qwen").build_payload([tool], DecodingConstraint(strategy=strategy))
    except ConstraintError as exc:
        assert message in str(exc)
    else:  # xgrammar's converter takes what the EBNF builder refuses; the compile guard bounds its compile
        assert strategy != "ebnf"
