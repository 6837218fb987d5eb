"""Plain-text answers (``allow_text_answer``): how a model ends a turn of an episode under a grammar.

Without the flag every constrained grammar forces a call; with it, a plain answer is the other
alternative, and calls are still checked exactly as before.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from familycases import calls_of, shellper_tools

from harness.agents import DecodingConstraint
from harness.grammar.families import FAMILIES, get_adapter

CONSTRAINED = ("ebnf", "structural_tag", "json_schema")

ANSWERS = [
    "Done.",
    "The file notes.txt now holds 3 lines; nothing else changed.",
    "Fertig – café, 日記 and “quotes” are fine.\nA second line too.",
]

NOT_ANSWERS_UNDER_EBNF = [
    "",  # an empty answer is no answer
    "see <start_function_call> here",  # `<` could spell an unchecked call tag
]


def constraint(strategy: str, text_answer: bool) -> DecodingConstraint:
    return DecodingConstraint(strategy=strategy, allow_text_answer=text_answer)  # type: ignore[arg-type]


@functools.cache
def compiled(family: str, strategy: str, text_answer: bool) -> Any:
    from harness.grammar import compile_artifact

    payload = get_adapter(family).build_payload(shellper_tools(), constraint(strategy, text_answer))
    assert payload.artifact is not None
    return compile_artifact(payload.artifact, family).compiled


def walk(family: str, strategy: str, text_answer: bool, text: str) -> Any:
    from harness.grammar import walk_text

    return walk_text(compiled(family, strategy, text_answer), family, text)


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_plain_answer_is_accepted_only_when_allowed(family: str, strategy: str, answer: str) -> None:
    adapter = get_adapter(family)
    text = adapter.render_text(answer, constraint(strategy, True))
    allowed = walk(family, strategy, True, text)
    assert allowed.accepted, f"{family}/{strategy} rejected the answer {text!r}: {allowed.reason}"
    if strategy != "structural_tag":  # triggered tags let free text through by design
        assert not walk(family, strategy, False, text).accepted, f"{family}/{strategy} accepted {text!r}"


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_plain_answer_parses_as_content_with_no_call(family: str, strategy: str, answer: str) -> None:
    adapter = get_adapter(family)
    parsed = adapter.parse_response(adapter.render_text(answer, constraint(strategy, True)), [], shellper_tools())
    assert parsed.tool_calls == ()
    assert parsed.content == answer.strip() or parsed.content == answer
    assert [e.kind for e in parsed.errors] == ["parse:no_call"]


@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_calls_are_still_checked_when_text_is_allowed(family: str, strategy: str) -> None:
    adapter = get_adapter(family)
    good = adapter.render_output(calls_of(("cd", {"folder": "docs"})), constraint(strategy, True))
    bad = adapter.render_output(calls_of(("cd", {"folder": 5})), constraint(strategy, True))
    assert walk(family, strategy, True, good).accepted
    assert not walk(family, strategy, True, bad).accepted


@pytest.mark.parametrize("text", NOT_ANSWERS_UNDER_EBNF)
@pytest.mark.parametrize("family", FAMILIES)
def test_ebnf_text_answers_cannot_hold_a_tag(family: str, text: str) -> None:
    assert not walk(family, "ebnf", True, text).accepted
