"""The checks of one cell (one tool in one lane: a family x strategy), the issue's a-e, on examples drawn
beforehand.

a. each valid call, rendered in the family's format, is accepted token by token, and the grammar can
   end right after it;
b. the family's parser gives exactly that call back;
c. near-miss mutants are rejected, or, where the strategy does not enforce the keyword they break,
   accepted and named so (``not_enforced``);
d. seeded random walks through the mask, from the tool's call prefix, end in text the parser reads and
   the schema accepts;
e. truncated and arbitrary texts give the parser typed errors, never an exception.

Each check that fails keeps its first example (a value, or a value and a mutant seed) so that the
runner can ask Hypothesis to shrink it with the same check as the predicate.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.agents import ConstraintError, DecodingConstraint, ToolCall, ToolSchema
from harness.fuzz.mutants import Mutant, Verdict, escaping_mutant, judge, value_mutants
from harness.fuzz.outcomes import CellReport, Counterexample, Outcome, grammar_limit, let_through, worst
from harness.fuzz.walker import GrammarWalker, call_prefix
from harness.grammar.families import enforces
from harness.stats import rounded_percentile

TIMED_TEXTS = 32
"""Valid texts per cell whose walks fill and time the mask at every token."""
WALK_TOKENS = 160
NOISE = ["<start_function_call>", "<end_function_call>", "call:", "<escape>", "<tool_call>", "</tool_call>",
         "\n", "{", "}", "[", "]", ":", ",", '"', '"name": ', '"arguments": ', "true", "-1.5e3", "null"]


@dataclass
class Grammar:
    """One family x strategy constraint, compiled for the tools that built."""

    family: str
    strategy: str
    adapter: Any
    constraint: DecodingConstraint
    tools: list[ToolSchema]
    """The tools the constraint holds (those whose build failed are left out)."""
    walker: GrammarWalker | None = None
    target: GrammarWalker | None = None
    """vLLM's grammar for the same constraint (``--target vllm``)."""
    compile_ms: float | None = None
    build_errors: dict[str, str] = field(default_factory=dict)
    """Tool name -> why its constraint does not build (or why nothing compiled: key ``*``)."""
    checks: dict[str, Any] = field(default_factory=dict)
    """The validator of each tool's strict schema, by name (the oracle's)."""
    artifact: Any = None
    """The constraint artifact compiled (what a second engine converts, ``--reference``)."""
    reference: Any = None
    """The second engine's matcher on this constraint, or why it cannot read it (built on first use)."""


@dataclass
class ToolCase:
    """One tool and what was drawn for it."""

    tool: ToolSchema
    check: Any
    """The validator of the tool's strict schema."""
    values: list[dict[str, Any]] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    """A mutant seed per value."""
    mutants: list[list[Mutant]] = field(default_factory=list)
    """The value mutants of each value (the same in every cell), drawn once."""
    parsed: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(family, text) -> what the parser said of a valid call's text (ebnf and structural_tag share texts)."""
    verdicts: dict[tuple[str, str], Verdict] = field(default_factory=dict)
    """(family, text) -> the oracle's verdict on a text mutant. Apart from ``parsed``: a mutant's text can
    be a valid call's text (a large draw meets one), and the two answers are not the same kind."""
    problem: tuple[Outcome, str] | None = None
    """Why nothing (or not enough) could be drawn."""
    tools_seen: list[ToolSchema] = field(default_factory=list)
    """Every tool of the set (an unknown-tool mutant's name must be none of theirs)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A failed check and what reproduces it."""

    outcome: Outcome
    why: str
    expect: str
    keyword: str | None = None
    call: ToolCall | None = None
    text: str | None = None
    value: Any = None
    seed: int | None = None
    """Set for mutant findings: the mutant seed (shrinkable with the value)."""


def render(grammar: Grammar, calls: Sequence[ToolCall]) -> str | None:
    """The calls as the family writes them under the strategy; None when its syntax cannot hold them."""
    try:
        return str(grammar.adapter.render_output(list(calls), grammar.constraint))
    except (ConstraintError, ValueError, TypeError):
        return None


