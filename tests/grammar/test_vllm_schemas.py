"""The harness's copy of vLLM's JSON-schema rules (``harness.vllm_schemas``) predicts vLLM 0.32: the
same verdict as vLLM's own ``has_xgrammar_unsupported_json_features`` where vLLM is installed, on
pydantic's own schemas and on hand-written ones that reach each branch; and the lanes vLLM checks
(``json_schema``, FunctionGemma's ``required``) refuse exactly what vLLM's validation answers 400 to,
while Qwen's structural-tag lanes, which vLLM does not check, build."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from harness.agents.constraint import ConstraintError, DecodingConstraint
from harness.agents.types import ToolSchema
from harness.grammar.families import get_adapter
from harness.vllm_schemas import (
    XGRAMMAR_REFUSAL,
    guidance_unsupported,
    json_schema_verdict,
    lane_refusal,
    xgrammar_unsupported,
)
from tests.grammar.library_schemas import all_tools

HAS_VLLM = importlib.util.find_spec("vllm") is not None
TOOLS = all_tools()

REFUSED_BY_VLLM: dict[str, str] = {
    "t_any_url": "minLength/maxLength beside a format",
    "t_http_url": "minLength/maxLength beside a format",
    "t_constr_pattern_lengths": "minLength/maxLength beside a pattern",
    "t_conint_multiple_of": "multipleOf",
    "t_bytes": "format 'binary'",
    "t_secret_str": "format 'password'",
    "t_path": "format 'path'",
    "t_set_str": "uniqueItems",
}
"""The pydantic tools vLLM (backend xgrammar) refuses, with the feature named; every other one passes."""

HAND: list[tuple[dict[str, Any], str | None]] = [
    ({"type": "array", "contains": {"type": "integer"}}, "parameters: contains"),
    ({"type": "array", "items": {"type": "integer"}, "maxContains": 2}, "parameters: maxContains"),
    ({"type": ["string", "null"], "format": "binary"}, "parameters: format 'binary'"),
    ({"type": "number", "multipleOf": 0.5}, "parameters: multipleOf"),
    ({"multipleOf": 5}, None),  # no type: vLLM's check does not look
    ({"type": "string", "format": "email", "maxLength": 8}, "parameters: minLength/maxLength beside a format"),
    ({"type": "string", "format": "float"}, "parameters: format 'float'"),  # BFCL's annotation
    ({"type": "object", "propertyNames": {"pattern": "^a", "maxLength": 3}}, "parameters: propertyNames with"),
    ({"type": "object", "propertyNames": {"type": "string"}, "properties": {}}, "parameters: propertyNames beside properties"),
    ({"type": "object", "propertyNames": {"type": "string"}}, None),
    ({"type": "object", "propertyNames": {"type": "string"}, "unevaluatedProperties": False},
     "parameters: propertyNames beside unevaluatedProperties"),
    ({"type": "object", "patternProperties": {"^a": {}, "^b": {}}}, "parameters: more than one patternProperties"),
    ({"type": "object", "patternProperties": {"^a": {}}, "properties": {"b": {}}}, "parameters: patternProperties beside"),
    ({"allOf": [{"type": "string"}, {"enum": ["a"]}]}, "parameters: allOf with more than one schema"),
    ({"allOf": [{"type": "string"}]}, None),
    ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer", "multipleOf": 2}]}}},
     "parameters.a.anyOf[1]: multipleOf"),
    ({"type": "object", "$defs": {"D": {"type": "array", "uniqueItems": True}}, "properties": {}},
     "parameters.D: uniqueItems"),  # an unused definition counts: vLLM walks every value
    ({"type": "object", "properties": {"type": {"type": "string"}, "format": {"type": "string"}}}, None),
    ({"enum": [{"type": "integer", "multipleOf": 3}]}, "parameters.enum[0]: multipleOf"),  # vLLM reads values too
]


@pytest.mark.parametrize(("schema", "feature"), HAND, ids=[str(i) for i in range(len(HAND))])
def test_hand_written_schemas(schema: dict[str, Any], feature: str | None) -> None:
    found = xgrammar_unsupported(schema)
    assert (found is None) == (feature is None)
    assert found is None or found.startswith(feature or "")
    if HAS_VLLM:
        from vllm.v1.structured_output.backend_xgrammar import has_xgrammar_unsupported_json_features

        assert has_xgrammar_unsupported_json_features(schema) == (found is not None)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_pydantic_schemas(name: str) -> None:
    found = xgrammar_unsupported(TOOLS[name].parameters)
    expected = REFUSED_BY_VLLM.get(name)
    assert (found is None) == (expected is None), found
    assert found is None or f"parameters.x: {expected}" in found
    if HAS_VLLM:
        from vllm.v1.structured_output.backend_xgrammar import has_xgrammar_unsupported_json_features

        assert has_xgrammar_unsupported_json_features(TOOLS[name].parameters) == (found is not None)


@pytest.mark.parametrize(("schema", "backend", "runs_on"), [
    ({"type": "integer", "multipleOf": 5}, "xgrammar", None),
    ({"type": "integer", "multipleOf": 5}, "guidance", "guidance"),
    ({"type": "integer", "multipleOf": 5}, "auto", "guidance"),
    ({"type": "object", "patternProperties": {"^a": {}, "^b": {}}}, "auto", "outlines"),
    ({"type": "integer"}, "auto", "xgrammar"),
    ({"type": "integer"}, "xgrammar", "xgrammar"),
])
def test_backends(schema: dict[str, Any], backend: Any, runs_on: str | None) -> None:
    """xgrammar refuses what its check flags; guidance checks none of it; auto falls back to guidance,
    or outlines where guidance's check (patternProperties) flags it too."""
    verdict = json_schema_verdict(schema, backend)
    assert verdict.runs_on == runs_on
    assert verdict.refused == (runs_on is None)
    if verdict.refused:
        assert XGRAMMAR_REFUSAL in str(verdict.reason)
    if HAS_VLLM and runs_on == "outlines":
        from vllm.v1.structured_output.backend_guidance import has_guidance_unsupported_json_features

        assert has_guidance_unsupported_json_features(schema) == (guidance_unsupported(schema) is not None)


