"""The token bound of a run: one explicit setting per model response, recorded in run.json.

Where it comes from, first that applies: ``--max-tokens``; the suite's ``max_tokens`` (suite.yaml);
else derived from the suite itself: the longest gold answer of any case, family and strategy of the
suite, in the family's tokens, times :data:`HEADROOM`, rounded up to a multiple of 16 and at least
:data:`MINIMUM`. So every correct answer fits, a runaway answer costs a bounded time, and the bound of
a suite does not depend on ``--limit`` or on the engine. An answer the bound cuts ends with
``finish_reason: length`` and scores as ``length:max_tokens`` (see ``harness.eval.score.scoring``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from harness.agents import Agent
from harness.eval.data import Suite

HEADROOM = 1.5
"""How much longer than the longest gold answer an answer may be."""
MINIMUM = 64
"""The smallest derived bound: room for a short plain-text answer in any suite."""
ROUND_TO = 16


@dataclass(frozen=True, slots=True)
class TokenBound:
    """The bound and where it came from."""

    max_tokens: int
    source: str
    """``--max-tokens``, ``suite.yaml max_tokens`` or how it was derived, in words (for run.json)."""


@dataclass(frozen=True, slots=True)
class LongestGold:
    tokens: int
    case_id: str
    family: str
    strategy: str
    estimated: bool
    """No tokenizer for the family here: counted as UTF-8 bytes / 2 (an over-estimate for these formats)."""


def derive(longest: LongestGold) -> int:
    """``HEADROOM`` x the longest gold answer, rounded up to ``ROUND_TO``, at least ``MINIMUM``."""
    return max(MINIMUM, math.ceil(longest.tokens * HEADROOM / ROUND_TO) * ROUND_TO)


def longest_gold(suite: Suite, agent: Agent) -> LongestGold | None:
    """The longest gold answer of the suite's cases for every family and strategy the suite lists, as
    the oracle renders it with ``agent``'s constraint settings (a closing text answer included), in
    the family's tokens."""
    from harness.engines import CLOSING_TEXT
    from harness.eval.run.sample import gold_answers

    best: LongestGold | None = None
    text_answer = suite.text_answer
    lane_agents = [agent.variant(family=family, strategy=strategy, allow_text_answer=text_answer)
                   for family in suite.spec.families for strategy in suite.spec.strategies]
    for agent in lane_agents:
        count, estimated = _counter(agent.family)
        constraint = agent.constraint
        for case in suite.cases:
            for calls in gold_answers(case, constraint.allow_parallel_calls):
                text = (agent.adapter.render_output(calls, constraint) if calls
                        else agent.adapter.render_text(CLOSING_TEXT, constraint))
                tokens = count(text)
                if best is None or tokens > best.tokens:
                    best = LongestGold(tokens, case.id, agent.family, constraint.strategy, estimated)
    return best


def _counter(family: str) -> tuple[Callable[[str], int], bool]:
    from harness.grammar import TokenizerUnavailable, get_tokenizer

    try:
        tokenizer = get_tokenizer(family)
    except TokenizerUnavailable:
        return (lambda text: math.ceil(len(text.encode("utf-8")) / 2)), True
    return (lambda text: len(tokenizer.encode(text))), False


def choose_token_bound(given: int | None, suite: Suite, agent: Agent) -> TokenBound:
    """The run's bound: ``--max-tokens`` (``given``), the suite's, or derived (see the module) with the
    bundle's ``agent``."""
    if given is not None:
        return TokenBound(given, "--max-tokens")
    if suite.spec.max_tokens is not None:
        return TokenBound(suite.spec.max_tokens, "suite.yaml max_tokens")
    longest = longest_gold(suite, agent)
    if longest is None:
        return TokenBound(MINIMUM, "the minimum bound (the suite has no gold answer to measure)")
    unit = "tokens, estimated from UTF-8 bytes" if longest.estimated else "tokens"
    return TokenBound(
        derive(longest),
        f"derived: {HEADROOM:g} x the longest gold answer ({longest.tokens} {unit}: case {longest.case_id}, "
        f"{longest.family}/{longest.strategy}), rounded up to {ROUND_TO}, at least {MINIMUM}",
    )


__all__ = ["HEADROOM", "MINIMUM", "LongestGold", "TokenBound", "choose_token_bound", "derive", "longest_gold"]
