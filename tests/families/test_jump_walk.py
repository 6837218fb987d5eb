"""Jump-forward on valid answers of every family and strategy (no model): the text comes out whole,
the grammar ends after it, and the tokens are the tokenizer's own (forced stretches are never split
differently from how the tokenizer writes the whole answer)."""

from __future__ import annotations

from typing import Any

import pytest
from familycases import CONSTRAINED, FAMILIES, TRICKY_STRINGS, VALID_CALLS, calls_of, compiled, constraint

from harness.grammar.families import get_adapter

PARALLEL = [("cd", {"folder": "a"}), ("tail", {"file_name": "b", "lines": 2}), ("pwd", {})]


def check_jump_walk(family: str, strategy: str, pairs: list[tuple[str, dict[str, Any]]], parallel: bool = False) -> None:
    from harness.grammar import constrained_decode, get_tokenizer
    from harness.grammar.decode import GoldTextSource

    tok = get_tokenizer(family)
    text = get_adapter(family).render_output(calls_of(*pairs), constraint(strategy, parallel))
    source = GoldTextSource(tok, text)
    own = tok.encode(text)
    res = constrained_decode(
        compiled(family, strategy, parallel), source, tok, max_tokens=2 * len(own) + 2,
        mask_policy="lazy", jump="append",
    )
    assert not source.diverged and res.error is None, f"{text!r}: {res.error} at {res.rejected_at}"
    assert res.terminated and res.text == text
    assert list(res.token_ids) == own, f"{text!r}: {[tok.token_text(t) for t in res.token_ids]}"
    assert res.forced > 0


@pytest.mark.parametrize("call", VALID_CALLS, ids=lambda c: f"{c[0]}{sorted(c[1])}")
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_valid_call(family: str, strategy: str, call: tuple[str, dict[str, Any]]) -> None:
    check_jump_walk(family, strategy, [call])


@pytest.mark.parametrize("value", TRICKY_STRINGS)
@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_tricky_string(family: str, strategy: str, value: str) -> None:
    check_jump_walk(family, strategy, [("echo", {"content": value, "file_name": value})])


@pytest.mark.parametrize("strategy", CONSTRAINED)
@pytest.mark.parametrize("family", FAMILIES)
def test_parallel_calls(family: str, strategy: str) -> None:
    check_jump_walk(family, strategy, PARALLEL, parallel=True)
