"""The policy for keywords no grammar says (``uniqueItems``, a ``propertyNames`` that constrains):
refused by default, or (``--unenforceable check``, ``DecodingConstraint.check_after``) the tool
constrained by the rest of its schema and the keyword checked after decoding, a call breaking only it
scored ``validity:checked_after``."""

from __future__ import annotations

from typing import Any

import pytest

from harness.agents import ToolCall, ToolSchema
from harness.agents.constraint import DecodingConstraint
from harness.eval.score.scoring import Scorer
from harness.eval.score.verdicts import CHECKED_AFTER, Verdict, blame_constraint
from harness.grammar import compile_artifact, walk_text
from harness.grammar.families import get_adapter
from harness.grammar.schema.keywords import CHECKED_AFTER as BUILDER_CHECKED_AFTER
from harness.run_options import RunOptions

TAGS = ToolSchema("tags", "Tag a file.", {"type": "object", "required": ["tags"], "properties": {
    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "n": {"type": "integer"}}})
ENV = ToolSchema("env", "Set variables.", {"type": "object", "required": ["vars"], "properties": {
    "vars": {"type": "object", "propertyNames": {"pattern": "^[A-Z_]+$"}, "additionalProperties": {"type": "string"}}}})
PLAIN = ToolSchema("plain", "A plain tool.", {"type": "object", "properties": {"a": {"type": "string"}}})

REFUSED: list[tuple[str, bool, set[str]]] = [
    # (strategy, check_after, tools refused): json_schema refuses what vLLM refuses (uniqueItems) either way
    ("ebnf", False, {"tags", "env"}), ("structural_tag", False, {"tags", "env"}), ("json_schema", False, {"tags", "env"}),
    ("ebnf", True, set()), ("structural_tag", True, set()), ("json_schema", True, {"tags"}),
]


@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
@pytest.mark.parametrize(("strategy", "check_after", "refused"), REFUSED)
def test_the_policy_refuses_or_builds_the_rest(family: str, strategy: str, check_after: bool, refused: set[str]) -> None:
    payload = get_adapter(family).build_payload([TAGS, ENV, PLAIN], DecodingConstraint(strategy=strategy,
                                                                                       check_after=check_after))
    assert payload.artifact is not None
    assert set(dict(payload.artifact.refused)) == refused
    if check_after and strategy != "json_schema":  # the rest is enforced; the keyword is not
        compiled = compile_artifact(payload.artifact, family).compiled
        render = get_adapter(family).render_output
        for arguments, accepted in (({"tags": ["a", "a"]}, True), ({"tags": ["a"], "n": "x"}, False)):
            text = render([ToolCall.create("tags", arguments)], DecodingConstraint(strategy=strategy))
            assert walk_text(compiled, family, text).accepted is accepted, text


SCORED: list[tuple[dict[str, Any], str, bool, str | None]] = [
    # (arguments of a call to tags, strategy, check_after, the call's kind after blame_constraint)
    ({"tags": ["a", "a"]}, "ebnf", True, "validity:checked_after"),
    ({"tags": ["a", "a"]}, "ebnf", False, "grammar:let_through"),
    ({"tags": ["a", "a"]}, "none", True, "validity:schema"),
    ({"tags": ["a", "a"], "n": "x"}, "ebnf", True, "grammar:let_through"),
    ({"tags": ["a", "b"]}, "ebnf", True, None),
]


@pytest.mark.parametrize(("arguments", "strategy", "check_after", "kind"), SCORED)
def test_a_keyword_left_to_the_check_is_its_own_outcome(arguments: dict[str, Any], strategy: str, check_after: bool,
                                                       kind: str | None) -> None:
    scorer = Scorer([], [TAGS, ENV], "oracle", None, check_after=check_after)
    found = scorer.call_problem(ToolCall.create("tags", arguments))
    assert blame_constraint(strategy, Verdict(0.0 if found else 1.0, found)).error_kind == kind


def test_env_keys_are_checked_after_too() -> None:
    scorer = Scorer([], [TAGS, ENV], "oracle", None, check_after=True)
    assert scorer.call_problem(ToolCall.create("env", {"vars": {"lower": "x"}})) == "validity:checked_after"
    assert scorer.call_problem(ToolCall.create("env", {"vars": {"OK": "x"}})) is None


def test_scoring_and_the_builder_name_the_same_keywords() -> None:
    assert set(BUILDER_CHECKED_AFTER) == CHECKED_AFTER


@pytest.mark.parametrize(("given", "expected"), [(None, None), ("refuse", "refuse"), ("check", "check")])
def test_the_run_option_takes_the_two_policies(given: str | None, expected: str | None) -> None:
    assert RunOptions(unenforceable=given).unenforceable == expected  # type: ignore[arg-type]
