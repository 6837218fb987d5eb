"""constraint_from_request reads vLLM's fields exactly as vLLM names and types them."""

from __future__ import annotations

import json

import pytest

from harness.agents.constraint import ConstraintArtifact, ConstraintError
from harness.grammar.request import constraint_from_request

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
NEW_TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [
            {
                "begin": '<tool_call>\n{"name": "f", "arguments": ',
                "content": {"type": "json_schema", "json_schema": SCHEMA},
                "end": "}\n</tool_call>",
            }
        ],
        "at_least_one": True,
        "stop_after_first": True,
    },
}
LEGACY_TAG = {
    "type": "structural_tag",
    "structures": [{"begin": "<tool_call>", "schema": SCHEMA, "end": "</tool_call>"}],
    "triggers": ["<tool_call>"],
}


def so(**fields):
    return {"structured_outputs": fields}


@pytest.mark.parametrize(
    ("extra_body", "response_format", "kind"),
    [
        (so(json=SCHEMA), None, "json"),
        (so(json=json.dumps(SCHEMA)), None, "json"),
        (so(grammar='root ::= "a" | "b"'), None, "grammar"),
        (so(structural_tag=json.dumps(NEW_TAG)), None, "structural_tag"),
        (so(structural_tag=json.dumps(LEGACY_TAG)), None, "structural_tag"),
        (so(json_object=True), None, "json"),
        (so(choice=["yes", "no", 'a "quoted"\\ one']), None, "grammar"),
        (so(regex=r"[a-z]+\d{2}"), None, "grammar"),
        (so(grammar='root ::= "x"', disable_any_whitespace=True, whitespace_pattern=None), None, "grammar"),
        (so(json=SCHEMA, disable_fallback=True, disable_additional_properties=False), None, "json"),
        ({}, {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}}, "json"),
        ({}, {"type": "json_object"}, "json"),
        ({}, NEW_TAG, "structural_tag"),
        ({}, LEGACY_TAG, "structural_tag"),
        ({"skip_special_tokens": False}, None, None),
        (None, {"type": "text"}, None),
        (so(json=None, grammar='root ::= "x"'), None, "grammar"),  # None means "not set", as in vLLM
    ],
)
def test_accepted_fields_compile(extra_body, response_format, kind):
    art = constraint_from_request(extra_body, response_format)
    if kind is None:
        assert art is None
        return
    assert isinstance(art, ConstraintArtifact) and art.kind == kind and isinstance(art.value, str)
    from harness.grammar.compile import compile_artifact

    compiled = compile_artifact(art, "qwen")  # the artifact is one xgrammar really compiles
    assert compiled.compile_ms >= 0


def test_choice_grammar_matches_exactly_the_choices(qwen_tokenizer):
    from harness.grammar.compile import compile_artifact
    from harness.grammar.walk import walk_text

    art = constraint_from_request(so(choice=["yes", 'say "no"\\']), None)
    compiled = compile_artifact(art, "qwen").compiled
    assert walk_text(compiled, qwen_tokenizer, 'say "no"\\').accepted
    assert walk_text(compiled, qwen_tokenizer, "yes").accepted
    assert not walk_text(compiled, qwen_tokenizer, "maybe").accepted


def test_json_object_and_response_format_schema_values():
    assert json.loads(constraint_from_request(so(json_object=True), None).value) == {"type": "object"}
    rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}
    assert json.loads(constraint_from_request(None, rf).value) == SCHEMA
    assert json.loads(constraint_from_request(None, NEW_TAG).value) == NEW_TAG


@pytest.mark.parametrize(
    ("extra_body", "response_format", "message"),
    [
        (so(jsn=SCHEMA), None, "unknown structured_outputs field"),
        (so(json_schema=SCHEMA), None, "unknown structured_outputs field"),
        (so(_backend="xgrammar", json=SCHEMA), None, "unknown structured_outputs field"),
        ({"guided_json": SCHEMA}, None, "removed from vLLM"),
        ({"guided_grammar": "root ::= x"}, None, "removed from vLLM"),
        (so(json=SCHEMA, grammar='root ::= "a"'), None, "only one kind"),
        (so(grammar='root ::= "a"'), {"type": "json_object"}, "only one kind"),
        (so(), None, "names no constraint"),
        (so(disable_any_whitespace=True), None, "names no constraint"),
        (so(structural_tag=NEW_TAG), None, "must be a string"),
        (so(structural_tag="not json"), None, "not valid JSON"),
        (so(json=["a"]), None, "JSON schema object"),
        (so(json="{not json"), None, "not valid JSON"),
        (so(grammar={"rules": []}), None, "EBNF string"),
        (so(choice="yes"), None, "list of strings"),
        (so(choice=[]), None, "list of strings"),
        (so(regex=5), None, "must be a string"),
        (so(json_object=False), None, "must be true"),
        (so(grammar="root ::= x", disable_any_whitespace="yes"), None, "must be bool"),
        ({"structured_outputs": "json"}, None, "must be an object"),
        ({}, {"type": "xml"}, "is not one of"),
        ({}, {"type": "json_schema", "json_schema": {"schema": SCHEMA}}, "name"),
        ({}, {"type": "json_schema", "json_schema": {"name": "x"}}, "schema must be"),
        ({}, {"type": "structural_tag"}, "structures"),
        ({}, {"type": "structural_tag", "structures": [{"begin": 1, "end": "x"}], "triggers": []}, "begin"),
    ],
)
def test_rejected(extra_body, response_format, message):
    with pytest.raises(ConstraintError, match=message):
        constraint_from_request(extra_body, response_format)


def test_compile_errors_are_constraint_errors():
    from harness.grammar.compile import compile_artifact

    with pytest.raises(ConstraintError, match="cannot compile"):
        compile_artifact(ConstraintArtifact("grammar", "root ::= undefined_rule"), "qwen")
    with pytest.raises(ConstraintError, match="structural_tag"):
        compile_artifact(ConstraintArtifact("structural_tag", "[1, 2]"), "qwen")


def test_second_compile_is_cached():
    from harness.grammar.compile import compile_artifact

    art = ConstraintArtifact("grammar", 'root ::= "cache-me" [0-9]+')
    first = compile_artifact(art, "qwen")
    again = compile_artifact(art, "qwen")
    assert not first.cached and again.cached
