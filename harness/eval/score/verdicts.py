"""The verdict of one metric on one sample, and the checks every scorer shares.

A ``Verdict`` is a metric's value (1, 0, or None where it does not apply) and, on a failure, its
``checker:reason`` kind. ``steps_validity`` is the validity of a sample's answers given a check of one
call; ``call_difference`` compares calls as SHELLper does (name and arguments, in order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.eval.store import StepRecord
from harness.vocabulary import ErrorKind, Strategy

CUT = ErrorKind.length_max_tokens
"""The kind of an answer the token bound cut."""


@dataclass(frozen=True, slots=True)
class Verdict:
    value: float | None
    error_kind: str | None = None


PASS = Verdict(1.0)
NOT_APPLICABLE = Verdict(None)


def fail(kind: str) -> Verdict:
    return Verdict(0.0, kind)


def blame_constraint(strategy: str, verdict: Verdict) -> Verdict:
    """Under a constrained strategy, a call that breaks its tool's schema got through the grammar: the
    failure is the constraint's (``grammar:let_through``), not only the model's ``validity:schema``.
    Without a constraint nothing was left to a check after decoding: ``validity:checked_after`` is the
    model's ``validity:schema`` there."""
    if strategy != Strategy.none and verdict.error_kind == ErrorKind.validity_schema:
        return Verdict(verdict.value, ErrorKind.grammar_let_through)
    if strategy == Strategy.none and verdict.error_kind == ErrorKind.validity_checked_after:
        return Verdict(verdict.value, ErrorKind.validity_schema)
    return verdict


CHECKED_AFTER = frozenset({"uniqueItems", "propertyNames"})
"""The keywords a run may leave to the check after decoding (``harness.grammar.schema.keywords``'s
``CHECKED_AFTER``; scoring does not import the grammar builder)."""


def checked_after(check: Any, arguments: Any) -> str:
    """The kind of arguments that break their schema (``check``: the tool's ``SchemaCheck``) in a run
    that checks the keywords no grammar says after decoding: ``validity:checked_after`` when those are
    all they break, else ``validity:schema``."""
    from harness.sandbox import argument_errors

    errors = argument_errors(check, arguments)
    # a key breaking propertyNames fails the keyword inside it (``pattern``): its schema path names it
    only = all(str(e.validator) in CHECKED_AFTER or CHECKED_AFTER & {str(p) for p in e.schema_path} for e in errors)
    return ErrorKind.validity_checked_after if errors and only else ErrorKind.validity_schema


def was_cut(step: StepRecord) -> bool:
    """The token bound ended this answer (the engine said ``finish_reason: length``)."""
    return step.finish_reason == "length"


def unparsed(verdict: Verdict) -> str | None:
    """The kind of a validity failure where no clean call came out (a parse error, a cut answer)."""
    kind = verdict.error_kind
    return kind if kind is not None and (kind.startswith("parse:") or kind == CUT) else None


class Call(Protocol):
    """A tool call as both sides of a comparison have it: a suite's ``CallSpec``, a sample's ``CallRecord``."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> dict[str, Any]: ...


# -- comparing calls ----------------------------------------------------------------------------------


def same_value(a: Any, b: Any) -> bool:
    """JSON equality where a boolean never equals a number (``True == 1`` in Python) and 1 == 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def call_difference(predicted: Sequence[Call], gold: Sequence[Call]) -> str | None:
    """None when the call lists are equal, else the ``exact:*`` reason of the first difference."""
    if len(predicted) != len(gold):
        return ErrorKind.exact_call_count
    for p, g in zip(predicted, gold, strict=True):
        if p.name != g.name:
            return ErrorKind.exact_wrong_name
        if not same_value(p.arguments, g.arguments):
            return ErrorKind.exact_wrong_arguments
    return None


def steps_validity(
    steps: Sequence[StepRecord], call_problem: Callable[[Call], str | None], need_call: bool,
    text_ends_turn: bool = False,
) -> Verdict:
    """Every answer parsed and ``call_problem`` finds nothing wrong with any call. In an episode a
    plain-text answer ends the user turn (``text_ends_turn``): its ``parse:no_call`` is how the loop
    stops, not an error."""
    calls = 0
    for step in steps:
        errors = [
            e for e in step.parse_errors
            if not (text_ends_turn and e.kind == ErrorKind.parse_no_call and not step.tool_calls)
        ]
        if errors:
            return fail(CUT if was_cut(step) else errors[0].kind or ErrorKind.parse_error)
        for call in step.tool_calls:
            calls += 1
            problem = call_problem(call)
            if problem:
                return fail(problem)
    if need_call and calls == 0:
        return fail(CUT if any(was_cut(step) for step in steps) else ErrorKind.parse_no_call)
    return PASS


__all__ = [
    "CHECKED_AFTER",
    "CUT",
    "NOT_APPLICABLE",
    "PASS",
    "Call",
    "Verdict",
    "blame_constraint",
    "call_difference",
    "checked_after",
    "fail",
    "same_value",
    "steps_validity",
    "unparsed",
    "was_cut",
]