def check_valid(grammar: Grammar, case: ToolCase, value: dict[str, Any], *, timed: bool = False,
                masks: list[float] | None = None) -> Finding | None:
    """Checks a and b on one valid value; also the target's verdict."""
    call = ToolCall.create(case.tool.name, value)
    text = render(grammar, [call])
    if text is None or grammar.walker is None:
        return None
    got = grammar.walker.accepts_text(text, timed=timed)
    if masks is not None:
        masks.extend(got.mask_us)
    if not got.accepted:
        at = got.rejected_at if got.rejected_at is not None else 0
        where = "the end" if at >= len(got.ids) else f"token {at} {grammar.walker.tok.token_text(got.ids[at])!r}"
        if (limit := grammar_limit(grammar.family, grammar.strategy, case.tool.parameters, value)) is not None:
            return Finding(Outcome.grammar_limit, f"valid call rejected at {where}: {limit}", "accepted", call=call, value=value)
        return Finding(Outcome.validation_error, f"valid call rejected at {where}", "accepted", call=call, value=value)
    try:
        parsed = case.parsed.get((grammar.family, text))
        if parsed is None:
            parsed = case.parsed[(grammar.family, text)] = grammar.adapter.parse_response(text, [], grammar.tools)
    except Exception as exc:  # the parser must never raise
        return Finding(Outcome.parser_crash, f"{type(exc).__name__}: {exc}", "accepted", call=call, text=text, value=value)
    if parsed.errors or len(parsed.tool_calls) != 1 or not same_call(parsed.tool_calls[0], call):
        got_text = [f"{c.name}{c.arguments}" for c in parsed.tool_calls] or [e.kind for e in parsed.errors]
        return Finding(Outcome.round_trip_error, f"parsed back as {got_text}"[:300], "accepted", call=call, value=value)
    return target_check(grammar, got.ids, True, call=call, value=value)


def target_check(grammar: Grammar, ids: Sequence[int], accepted: bool, **where: Any) -> Finding | None:
    """A ``target_disagreement`` when vLLM's grammar judges ``ids`` otherwise than the harness's."""
    if grammar.target is None:
        return None
    theirs = grammar.target.accepts(ids).accepted
    if theirs == accepted:
        return None
    said = "accepts" if theirs else "rejects"
    return Finding(Outcome.target_disagreement, f"vLLM's grammar {said} what the harness's "
                   f"{'accepts' if accepted else 'rejects'}", "accepted" if accepted else "rejected", **where)


def check_mutants(grammar: Grammar, case: ToolCase, value: dict[str, Any], seed: int,
                  notes: Counter[str] | None = None, mutants: list[Mutant] | None = None) -> tuple[int, int, list[Finding]]:
    """Check c on the mutants of one value (``mutants``: the value mutants, when drawn already):
    (mutants checked, accepted, failures)."""
    call = ToolCall.create(case.tool.name, value)
    mutants = list(mutants if mutants is not None else value_mutants(grammar.tools, call, case.check, seed))
    text = render(grammar, [call])
    if text is not None:
        broken = escaping_mutant(grammar.family, grammar.strategy, text, seed)
        if broken is not None:
            mutants.append(broken)
    checked = accepted = 0
    found: list[Finding] = []
    for mutant in mutants:
        finding, was_accepted, counted = _one_mutant(grammar, case, mutant, value, seed, notes)
        checked += counted
        accepted += was_accepted
        if finding is not None:
            found.append(finding)
    return checked, accepted, found


def _one_mutant(grammar: Grammar, case: ToolCase, mutant: Mutant, value: Any, seed: int,
                notes: Counter[str] | None) -> tuple[Finding | None, bool, bool]:
    assert grammar.walker is not None
    text = mutant.text if mutant.text is not None else render(grammar, [mutant.call] if mutant.call else [])
    if not text:
        return None, False, False
    keyword = mutant.keyword
    if mutant.text is not None:  # a text mutant counts only when the oracle calls it invalid
        try:
            verdict = case.verdicts.get((grammar.family, text))
            if verdict is None:
                verdict = case.verdicts[(grammar.family, text)] = judge(
                    grammar.adapter, text, grammar.tools, grammar.checks, parallel=False)
        except Exception as exc:
            return Finding(Outcome.parser_crash, f"{type(exc).__name__}: {exc}", "rejected", text=text,
                           value=value, seed=seed), False, True
        if verdict.valid:
            return None, False, False
        if verdict.keyword and not verdict.keyword.startswith("parse:"):
            keyword = verdict.keyword  # the broken escape still parses: judge by what the value breaks
    got = grammar.walker.accepts_text(text)
    where = {"call": mutant.call, "text": mutant.text, "value": value, "seed": seed, "keyword": keyword}
    if not got.accepted:
        return target_check(grammar, got.ids, False, **where), False, True
    if not enforces(grammar.family, grammar.strategy, keyword) and keyword not in ("tool", "escaping"):
        if notes is not None:
            notes[keyword] += 1
        return None, True, True
    return Finding(let_through(grammar.family, grammar.strategy), f"accepted: {mutant.what} (breaks {keyword})",
                   "rejected", **where), True, True


