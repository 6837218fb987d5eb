"""Scoring a sample of a BFCL single-turn case: the harness's metrics and BFCL's own verdict.

Each case brings its own tools, so validity checks a call against that case's converted schemas.

- ``validity``: the answer parsed and every call names one of the case's tools with arguments its
  schema accepts. In the irrelevance categories a plain-text answer is valid (no call is right there);
  elsewhere it fails ``parse:no_call``.
- ``exact_match``: the calls equal the oracle's answer (``expected``), in order. BFCL accepts more
  than that one answer: ``bfcl_match`` is the figure BFCL users know.
- ``state_match``: not applicable (nothing is executed).
- ``bfcl_match``: BFCL's verdict (``harness.eval.bfcl_ast``), its failure recorded as
  ``bfcl:<BFCL's error type>``. An answer that did not parse cleanly is, for BFCL, an answer that did
  not decode (``bfcl:ast_decoder:decoder_failed``; in the irrelevance categories: no call, which
  passes); a well-formed call of a function the entry does not have is a call for BFCL (see
  ``OTHER_FUNCTION``). An answer the token bound cut fails as ``length:max_tokens`` (BFCL has no
  bound, so its verdict on a cut answer is unknown), except in the irrelevance categories an answer
  whose calls are whole or that holds none: a call there fails whatever follows, and a plain answer
  called nothing whatever its length. A sample that ended in an error fails with its kind.
- ``bfcl_match_bad_entry``: the same verdict, on the entries tagged ``bad_entry`` only (reported
  apart: a listed answer of these entries does not fit the schema the model is sent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.bfcl.ast_check import bfcl_verdict, is_irrelevance
from harness.eval.data import BAD_ENTRY, CallSpec, SingleTurnCase
from harness.eval.score import (
    CUT,
    NOT_APPLICABLE,
    PASS,
    Call,
    Verdict,
    call_difference,
    fail,
    steps_validity,
    unparsed,
    was_cut,
)
from harness.eval.store import SampleRecord, StepRecord
from harness.vocabulary import ErrorKind, Metric

if TYPE_CHECKING:
    from harness.sandbox import SchemaCheck



class SingleTurnScoring:
    """The verdicts of single-turn samples; validators built once per case."""

    def __init__(self) -> None:
        self._validators: dict[str, dict[str, SchemaCheck]] = {}

    def _validator_of(self, case: SingleTurnCase) -> dict[str, SchemaCheck]:
        from harness.sandbox import argument_check

        found = self._validators.get(case.id)
        if found is None:
            found = self._validators[case.id] = {t.name: argument_check(t.parameters) for t in case.tool_schemas()}
        return found

    def validity(self, case: SingleTurnCase, steps: Sequence[StepRecord]) -> Verdict:
        validators = self._validator_of(case)

        def problem(call: Call) -> str | None:
            validator = validators.get(call.name)
            if validator is None:
                return ErrorKind.validity_unknown_tool
            return None if validator.is_valid(call.arguments) else ErrorKind.validity_schema

        irrelevance = is_irrelevance(case.category)
        return steps_validity(steps[:1], problem, need_call=not irrelevance, text_ends_turn=irrelevance)

    def verdicts(self, case: SingleTurnCase, sample: SampleRecord) -> dict[Metric, Verdict]:
        if sample.status == "error":
            kind = fail(sample.error_kind or "sample:error")
            verdicts: dict[Metric, Verdict] = {Metric.validity: kind, Metric.exact_match: kind, Metric.bfcl_match: kind}
        else:
            validity = self.validity(case, sample.steps)
            step = sample.steps[0] if sample.steps else None
            calls = list(step.tool_calls) if step is not None else []
            parse_failure = unparsed(validity)
            reason = call_difference(calls, case.expected)
            exact = fail(parse_failure) if parse_failure else (PASS if reason is None else fail(reason))
            verdicts = {Metric.validity: validity, Metric.exact_match: exact, Metric.bfcl_match: bfcl_match(case, step)}
        verdicts[Metric.state_match] = NOT_APPLICABLE
        if BAD_ENTRY in case.tags:
            verdicts[Metric.bfcl_match_bad_entry] = verdicts[Metric.bfcl_match]
        return verdicts


UNKNOWN = ErrorKind.parse_unknown_tool
OTHER_FUNCTION = CallSpec(name="<a function the entry does not have>", arguments={})
"""Stands for a well-formed call of an unknown function: BFCL decodes such a call and its checker
fails it by name alone (``wrong_func_name``, or no match among parallel calls), whatever its
arguments, so its arguments (which the parser does not keep) need not be known."""


def bfcl_match(case: SingleTurnCase, step: StepRecord | None) -> Verdict:
    """BFCL's verdict on the answer of ``step``. What BFCL's decoding of an answer with calls (the
    model's calls as ``{name: JSON arguments}``) sees: the parsed calls and the well-formed calls of
    unknown functions; an answer with a malformed call does not decode at all (nor does a plain
    answer). A cut answer: see the module doc."""
    if step is None:
        return fail(ErrorKind.parse_no_call)
    kinds = [e.kind for e in step.parse_errors]
    malformed = any(k not in (ErrorKind.parse_no_call, UNKNOWN) for k in kinds)
    decoded: list[Call] = [] if malformed else [*step.tool_calls, *(OTHER_FUNCTION for k in kinds if k == UNKNOWN)]
    if was_cut(step) and (not is_irrelevance(case.category) or malformed):
        return fail(CUT)  # BFCL has no bound: a cut call would have reached it whole
    verdict = bfcl_verdict(case.category, case.functions, case.possible_answer, decoded)
    return PASS if verdict.valid else fail(str(verdict.error_kind))


__all__ = ["SingleTurnScoring", "bfcl_match"]
