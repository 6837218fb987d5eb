"""What ``harness compare`` writes for CI beside its tables: the verdict as one JSON line (``Verdict``,
the last line on stdout), a Markdown summary (appended to ``$GITHUB_STEP_SUMMARY`` when that is set)
and a JUnit XML file (``--junit FILE``).

JUnit (written with junitparser): a ``gate`` suite with one test per family x strategy x gated metric
(a failure is a regression, with its reason), then one suite per family x strategy with one test per
case: it fails when the candidate failed the case on a gated rate in any epoch, and the failure
carries the error kind, whether the baseline passed there, the sample id, its link into report.html
and the answer (the model's raw output, per call). CI systems that read JUnit show both: which case
broke, and whether the run as a whole regressed.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.eval.compare.console import (
    PAIRED_HEADERS,
    flip_line,
    limits,
    paired_row,
    sample_link,
    weak_passes,
)
from harness.eval.compare.gate import Comparison
from harness.eval.compare.paired import PairedMetric
from harness.eval.compare.policy import Policy
from harness.eval.store import SampleRecord, ScoreRow, read_samples
from harness.files import xml_text
from harness.vocabulary import Metric

ANSWER_CHARS = 2000
"""Of a failing case's answer, what a JUnit failure keeps."""
FLIPS_IN_SUMMARY = 50


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class MetricVerdict(_Model):
    """One compared metric, as the JSON verdict lists it."""

    family: str
    strategy: str
    metric: str
    status: str
    """ok, improved, regression, missing, new or info."""
    reason: str
    baseline: float | None
    candidate: float | None
    cases: int | None = None
    """Paired rates: cases scored on both sides."""
    p_value: float | None = None
    p_adjusted: float | None = None
    """Paired rates: the p the verdict used (Holm-adjusted for the number of gated rates)."""
    mde: float | None = None
    """Paired rates: the smallest change the comparison could detect."""
    flips_worse: int | None = None
    """Paired rates: cases x epochs that went pass -> fail."""
    flips_better: int | None = None


class SetupVerdict(_Model):
    baseline: str | None
    """The baseline's setup digest (None: it records none)."""
    candidate: str | None
    differences: list[str]
    allowed: bool
    unchecked: list[str]


class Verdict(_Model):
    """The JSON line ``harness compare`` prints last: what a CI step reads."""

    verdict: str
    """``pass`` or ``regression``."""
    exit_code: int
    baseline: str
    candidate: str
    mode: str
    """``paired`` (case by case) or ``summary`` (summary.json only)."""
    regressions: list[MetricVerdict]
    metrics: list[MetricVerdict]
    setup: SetupVerdict
    weak: list[str]
    """Gated rates whose minimum detectable effect exceeds the minimum effect."""
    warnings: list[str]
    baseline_updated: bool = False


def _paired_verdict(p: PairedMetric) -> MetricVerdict:
    worse = sum(f.worse for f in p.flips)
    return MetricVerdict(family=p.family, strategy=p.strategy, metric=p.metric, status=p.status, reason=p.reason,
                         baseline=round(p.baseline, 6), candidate=round(p.candidate, 6), cases=p.cases,
                         p_value=p.p_value, p_adjusted=p.p_adjusted, mde=round(p.mde, 6), flips_worse=worse, flips_better=len(p.flips) - worse)


def verdict(cmp: Comparison, baseline_updated: bool = False) -> Verdict:
    """The comparison as the JSON verdict."""
    metrics = [_paired_verdict(p) for p in cmp.paired] + [
        MetricVerdict(family=d.family, strategy=d.strategy, metric=d.metric, status=d.status, reason=d.reason,
                      baseline=d.baseline, candidate=d.candidate) for d in cmp.diffs]
    regressions = [m for m in metrics if m.status in ("regression", "missing")]
    s = cmp.setup
    return Verdict(
        verdict="regression" if regressions else "pass", exit_code=1 if regressions else 0,
        baseline=str(cmp.baseline_dir), candidate=str(cmp.candidate_dir), mode=cmp.mode, regressions=regressions,
        metrics=metrics, setup=SetupVerdict(baseline=s.baseline_digest, candidate=s.candidate_digest,
                                            differences=s.differences, allowed=s.allowed, unchecked=s.unchecked),
        weak=weak_passes(cmp), warnings=cmp.warnings, baseline_updated=baseline_updated,
    )