def same_call(a: ToolCall, b: ToolCall) -> bool:
    return a.name == b.name and same_json(a.arguments, b.arguments)


def same_json(a: Any, b: Any) -> bool:
    """Equal values of equal JSON types (True is not 1, 1 is not 1.0): a round trip gives back types."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def random_walks(grammar: Grammar, case: ToolCase, count: int, seed: int,
                 notes: Counter[str], deadline: float = math.inf) -> tuple[int, int, list[Finding]]:
    """Check d: (walks that ended, invalid ones, findings); the walks stop at ``deadline``."""
    assert grammar.walker is not None
    empty = render(grammar, [ToolCall.create(case.tool.name, {})])
    if empty is None:
        return 0, 0, []
    prefix = grammar.walker.tok.encode(call_prefix(empty, "{}"))
    rng = np.random.default_rng(seed)
    ended = invalid = 0
    found: list[Finding] = []
    for _ in range(count):
        if time.monotonic() > deadline:
            break
        walk = grammar.walker.random_walk(prefix, rng, WALK_TOKENS)
        if walk is None or not (walk.ended or walk.mismatch):
            continue
        text = grammar.walker.tok.decode([*prefix, *walk.ids])
        if walk.mismatch:
            found.append(Finding(Outcome.invalidation_error, "the mask allowed a token accept_token refused",
                                 "rejected", text=text))
            continue
        ended += 1
        finding = _judge_walk(grammar, case, text, notes)
        if finding is not None:
            invalid += 1
            found.append(finding)
        elif (target := target_check(grammar, [*prefix, *walk.ids], True, text=text)) is not None:
            found.append(target)
    return ended, invalid, found


def _judge_walk(grammar: Grammar, case: ToolCase, text: str, notes: Counter[str]) -> Finding | None:
    try:
        verdict = judge(grammar.adapter, text, grammar.tools, grammar.checks,
                        parallel=grammar.constraint.allow_parallel_calls)
    except Exception as exc:
        return Finding(Outcome.parser_crash, f"{type(exc).__name__}: {exc}", "rejected", text=text)
    if verdict.valid:
        return None
    keyword = verdict.keyword or "?"
    if not keyword.startswith("parse:") and keyword not in ("tool", "parallel") and not enforces(
            grammar.family, grammar.strategy, keyword):
        notes[keyword] += 1
        return None
    call = _canonical(grammar, verdict)
    return Finding(let_through(grammar.family, grammar.strategy),
                   f"a random walk reached a text that breaks {keyword}: {verdict.reason}"[:300], "rejected",
                   keyword=keyword, text=None if call else text, call=call)


def _canonical(grammar: Grammar, verdict: Verdict) -> ToolCall | None:
    """The walk's one call, when its canonical rendering is accepted too (a calls line beats a text)."""
    if len(verdict.calls) != 1 or grammar.walker is None:
        return None
    text = render(grammar, verdict.calls)
    return verdict.calls[0] if text is not None and grammar.walker.accepts_text(text).accepted else None


def parser_noise(grammar: Grammar, texts: Sequence[str], seed: int) -> tuple[int, Finding | None]:
    """Check e: truncations of the valid texts and arbitrary texts must give typed errors."""
    rng = random.Random(seed)
    checked = 0
    for text in texts:
        cut = text[: rng.randrange(len(text))] if text else ""
        noise = "".join(rng.choice(NOISE) if rng.random() < 0.6 else chr(rng.randrange(32, 0x3000))
                        for _ in range(rng.randrange(1, 24)))
        for sample, truncated in ((cut, True), (noise, False)):
            checked += 1
            try:
                parsed = grammar.adapter.parse_response(sample, [], grammar.tools)
            except Exception as exc:
                return checked, Finding(Outcome.parser_crash, f"{type(exc).__name__}: {exc}", "rejected", text=sample)
            typed = all(e.kind.startswith("parse:") for e in parsed.errors) and all(
                isinstance(c.arguments, dict) for c in parsed.tool_calls)
            if not typed or (truncated and not parsed.errors and parsed.tool_calls):
                why = "untyped parse result" if not typed else "a truncated answer parsed without an error"
                return checked, Finding(Outcome.round_trip_error, why, "rejected", text=sample)
    return checked, None


