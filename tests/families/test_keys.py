"""Object keys as real schemas write them (trailing spaces, punctuation, letters outside ASCII): Qwen's
grammars accept every call that uses them, walked token by token with the real tokenizer; FunctionGemma,
which writes keys bare, refuses the ones it cannot spell with an error naming the key."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from harness.agents import ConstraintError, ToolCall, ToolSchema
from harness.agents.constraint import DecodingConstraint
from harness.grammar import compile_artifact, walk_text
from harness.grammar.families import get_adapter

KEYS: list[tuple[str, bool]] = [
    # (key, FunctionGemma can spell it bare)
    ("name ", False), (" lead", False), ("a b", False), ("x:y", False), ("a,b", False), ("x<y>", False),
    ("tab\tkey", False), ("é ", False), ("a.b", True), ("end.", True), ("$ref", True), ("a/b", True),
    ("ключ", True), ("日本", True), ("Straße", True), ("emoji🎉", True), ('q"uote', True), ("back\\slash", True),
    ("Name", True), ("name", True),
]
STRATEGIES = ("ebnf", "structural_tag")


def tool_of(keys: list[str]) -> ToolSchema:
    return ToolSchema("keys", "Keys as GitHub's schemas write them.", {
        "type": "object", "required": keys[:1],
        "properties": {**{k: {"type": "string"} for k in keys},
                       "nested": {"type": "object", "properties": {k: {"type": "integer"} for k in keys},
                                  "additionalProperties": {"type": "boolean"}}}})


@functools.cache
def qwen_compiled(strategy: str) -> Any:
    payload = get_adapter("qwen").build_payload([tool_of([k for k, _ in KEYS])], DecodingConstraint(strategy=strategy))
    assert payload.artifact is not None and not payload.artifact.refused
    return compile_artifact(payload.artifact, "qwen").compiled


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("key", "bare"), KEYS, ids=repr)
def test_qwen_accepts_calls_with_every_key(strategy: str, key: str, bare: bool) -> None:
    del bare
    arguments = {"name ": "first"} if key != "name " else {}
    arguments |= {key: "v", "nested": {key: 1, "other key ü": True}}
    text = get_adapter("qwen").render_output([ToolCall.create("keys", arguments)], DecodingConstraint(strategy=strategy))
    result = walk_text(qwen_compiled(strategy), "qwen", text)
    assert result.accepted, f"{text!r}: {result.reason}"


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("key", "bare"), KEYS, ids=repr)
def test_function_gemma_names_the_keys_it_cannot_spell(strategy: str, key: str, bare: bool) -> None:
    adapter = get_adapter("function_gemma")
    if bare:
        payload = adapter.build_payload([tool_of([key])], DecodingConstraint(strategy=strategy))
        assert payload.artifact is not None and not payload.artifact.refused
        return
    with pytest.raises(ConstraintError, match=re.escape(f"argument name {key!r} cannot be written in FunctionGemma's")):
        adapter.build_payload([tool_of([key])], DecodingConstraint(strategy=strategy))
    with pytest.raises(ConstraintError, match=re.escape(f"key name {key!r} cannot be written in FunctionGemma's")):
        adapter.render_output([ToolCall.create("keys", {key: "v"})], DecodingConstraint(strategy=strategy))
