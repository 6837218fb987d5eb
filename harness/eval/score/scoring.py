"""Scoring: each saved sample against its case, with no engine involved.

Per sample, five metrics (scores.parquet rows), each 1/0 with a ``checker:reason`` on failure, or
null where it does not apply:

- ``validity``: the answer parsed, every call names a tool that was offered, and its arguments are
  valid for that tool's JSON schema (``harness.sandbox.validation.argument_check``: jsonschema, no
  undeclared arguments; the same check the sandbox makes before a call and ``harness validate`` makes
  of a suite). An answer the token bound cut
  (``finish_reason: length``) that yields no clean call fails as ``length:max_tokens``, not as the
  parse error the cut caused.
- ``exact_match``: the calls equal the gold calls, name and arguments, in order (SHELLper's check).
  A next-call case's ``expected_alternatives`` are accepted too. Episodes: every user turn's calls
  equal that turn's ground truth.
- ``state_match``: the predicted calls and the gold calls, executed on the bundle's tool source
  (``harness.tools``) from the case's state, leave the same state by the source's verdict (``.pym``
  tools: the same tree and working directory; Python classes: the same public attributes). Next-call
  points replay the history's calls first. Episodes: an episode the step bound cut short fails
  (``state:force_terminated``); then a benchmark's own checker judges its cases (``harness.benchmarks``) and the one
  turn-by-turn episode verdict every other (``episodes``). Null when the case has no known state
  (``state_check: false``).
- ``grammar_rejection``: 1 when the oracle engine found a gold token the grammar forbids. Only the
  oracle can measure it; null for other engines.
- ``truncated``: 1 when an answer of the sample was cut by the token bound (``length:max_tokens``),
  whatever it parsed to: cut answers are counted apart. Null for a sample with no model answer.

A sample that ended in an error (``model:timeout``, ``sample:timeout``, ``grammar:rejected_gold``...)
fails every applicable metric with that kind: failures are counted, never dropped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Protocol

from harness.agents import ToolSchema
from harness.eval.data import Case, EchoMode, EpisodeCase, NextCallCase, SingleTurnCase
from harness.eval.score.episodes import episode_verdict, unordered_subset
from harness.eval.score.golds import STATE_DIFFERENCES, Golds, compared, first_difference, state_difference
from harness.eval.score.verdicts import (
    CUT,
    NOT_APPLICABLE,
    PASS,
    Call,
    Verdict,
    blame_constraint,
    call_difference,
    checked_after,
    fail,
    same_value,
    steps_validity,
    unparsed,
    was_cut,
)
from harness.eval.store import (
    METRICS,
    CallRecord,
    CaseDetail,
    SampleRecord,
    ScoreRow,
    StateDifference,
    StepRecord,
)
from harness.tools import ToolSource, ToolUnavailable
from harness.tools import owners as tool_owners
from harness.vocabulary import HARNESS_STRATEGIES, ErrorKind, Metric

Checked = tuple[Verdict, StateDifference | None]
"""A state verdict, and on a failure where the states differ, where they part ways."""


def _steps_by_turn(steps: Sequence[StepRecord], turns: int) -> list[list[list[Call]]]:
    """Per user turn, the calls of each response (a turn the episode never reached: none)."""
    out: list[list[list[Call]]] = [[] for _ in range(turns)]
    for step in steps:
        index = step.turn or 0
        if 0 <= index < turns:
            out[index].append(list(step.tool_calls))
    return out


def _not_enforced(sample: SampleRecord) -> Verdict:
    """1 when an answer broke its lane's own constraint (``constraint:not_enforced``), else 0 (asked of
    the lanes whose constraint the harness sends, on engines that are not the oracle)."""
    if sample.error_kind == ErrorKind.constraint_not_enforced:
        return Verdict(1.0, ErrorKind.constraint_not_enforced)
    return Verdict(0.0)


# -- the scorer ---------------------------------------------------------------------------------------


class SingleTurnScoring(Protocol):
    """What the ``single_turn`` seam of ``harness.benchmarks`` makes: the verdicts of single-turn samples."""

    def validity(self, case: SingleTurnCase, steps: Sequence[StepRecord]) -> Verdict: ...

    def verdicts(self, case: SingleTurnCase, sample: SampleRecord) -> dict[Metric, Verdict]: ...


class Scorer:
    """Scores saved samples of one suite. ``tools`` are the schemas the bundle offers; ``engine`` is
    the run's engine (only the oracle measures grammar rejections); ``source`` the bundle's tool source
    the state checks run on (None: no state checks, ``owners`` then names each tool's class); ``echo_mode``
    the suite's."""

    def __init__(
        self,
        cases: Iterable[Case],
        tools: Iterable[ToolSchema],
        engine: str,
        source: ToolSource | None,
        concurrency: int = 8,
        owners: Mapping[str, str] | None = None,
        echo_mode: EchoMode = "overwrite",
        audited: bool = False,
        check_after: bool = False,
    ) -> None:
        from harness.benchmarks import SINGLE_TURN, seam
        from harness.sandbox import argument_check

        self.single_turn: SingleTurnScoring = seam(SingleTurnCase.BENCHMARK, SINGLE_TURN)()
        """Single-turn cases bring their own tools and their benchmark's verdict."""
        self.cases = {c.id: c for c in cases}
        self.schemas = {t.name: t for t in tools}
        self.owners: dict[str, str] = tool_owners(source) if source is not None else dict(owners or {})
        """Tool name -> its class, for tools of a class (a case offers its classes' tools only)."""
        self.validators = {n: argument_check(s.parameters) for n, s in self.schemas.items()}
        self.engine = engine
        self.audited = audited
        """The run walked each answer through its constraint: its samples have a ``not_enforced`` rate."""
        self.check_after = check_after
        """The run left the keywords no grammar says to this check (``validity:checked_after``)."""
        self.source = source
        self._limit = asyncio.Semaphore(concurrency)
        self.golds = Golds(source, self._limit, echo_mode)
        """The gold side of the state checks, once per case (and each case's gold outputs: ``case_detail``)."""
        self._verdicts: dict[tuple[str, str], asyncio.Future[Checked]] = {}
        self.differences: dict[str, StateDifference] = {}
        """Sample id -> where its state parted from gold's, for each sample scored whose states differ
        (details.jsonl; ``case_detail`` gives the gold side)."""

    # validity ------------------------------------------------------------------------------------

    def call_problem(self, call: Call, offered: Iterable[str] | None = None) -> str | None:
        names = set(offered) if offered is not None else self.schemas.keys()
        if call.name not in names or call.name not in self.schemas:
            return ErrorKind.validity_unknown_tool
        check = self.validators[call.name]
        if not check.is_valid(call.arguments):
            return checked_after(check, call.arguments) if self.check_after else ErrorKind.validity_schema
        return None

    def validity(
        self, steps: Sequence[StepRecord], offered: Iterable[str], need_call: bool, text_ends_turn: bool = False
    ) -> Verdict:
        """Every answer parsed, every call is known and schema-valid (``steps_validity``)."""
        names = list(offered)
        return steps_validity(steps, lambda call: self.call_problem(call, names), need_call, text_ends_turn)

    def validity_of(self, sample: SampleRecord) -> Verdict:
        """The sample's ``validity`` alone (no sandbox needed): what a run's progress shows as samples
        finish. A sample that ended in an error fails with its kind."""
        case = self.cases.get(sample.case_id)
        if case is None:
            return fail(ErrorKind.score_unknown_case)
        if sample.status == "error":
            return fail(sample.error_kind or ErrorKind.sample_error)
        if isinstance(case, SingleTurnCase):
            verdict = self.single_turn.validity(case, sample.steps)
        elif isinstance(case, NextCallCase):
            verdict = self.validity(sample.steps[:1], self.schemas, need_call=True)
        else:
            verdict = self._episode_validity(case, sample.steps)
        return blame_constraint(sample.strategy, verdict)

    # the sample ----------------------------------------------------------------------------------

    async def score(self, sample: SampleRecord) -> list[ScoreRow]:
        """The four metric rows of one sample."""
        case = self.cases.get(sample.case_id)
        verdicts: dict[Metric, Verdict]
        if case is None:
            missing = fail(ErrorKind.score_unknown_case)
            verdicts = {Metric.validity: missing, Metric.exact_match: missing, Metric.state_match: missing}
        elif sample.error_kind == ErrorKind.constraint_not_enforced:  # the server's failure: not the model's rates
            verdicts = {Metric.validity: NOT_APPLICABLE, Metric.exact_match: NOT_APPLICABLE,
                        Metric.state_match: NOT_APPLICABLE}
        elif isinstance(case, SingleTurnCase):
            verdicts = self.single_turn.verdicts(case, sample)
        elif sample.status == "error":
            kind = sample.error_kind or ErrorKind.sample_error
            state = fail(kind) if self._state_applies(case) else NOT_APPLICABLE
            verdicts = {Metric.validity: fail(kind), Metric.exact_match: fail(kind), Metric.state_match: state}
        elif isinstance(case, NextCallCase):
            verdicts = await self._next_call(case, sample)
        else:
            verdicts = await self._episode(case, sample)
        verdicts = {metric: blame_constraint(sample.strategy, v) for metric, v in verdicts.items()}
        verdicts[Metric.grammar_rejection] = self._rejection(sample)
        verdicts[Metric.truncated] = self._truncated(sample)
        if self.audited and sample.strategy in HARNESS_STRATEGIES:  # older runs, and the oracle, were not audited
            verdicts[Metric.not_enforced] = _not_enforced(sample)
        return [
            ScoreRow(
                sample_id=sample.sample_id, case_id=sample.case_id, family=sample.family,
                strategy=sample.strategy, epoch=sample.epoch, metric=metric,
                value=verdicts[metric].value, error_kind=verdicts[metric].error_kind,
            )
            for metric in METRICS
            if metric in verdicts  # a benchmark's verdicts only where they apply
        ]

    def _state_applies(self, case: Case) -> bool:
        """A state check needs a tool source and a known state (imported SHELLper points have none)."""
        return self.source is not None and not (isinstance(case, NextCallCase) and not case.state_check)

    @staticmethod
    def _truncated(sample: SampleRecord) -> Verdict:
        if not sample.steps:
            return NOT_APPLICABLE
        return Verdict(1.0, CUT) if any(was_cut(step) for step in sample.steps) else Verdict(0.0)

    def _rejection(self, sample: SampleRecord) -> Verdict:
        if self.engine != "oracle":
            return NOT_APPLICABLE
        rejected = sample.error_kind == ErrorKind.grammar_rejected_gold or any(
            step.stats is not None and step.stats.grammar_error == ErrorKind.grammar_rejected_gold for step in sample.steps
        )
        return Verdict(1.0, ErrorKind.grammar_rejected_gold) if rejected else Verdict(0.0)

    async def _next_call(self, case: NextCallCase, sample: SampleRecord) -> dict[Metric, Verdict]:
        steps = sample.steps
        validity = self.validity(steps[:1], self.schemas, need_call=True)
        calls = list(steps[0].tool_calls) if steps else []
        golds = case.gold_calls()
        parse_failure = unparsed(validity)
        if parse_failure:
            exact = fail(parse_failure)
        else:
            reasons = [call_difference(calls, [g]) for g in golds]
            exact = PASS if None in reasons else fail(str(reasons[0]))
        if not self._state_applies(case):
            state = NOT_APPLICABLE
        elif validity.error_kind:  # an invalid answer achieves nothing, whatever the sandbox made of it
            state = fail(validity.error_kind)
        else:
            state = self._keep(sample, await self._memo(case.id, [calls], lambda: self._next_call_state(case, calls)))
        return {Metric.validity: validity, Metric.exact_match: exact, Metric.state_match: state}

    def _keep(self, sample: SampleRecord, checked: Checked) -> Verdict:
        verdict, found = checked
        if found is not None:
            self.differences[sample.sample_id] = found
        return verdict

    async def _memo(
        self, case_id: str, calls: Sequence[Sequence[Call]], compute: Callable[[], Awaitable[Checked]]
    ) -> Checked:
        """The state verdict of these calls on this case, computed once: tools are deterministic, and
        the samples of one case (families, strategies, epochs) often make the very same calls."""
        plain = [[(c.name, c.arguments) for c in group] for group in calls]
        key = (case_id, json.dumps(plain, sort_keys=True, ensure_ascii=False))
        future = self._verdicts.get(key)
        if future is None:
            future = self._verdicts[key] = asyncio.get_running_loop().create_future()
            try:
                future.set_result(await compute())
            except BaseException as exc:
                del self._verdicts[key]
                future.set_exception(exc)
                future.exception()  # retrieved: an error reaches the caller below, not the loop's log
                raise
        return await asyncio.shield(future)

    async def _next_call_state(self, case: NextCallCase, calls: Sequence[Call]) -> Checked:
        assert self.source is not None
        source = self.source
        try:
            gold_runs = await self.golds.runs(case)
            predicted = (await self.golds.run(case, [calls]))[0]
        except ToolUnavailable as exc:
            return fail(exc.kind), None
        outputs = [compared(r) for r in predicted.results]
        reasons = [
            source.difference(gold.snapshot, predicted.snapshot)
            or (None if unordered_subset([compared(r) for r in gold.results], outputs) else ErrorKind.state_response_missing)
            for gold in gold_runs
        ]
        if None in reasons:
            return PASS, None
        found = None
        if reasons[0] in STATE_DIFFERENCES:
            found = state_difference(source, None, gold_runs[0].snapshot, predicted.snapshot)
        return fail(str(reasons[0])), found

    def _episode_validity(self, case: EpisodeCase, steps: Sequence[StepRecord]) -> Verdict:
        """``validity`` of every step, each against the tools its user turn offered."""
        by_turn: dict[int, list[StepRecord]] = {}
        for step in steps:
            by_turn.setdefault(step.turn or 0, []).append(step)
        for index, turn_steps in by_turn.items():
            names = [n for n in self.schemas if case.uses(self.owners.get(n))]
            verdict = self.validity(turn_steps, case.offered(names, index), need_call=False, text_ends_turn=True)
            if verdict.error_kind:
                return verdict
        if any(case.ground_truth) and not any(step.tool_calls for step in steps):
            return fail(ErrorKind.parse_no_call)
        return PASS

    async def _episode(self, case: EpisodeCase, sample: SampleRecord) -> dict[Metric, Verdict]:
        validity = self._episode_validity(case, sample.steps)
        per_turn: list[list[CallRecord]] = [[] for _ in case.ground_truth]
        for step in sample.steps:
            index = step.turn or 0
            if 0 <= index < len(per_turn):
                per_turn[index].extend(step.tool_calls)
        parse_failure = unparsed(validity)
        exact = PASS
        for model_calls, gold in zip(per_turn, case.ground_truth, strict=True):
            reason = call_difference(model_calls, gold)
            if reason:
                exact = fail(parse_failure or reason)
                break
        if not self._state_applies(case):
            state = NOT_APPLICABLE
        elif sample.max_steps_turns:  # a force-quit episode fails before any check, as upstream
            state = fail(ErrorKind.state_force_terminated)
        else:
            steps = _steps_by_turn(sample.steps, len(case.ground_truth))
            state = self._keep(sample, await self._memo(case.id, per_turn, lambda: self._episode_state(case, per_turn,
                                                                                                        steps)))
        return {Metric.validity: validity, Metric.exact_match: exact, Metric.state_match: state}

    async def _episode_state(self, case: EpisodeCase, per_turn: Sequence[Sequence[Call]],
                             steps: Sequence[Sequence[Sequence[Call]]]) -> Checked:
        """A benchmark's own checker for its cases (``case.checker``), the harness's episode verdict for every
        other (``episodes``), on the run's tool source."""
        from harness.benchmarks import EPISODE_VERDICT, seam

        assert self.source is not None
        source = self.source
        if case.checker is not None:
            benchmark, truth = case.checker
            async with self._limit:
                verdict: Verdict = await seam(benchmark, EPISODE_VERDICT)(source, case, truth, steps)
            if verdict.error_kind not in STATE_DIFFERENCES:
                return verdict, None
            try:  # the benchmark's checker answers a verdict only: where the states part ways is found here
                return verdict, first_difference(source, await self.golds.trace(case), await self.golds.run(case, per_turn))
            except ToolUnavailable:
                return verdict, None
        try:
            gold, model = await self.golds.trace(case), await self.golds.run(case, per_turn)
        except ToolUnavailable as exc:
            return fail(exc.kind), None
        return episode_verdict(source, case, per_turn, gold, model)

    async def case_detail(self, case: Case) -> CaseDetail:
        """The case's gold calls with their outputs, for details.jsonl (``Golds.detail``)."""
        return await self.golds.detail(case)

    async def score_all(self, samples: Iterable[SampleRecord]) -> list[ScoreRow]:
        """Rows of every sample, in the samples' order."""
        results = await asyncio.gather(*(self.score(s) for s in samples))
        return [row for rows in results for row in rows]


__all__ = [
    "CUT",
    "NOT_APPLICABLE",
    "PASS",
    "Call",
    "Scorer",
    "Verdict",
    "blame_constraint",
    "call_difference",
    "fail",
    "same_value",
    "unordered_subset",
    "unparsed",
    "was_cut",
]