@dataclass
class CellState:
    """What one cell has seen so far."""

    report: CellReport
    findings: dict[Outcome, Finding] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    masks: list[float] = field(default_factory=list)

    def add(self, finding: Finding | None) -> None:
        if finding is None:
            return
        self.counts[finding.outcome.value] += 1
        self.findings.setdefault(finding.outcome, finding)


def run_cell(grammar: Grammar, case: ToolCase, *, walks: int, seed: int, deadline: float,
             tick: Callable[[], None] | None = None) -> CellState:
    """Every check of one cell, until ``deadline`` (``time.monotonic``)."""
    report = CellReport(tool=case.tool.name, family=grammar.family, strategy=grammar.strategy,
                        outcome=Outcome.passing, compile_ms=grammar.compile_ms)
    state = CellState(report)
    started = time.monotonic()
    texts: list[str] = []
    for i, (value, mseed) in enumerate(zip(case.values, case.seeds, strict=True)):
        if time.monotonic() > deadline:
            state.counts[Outcome.timeout.value] += 1
            break
        finding = check_valid(grammar, case, value, timed=i < TIMED_TEXTS, masks=state.masks)
        report.examples += 1
        report.valid_rejected += finding is not None and finding.outcome is Outcome.validation_error
        state.add(finding)
        if len(case.mutants) <= i:
            case.mutants.append(value_mutants(case.tools_seen, ToolCall.create(case.tool.name, value), case.check, mseed))
        checked, accepted, mfindings = check_mutants(grammar, case, value, mseed, state.notes, case.mutants[i])
        report.mutants += checked
        report.invalid_accepted += accepted
        for mfinding in mfindings:
            state.add(mfinding)
        if len(texts) < 64 and (text := render(grammar, [ToolCall.create(case.tool.name, value)])):
            texts.append(text)
        if tick is not None and i % 50 == 49:
            tick()
    if time.monotonic() <= deadline:
        report.walks, report.walks_invalid, found = random_walks(grammar, case, walks, seed, state.notes, deadline)
        for finding in found:
            state.add(finding)
        report.parsed_noise, noise = parser_noise(grammar, texts, seed)
        state.add(noise)
        if time.monotonic() > deadline:  # the walks stopped at it
            state.counts[Outcome.timeout.value] += 1
    report.seconds = round(time.monotonic() - started, 3)
    finish(state)
    return state


def finish(state: CellState) -> None:
    """Fill the report's classes, outcome and mask percentiles from what was seen."""
    report = state.report
    report.not_enforced = dict(state.notes)
    classes = {Outcome(k) for k in state.counts}
    if state.notes:
        state.counts[Outcome.not_enforced.value] += sum(state.notes.values())
        classes.add(Outcome.not_enforced)
    report.classes = dict(state.counts)
    report.target_disagreements = state.counts.get(Outcome.target_disagreement.value, 0)
    report.outcome = worst(classes)
    report.mask_us_p50 = rounded_percentile(state.masks, 50)
    report.mask_us_p99 = rounded_percentile(state.masks, 99)
    report.mask_us_max = rounded_percentile(state.masks, 100)


def counterexample(grammar: Grammar, case: ToolCase, finding: Finding, *, shrunk: bool) -> Counterexample:
    """A finding as a line of a calls file."""
    calls = [{"name": finding.call.name, "arguments": finding.call.arguments}] if finding.call is not None else None
    return Counterexample(
        outcome=finding.outcome, tool=case.tool.name, family=grammar.family, strategy=grammar.strategy,
        expect=finding.expect, calls=calls, text=None if calls else finding.text, why=finding.why,
        keyword=finding.keyword, shrunk=shrunk,
    )


__all__ = [
    "Finding",
    "Grammar",
    "ToolCase",
    "check_mutants",
    "check_valid",
    "counterexample",
    "parser_noise",
    "random_walks",
    "render",
    "run_cell",
    "same_json",
]