def _md_cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown_summary(cmp: Comparison) -> str:
    """The comparison in GitHub-flavoured Markdown (the step summary of a CI job)."""
    regs = cmp.regressions
    head = f"❌ {len(regs)} regression(s)" if regs else "✅ no regression"
    md = [f"## harness compare: {head}", "",
          f"Baseline `{cmp.baseline_dir}` ({cmp.baseline_run.options.engine}) vs candidate `{cmp.candidate_dir}` "
          f"({cmp.candidate_run.options.engine}); {limits(cmp)}.", ""]
    md += [f"- **{r.family}/{r.strategy}/{r.metric}**: {r.reason}" for r in regs]
    md += [f"- note: {line}" for line in weak_passes(cmp)] + [f"- warning: {w}" for w in cmp.warnings]
    if cmp.paired:
        md += ["", "| " + " | ".join([*PAIRED_HEADERS, "status"]) + " |", "|" + "---|" * (len(PAIRED_HEADERS) + 1)]
        md += ["| " + " | ".join(_md_cell(c) for c in [*paired_row(p), p.status]) + " |" for p in cmp.paired]
    flips = [(p, f) for p in cmp.paired if p.gated for f in sorted(p.flips, key=lambda f: not f.worse)]
    if flips:
        md += ["", f"### Flips ({len(flips)})", ""]
        md += [f"- {p.family}/{p.strategy}/{p.metric}: `{flip_line(f, cmp.candidate_dir)}`"
               for p, f in flips[:FLIPS_IN_SUMMARY]]
        if len(flips) > FLIPS_IN_SUMMARY:
            md.append(f"- ... {len(flips) - FLIPS_IN_SUMMARY} more (see the JUnit file)")
    return "\n".join(md) + "\n"


STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def step_summary_target(environ: dict[str, str] | None = None) -> Path | None:
    """``$GITHUB_STEP_SUMMARY`` when it is set, checked to take the summary (InputFileError otherwise: a
    directory, FIFO or device, or an unwritable folder); None when it is not set."""
    from harness.files import check_output_file

    target = (environ if environ is not None else dict(os.environ)).get(STEP_SUMMARY_ENV)
    if not target:
        return None
    check_output_file(target, f"${STEP_SUMMARY_ENV}")
    return Path(target)


def append_step_summary(cmp: Comparison, environ: dict[str, str] | None = None) -> Path | None:
    """Append the Markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set; the file written, or None.
    Opened without blocking and appended only when it is a regular file (a FIFO would hang the gate)."""
    import stat

    target = step_summary_target(environ)
    if target is None:
        return None
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"${STEP_SUMMARY_ENV} {str(target)!r} is not a regular file")
        os.write(fd, markdown_summary(cmp).encode("utf-8"))
    finally:
        os.close(fd)
    return target


def _answer(sample: SampleRecord | None) -> str:
    if sample is None:
        return "(samples.jsonl does not hold this sample)"
    calls = [f"call {i + 1}: {step.output if step.output is not None else '(no text)'}"
             for i, step in enumerate(sample.steps)]
    text = "\n".join(calls) or f"(no model call: {sample.error_kind or 'no error kind'}: {sample.error or ''})"
    return text[:ANSWER_CHARS] + ("..." if len(text) > ANSWER_CHARS else "")


def _fails(row: ScoreRow) -> bool:
    """A gated rate's score that is a failure (an accuracy below 1, a rejection or truncation above 0)."""
    value = float(row.value or 0.0)
    return value < 1.0 if Policy.higher_is_better(row.metric) else value > 0.0