def test_nesting_is_refused_as_vllm_does() -> None:
    deep: dict[str, Any] = {"type": "integer"}
    for _ in range(70):
        deep = {"type": "array", "items": deep}
    assert json_schema_verdict(deep).refused
    if HAS_VLLM:
        from vllm.sampling_params import _exceeds_json_nesting

        assert _exceeds_json_nesting(deep, 64)


PLAIN = ToolSchema(name="plain", description="d", parameters={"type": "object", "properties": {"a": {"type": "string"}}})
LANES = [(f, s) for f in ("function_gemma", "qwen") for s in ("json_schema", "required", "strict")]


def _harness_refusal(family: str, strategy: str, tool: ToolSchema) -> str | None:
    """The harness's refusal of ``tool`` beside a plain tool in the lane (None: it builds)."""
    try:
        payload = get_adapter(family).build_payload([tool, PLAIN], DecodingConstraint(strategy=strategy))
    except ConstraintError as exc:
        return str(exc)
    assert payload.artifact is not None or strategy == "strict"
    refused = dict(payload.artifact.refused) if payload.artifact is not None else {}
    return refused.get(tool.name)


def _vllm_refuses(family: str, strategy: str, tool: ToolSchema, artifact: Any) -> bool:
    """vLLM's own answer: its constraint for the request (its own code for required/strict, the
    harness's artifact for json_schema), through its xgrammar validation."""
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    from harness.grammar.formats.vllm_tools import strategy_request, vllm_own_constraint

    if strategy == "json_schema":
        params = StructuredOutputsParams(json=artifact)
    else:
        built = vllm_own_constraint(family, [tool, PLAIN], strategy_request(strategy, allow_parallel_calls=False))
        if built.artifact is None:
            return False
        kind = "json" if built.artifact.kind == "json" else "structural_tag"
        params = StructuredOutputsParams(**{kind: built.artifact.value})
    try:
        validate_xgrammar_grammar(SamplingParams(structured_outputs=params))
    except (ValueError, VLLMValidationError):
        return True
    return False