def _case_failures(cmp: Comparison) -> dict[tuple[str, str], dict[str, list[ScoreRow]]]:
    """(family, strategy) -> case -> its failing score rows of gated rates (cases that passed: [])."""
    out: dict[tuple[str, str], dict[str, list[ScoreRow]]] = defaultdict(dict)
    for row in cmp.candidate_scores or ():
        if row.value is not None and row.metric in cmp.policy.metrics:
            failing = out[(row.family, row.strategy)].setdefault(row.case_id, [])
            if _fails(row):
                failing.append(row)
    return out


def _baseline_failed(cmp: Comparison) -> set[tuple[str, str, str, str]]:
    """(family, strategy, metric, case) the baseline failed in some epoch."""
    return {(r.family, r.strategy, r.metric, r.case_id) for r in cmp.baseline_scores or ()
            if r.value is not None and r.metric in cmp.policy.metrics and _fails(r)}


def _failure_words(rows: list[ScoreRow], epochs: int, failed_before: set[tuple[str, str, str, str]]) -> list[str]:
    """``metric: kind, kind (2 of 3 epochs; passed in the baseline)`` per failed metric of a case."""
    by_metric: dict[str, list[ScoreRow]] = defaultdict(list)
    for row in rows:
        by_metric[row.metric].append(row)
    words = []
    for metric, failed in by_metric.items():
        first = failed[0]
        notes = [f"{len(failed)} of {max(epochs, len(failed))} epochs"] if epochs > 1 else []
        known = (first.family, first.strategy, metric, first.case_id) in failed_before
        notes.append("failed in the baseline too" if known else "passed in the baseline")
        kinds = ", ".join(sorted({r.error_kind or "no error kind" for r in failed}))
        words.append(f"{metric}: {kinds} ({'; '.join(notes)})")
    return words


def write_junit(cmp: Comparison, path: Path) -> Path:
    """The JUnit XML file (module doc), written atomically."""
    from junitparser import Failure, JUnitXml, TestCase, TestSuite

    xml = JUnitXml("harness compare")
    gate = TestSuite("gate")
    for m in verdict(cmp).metrics:
        if m.status == "info" or m.status == "new":
            continue
        case = TestCase(xml_text(f"{m.family}/{m.strategy}/{m.metric}"), "harness.compare.gate")
        if m.status in ("regression", "missing"):
            case.result = [Failure(xml_text(m.reason), m.status)]
        gate.add_testcase(case)
    xml.add_testsuite(gate)
    samples = cmp.candidate_samples if cmp.candidate_samples is not None else read_samples(cmp.candidate_dir)
    by_id = samples.samples if samples is not None else {}
    failed_before = _baseline_failed(cmp)
    epochs: dict[tuple[str, str, str], int] = defaultdict(int)
    for row in cmp.candidate_scores or ():
        if row.metric == Metric.validity:
            epochs[(row.family, row.strategy, row.case_id)] += 1
    suite = cmp.candidate_run.suite.name
    for (family, strategy), cases in sorted(_case_failures(cmp).items()):
        lane = TestSuite(xml_text(f"{suite}/{family}/{strategy}"))
        for case_id, rows in sorted(cases.items()):
            case = TestCase(xml_text(case_id), xml_text(f"{suite}.{family}.{strategy}"))
            if rows:
                first = rows[0]
                words = _failure_words(rows, epochs.get((family, strategy, case_id), 1), failed_before)
                failure = Failure(xml_text(" | ".join(words)), xml_text(first.error_kind or "fail"))
                failure.text = xml_text(f"sample {first.sample_id}\n{sample_link(cmp.candidate_dir, first.sample_id)}\n"
                                        f"answer:\n{_answer(by_id.get(first.sample_id))}")
                case.result = [failure]
            lane.add_testcase(case)
        xml.add_testsuite(lane)
    xml.update_statistics()
    tmp = path.with_name(path.name + ".tmp")
    xml.write(str(tmp), pretty=True)
    os.replace(tmp, path)
    return path


__all__ = [
    "STEP_SUMMARY_ENV", "MetricVerdict", "SetupVerdict", "Verdict", "append_step_summary", "markdown_summary",
    "step_summary_target", "verdict", "write_junit",
]