@pytest.mark.parametrize(("family", "strategy"), LANES)
def test_lanes_refuse_what_vllm_refuses(family: str, strategy: str) -> None:
    """Every corpus tool, in every lane vLLM runs: the harness refuses it (with vLLM's reason) exactly
    where vLLM answers 400 (json_schema, FunctionGemma's required); Qwen's tag lanes build."""
    checked = (family == "function_gemma" and strategy == "required") or strategy == "json_schema"
    for name in [*sorted(REFUSED_BY_VLLM), "t_uuid", "m_nested", "t_dict"]:
        tool = TOOLS[name]
        refusal = _harness_refusal(family, strategy, tool)
        expected = checked and name in REFUSED_BY_VLLM
        assert (lane_refusal(family, strategy, tool.parameters) is not None) == expected, name
        if expected:
            assert refusal is not None and XGRAMMAR_REFUSAL in refusal and REFUSED_BY_VLLM[name] in refusal, name
        else:
            assert refusal is None, (name, refusal)
        if HAS_VLLM:
            # json_schema: vLLM is asked the schema with the tool in it (the harness's own lane leaves it out)
            schema = json.dumps({"type": "object", "properties": {"x": tool.parameters}}) if expected else None
            if schema is None and strategy == "json_schema":
                payload = get_adapter(family).build_payload([tool, PLAIN], DecodingConstraint(strategy=strategy))
                schema = payload.artifact.value if payload.artifact is not None else None
            assert _vllm_refuses(family, strategy, tool, schema) == expected, (name, family, strategy)


@pytest.mark.parametrize("parallel", [True, False])
def test_required_array_moves_definitions_up_as_vllm_does(parallel: bool) -> None:
    """FunctionGemma's ``required`` array: every tool's ``$defs`` moved to the array's, byte for byte
    vLLM's own schema, which xgrammar compiles (the pointers resolve)."""
    import xgrammar as xgr

    from harness.grammar.formats.vllm_tools import ToolRequest, server_constraint, vllm_own_constraint

    tools = [TOOLS["m_nested"], TOOLS["m_recursive"], TOOLS["t_enum"], PLAIN]
    request = ToolRequest("required", False, None if parallel else False)
    ours = server_constraint("function_gemma", tools, request).artifact
    assert ours is not None and set(json.loads(ours.value)["$defs"]) == {"Address", "Node", "Color"}
    xgr.Grammar.from_json_schema(ours.value)
    if HAS_VLLM:
        theirs = vllm_own_constraint("function_gemma", tools, request).artifact
        assert theirs is not None and json.loads(ours.value) == json.loads(theirs.value)


def test_two_tools_defining_one_name_differently_are_refused() -> None:
    a = ToolSchema("a", "A.", {"type": "object", "properties": {"x": {"$ref": "#/$defs/D"}},
                               "$defs": {"D": {"type": "integer"}}})
    b = ToolSchema("b", "B.", {"type": "object", "properties": {"x": {"$ref": "#/$defs/D"}},
                               "$defs": {"D": {"type": "string"}}})
    with pytest.raises(ConstraintError, match="the definition 'D' has another schema"):
        get_adapter("function_gemma").build_payload([a, b], DecodingConstraint(strategy="required"))


BACKEND_LANE: list[tuple[dict[str, Any], str, str | None]] = [
    # (a property's schema, vLLM's backend, what the json_schema lane refuses it by: None when it builds)
    ({"type": "string", "format": "uri", "minLength": 1}, "xgrammar", "vLLM (backend xgrammar) answers 400"),
    ({"type": "string", "format": "uri", "minLength": 1}, "guidance", None),
    ({"type": "integer", "multipleOf": 5}, "xgrammar", "vLLM (backend xgrammar) answers 400"),
    ({"type": "integer", "multipleOf": 5}, "guidance", None),
    ({"type": "string", "format": "binary"}, "guidance", None),
    ({"type": "object", "patternProperties": {"^a": {"type": "integer"}}}, "guidance", "patternProperties"),
]


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
@pytest.mark.parametrize(("schema", "backend", "refusal"), BACKEND_LANE)
def test_the_json_schema_lane_refuses_by_the_run_s_backend(family: str, schema: dict[str, Any], backend: str,
                                                          refusal: str | None) -> None:
    from harness.agents import ToolSchema
    from harness.agents.constraint import DecodingConstraint
    from harness.grammar.families import get_adapter

    tool = ToolSchema("t", "A tool.", {"type": "object", "properties": {"x": schema}, "required": ["x"]})
    plain = ToolSchema("plain", "A plain tool.", {"type": "object", "properties": {"a": {"type": "string"}}})
    payload = get_adapter(family).build_payload([tool, plain], DecodingConstraint(strategy="json_schema",
                                                                                 grammar_backend=backend))
    assert payload.artifact is not None
    found = dict(payload.artifact.refused).get("t")
    assert (found is None) if refusal is None else (found is not None and refusal in found), found
