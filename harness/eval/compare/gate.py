"""``harness compare``: the regression gate between two runs (``compare_runs``).

The runs must compare at all (``setup_check``: both finished, one suite, one setup unless allowed).
Then, when both have scores.parquet, every rate (validity, exact_match, state_match,
grammar_rejection, truncated) is compared case by case (``paired``: exact McNemar, or a paired
bootstrap with a sign test over epochs) and regresses only when its change is significant and at
least the policy's minimum effect. Runs without per-case scores (written before they were kept, or a
baseline of summary.json alone) are compared on summary.json as before: a rate falling (or a
rejection rate rising) by more than ``max_drop`` is a regression.

Summary rules, per (family, strategy, metric):
- timings (ttft_ms_p50, latency_ms_p50, ms_per_token_p50, compile_ms, mask_us_*, tool_us_*,
  grammar_us_per_token_p50, any ``*_ms``/``*_us``): the
  candidate taking more than the policy's ratio times the baseline (default 3.0) is a regression, when
  both sides have at least ``min_timing_n`` values (default 20), and for a percentile enough values
  that 10 lie beyond it (p99: 1,000). Timings on shared CI machines move by
  2x between runs for no reason, and a percentile of a handful of values moves by more (two smoke runs
  of the same code gave tool_us_p50 from 6 values 3.2x apart), so a timing from fewer values is shown,
  not gated, and the default ratio only catches gross slowdowns; benchmarks, not this gate, track speed.
  Timings are gated only between runs measured on the same machine (run.json's ``machine``: CPU,
  cores, hashed machine id; ``timings="auto"``); across machines they are shown, not gated (``"gate"``
  forces the gate, ``"info"`` never gates). The kept smoke baseline was measured on a developer's
  machine; the same oracle run on a CI runner measured mask_us_p50 4x slower with nothing changed.
- a metric in the baseline but missing in the candidate is a regression (a metric that silently
  disappears must fail the build); a metric new in the candidate is reported, not a failure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.eval.compare.paired import PairedMetric, compare_scores
from harness.eval.compare.policy import (
    DEFAULT_MAX_DROP,
    DEFAULT_MAX_SLOWDOWN,
    DEFAULT_MIN_TIMING_N,
    TIMING_GATES,
    Policy,
    TimingGate,
)
from harness.eval.compare.setup_check import CompareError, SetupCheck, check_runs, recorded_fields
from harness.eval.store import (
    SCORES_FILE,
    SUMMARY_FILE,
    Machine,
    RunDirError,
    RunRecord,
    SampleLog,
    ScoreRow,
    SummaryRow,
    read_errors,
    read_run,
    read_samples,
    read_scores,
    read_summary,
)
from harness.vocabulary import ACCURACY_METRICS, Metric

LOWER_IS_BETTER_RATES: tuple[Metric, ...] = (Metric.grammar_rejection, Metric.truncated, Metric.target_mask_diff)
_EPS = 1e-9
TAIL_VALUES = 10
_PERCENTILE = re.compile(r"_p(\d{1,2})$")

Kind = Literal["accuracy", "rejections", "timing", "other"]
Status = Literal["ok", "improved", "regression", "missing", "new", "info"]


def metric_kind(metric: str) -> Kind:
    if metric in ACCURACY_METRICS:
        return "accuracy"
    if metric in LOWER_IS_BETTER_RATES:
        return "rejections"
    if metric.endswith(("_ms", "_us")) or metric.startswith("ms_") or "_ms_" in metric or "_us_" in metric:
        return "timing"
    return "other"


@dataclass(frozen=True, slots=True)
class Diff:
    family: str
    strategy: str
    metric: str
    kind: Kind
    baseline: float | None
    candidate: float | None
    baseline_n: int | None
    candidate_n: int | None
    status: Status
    reason: str = ""

    @property
    def change(self) -> str:
        """``+0.010`` for rates, ``x1.25`` for timings; blank when a side is missing."""
        if self.baseline is None or self.candidate is None:
            return ""
        if self.kind == "timing":
            if self.baseline > 0:
                return f"x{self.candidate / self.baseline:.2f}"
            return "" if self.candidate == 0 else "baseline 0"
        return f"{self.candidate - self.baseline:+.3f}"

    @property
    def is_regression(self) -> bool:
        return self.status in ("regression", "missing")


@dataclass(slots=True)
class Comparison:
    """Everything ``compare_runs`` found: the setup check, the paired rates, the summary diffs."""

    baseline_dir: Path
    candidate_dir: Path
    baseline_run: RunRecord
    candidate_run: RunRecord
    policy: Policy
    setup: SetupCheck
    timing_note: str = ""
    """Why timings are shown and not gated ("" when they are gated)."""
    paired: list[PairedMetric] = field(default_factory=list)
    """Rates compared case by case (empty when a run has no scores.parquet)."""
    diffs: list[Diff] = field(default_factory=list)
    """What summary.json compares: timings, rates without per-case scores, missing and new metrics."""
    warnings: list[str] = field(default_factory=list)
    baseline_scores: list[ScoreRow] | None = None
    """The baseline's scores.parquet (None: it keeps none)."""
    candidate_scores: list[ScoreRow] | None = None
    """The candidate's scores.parquet (its JUnit file lists every case from it)."""
    candidate_samples: SampleLog | None = None
    """The candidate's samples.jsonl (None: it keeps none), read once: a broken one is bad input."""

    @property
    def max_drop(self) -> float:
        return self.policy.max_drop

    @property
    def max_slowdown(self) -> float:
        return self.policy.max_slowdown

    @property
    def min_timing_n(self) -> int:
        return self.policy.min_timing_n

    @property
    def mode(self) -> str:
        """``paired`` (case by case) or ``summary`` (summary.json only, the rule before paired tests)."""
        return "paired" if self.paired else "summary"

    @property
    def regressions(self) -> list[Diff | PairedMetric]:
        return [*(p for p in self.paired if p.is_regression), *(d for d in self.diffs if d.is_regression)]


def values_needed(metric: str, min_timing_n: int) -> int:
    """How many values a timing needs before it is gated: ``min_timing_n``, and for a high percentile
    ``_pNN`` (above the median) enough values that at least ``TAIL_VALUES`` lie beyond it. A p99 of 130 values is the
    second-largest value, which one scheduler tick moves 50x; gating it made the CI gate flaky."""
    match = _PERCENTILE.search(metric)
    if match is None or int(match.group(1)) <= 50:  # a median is stable with few values
        return min_timing_n
    beyond = 1.0 - int(match.group(1)) / 100.0
    return max(min_timing_n, math.ceil(TAIL_VALUES / beyond - _EPS))


def timing_gate_note(baseline: RunRecord, candidate: RunRecord, timings: TimingGate) -> str:
    """Why timings are not gated between these runs, or "" when they are."""
    if timings == "gate":
        return ""
    if timings == "info":
        return "timings not gated (--timings info)"
    b, c = baseline.machine, candidate.machine
    if b is None or c is None:
        return "timings not gated: a run does not record its machine"
    if b != c:
        return f"timings not gated: measured on other machines ({_machine_words(b)} vs {_machine_words(c)})"
    return ""


def _machine_words(m: Machine) -> str:
    return f"{m.cpu or 'cpu?'} x{m.cores or '?'}, id {m.machine_id or '?'}"


def _judge(
    kind: Kind, base: float, cand: float, max_drop: float, max_slowdown: float, enough: bool, timing_note: str
) -> tuple[Status, str]:
    if kind == "accuracy":
        drop = base - cand
        if drop > max_drop + _EPS:
            return "regression", f"dropped by {drop:.3f} (> {max_drop:g})"
        return ("improved", "") if cand > base + _EPS else ("ok", "")
    if kind == "rejections":
        rise = cand - base
        if rise > max_drop + _EPS:
            return "regression", f"rose by {rise:.3f} (> {max_drop:g})"
        return ("improved", "") if cand < base - _EPS else ("ok", "")
    if kind == "timing":
        if base <= 0:
            return "info", "baseline is 0: no ratio"
        ratio = cand / base
        if timing_note:
            return "info", "not gated (see the note below)"
        if not enough:
            return "info", "too few values to gate"
        if ratio > max_slowdown:
            return "regression", f"{ratio:.2f}x slower (> {max_slowdown:g}x)"
        return ("improved", "") if ratio * max_slowdown < 1 else ("ok", "")
    return "info", "no rule for this metric"


def _index(rows: list[SummaryRow], path: Path) -> dict[tuple[str, str, str], SummaryRow]:
    out: dict[tuple[str, str, str], SummaryRow] = {}
    for row in rows:
        key = (row.family, row.strategy, row.metric)
        if key in out:
            raise RunDirError(path, f"two rows for {'/'.join(key)}")
        out[key] = row
    return out


def _policy(policy: Policy | None, overrides: dict[str, object]) -> Policy:
    """``policy`` (default: the defaults) with the options given on the command line."""
    base = policy or Policy()
    given = {k: v for k, v in overrides.items() if v is not None}
    return Policy.model_validate({**base.model_dump(), **given}) if given else base


def _summary_diffs(cmp: Comparison, paired: set[tuple[str, str, str]]) -> None:
    """The rules of summary.json for what the paired comparison did not cover (module doc)."""
    base = _index(read_summary(cmp.baseline_dir), cmp.baseline_dir / SUMMARY_FILE)
    cand = _index(read_summary(cmp.candidate_dir), cmp.candidate_dir / SUMMARY_FILE)
    policy = cmp.policy
    for key in [*base, *(k for k in cand if k not in base)]:
        b_row, c_row = base.get(key), cand.get(key)
        kind = metric_kind(key[2])
        b_val = None if b_row is None else b_row.value
        c_val = None if c_row is None else c_row.value
        b_n = None if b_row is None else b_row.n
        c_n = None if c_row is None else c_row.n
        status: Status
        if b_val is None and c_val is None:
            continue
        nan = [side for side, v in (("baseline", b_val), ("candidate", c_val)) if v is not None and math.isnan(v)]
        if nan:
            status, reason = "missing", f"not a number in the {' and the '.join(nan)}: nothing to compare"
        elif b_val is None:
            status, reason = "new", "not in the baseline"
        elif c_val is None:
            status, reason = "missing", "in the baseline, missing in the candidate"
        elif key in paired:
            continue
        else:
            enough = min(b_n or 0, c_n or 0) >= values_needed(key[2], policy.min_timing_n)
            status, reason = _judge(kind, float(b_val), float(c_val), policy.max_drop, policy.ratio_for(key[2]),
                                    enough, cmp.timing_note)
            if kind in ("accuracy", "rejections") and key[2] not in policy.metrics:
                status, reason = "info", "not a gated metric" + (f" ({reason})" if reason else "")
        cmp.diffs.append(Diff(*key, kind, b_val, c_val, b_n, c_n, status, reason))
        if b_n is not None and c_n is not None and c_n < b_n and kind != "timing":
            cmp.warnings.append(f"{'/'.join(key)}: n fell from {b_n} to {c_n}")


def _scores(run_dir: Path) -> list[ScoreRow] | None:
    """scores.parquet (None: the run keeps none); RunDirError when it holds no row: nothing to compare."""
    rows = read_scores(run_dir)
    if rows == []:
        raise RunDirError(run_dir / SCORES_FILE, "holds no scores: nothing to compare")
    return rows


def _missing_cases(base: list[ScoreRow], cand: list[ScoreRow], policy: Policy) -> list[Diff]:
    """Per family and strategy, the baseline's cases the candidate did not score: a regression past the
    policy's ``max_missing_cases`` (what a candidate did not run, it has not shown to pass)."""
    def cases(rows: list[ScoreRow]) -> dict[tuple[str, str], set[str]]:
        out: dict[tuple[str, str], set[str]] = {}
        for row in rows:
            if row.metric in policy.metrics:
                out.setdefault((row.family, row.strategy), set()).add(row.case_id)
        return out

    b, c = cases(base), cases(cand)
    diffs = []
    for lane, wanted in b.items():
        missing = len(wanted - c.get(lane, set()))
        if missing > policy.max_missing_cases:
            diffs.append(Diff(*lane, "cases", "other", float(len(wanted)), float(len(wanted) - missing), len(wanted),
                              len(wanted) - missing, "missing",
                              f"{missing} of the baseline's {len(wanted)} cases missing in the candidate "
                              f"(more than max_missing_cases {policy.max_missing_cases})"))
    return diffs


def compare_runs(
    baseline: Path,
    candidate: Path,
    *,
    policy: Policy | None = None,
    max_drop: float | None = None,
    max_slowdown: float | None = None,
    min_timing_n: int | None = None,
    timings: TimingGate | None = None,
    allow_setup_change: bool = False,
) -> Comparison:
    """Compare two results directories (module doc); the keyword options override ``policy``.
    Raises RunDirError (naming the file) on unreadable input and CompareError (naming the file and
    the field) on runs that do not compare."""
    if max_drop is not None and max_drop < 0:
        raise ValueError("max_drop must be >= 0")
    if max_slowdown is not None and max_slowdown < 1:
        raise ValueError("max_slowdown must be >= 1")
    settled = _policy(policy, {"max_drop": max_drop, "max_slowdown": max_slowdown, "min_timing_n": min_timing_n,
                               "timings": timings})
    baseline, candidate = Path(baseline), Path(candidate)
    for d in (baseline, candidate):
        if not d.is_dir():
            raise RunDirError(d, "not a directory")
    base_run, cand_run = read_run(baseline), read_run(candidate)
    check = check_runs(baseline, base_run, candidate, cand_run, allow_setup_change)
    cmp = Comparison(baseline, candidate, base_run, cand_run, settled, check)
    cmp.timing_note = timing_gate_note(base_run, cand_run, settled.timings)
    base_scores, cand_scores = _scores(baseline), _scores(candidate)
    cmp.baseline_scores, cmp.candidate_scores = base_scores, cand_scores
    for d in (baseline, candidate):
        read_errors(d)  # a broken errors.json is bad input here, not a file the baseline takes on later
    cmp.candidate_samples = read_samples(candidate)
    if base_scores is not None and cand_scores is not None:
        engines = (recorded_fields(base_run)["engine"], recorded_fields(cand_run)["engine"])
        cmp.paired = compare_scores(base_scores, cand_scores, settled, settled.worse_cases_allowed(engines))
        if not cmp.paired:
            raise CompareError(
                f"{candidate / SCORES_FILE}: none of its cases is scored in the baseline ({baseline / SCORES_FILE}) "
                "for the same family, strategy and rate: nothing to compare")
        cmp.diffs.extend(_missing_cases(base_scores, cand_scores, settled))
    else:
        missing = baseline if base_scores is None else candidate
        cmp.warnings.append(f"{missing} has no scores.parquet: rates compared on summary.json alone (a drop over "
                            f"{settled.max_drop:g} fails), not case by case")
    if check.differences:
        cmp.warnings.append("setups differ (allowed by --allow-setup-change): " + "; ".join(check.differences))
    if check.unchecked:
        cmp.warnings.append(f"setup fields not recorded by both runs, not checked: {', '.join(check.unchecked)}")
    _summary_diffs(cmp, {(p.family, p.strategy, p.metric) for p in cmp.paired})
    if not cmp.paired and not any(d.status != "new" for d in cmp.diffs):
        raise CompareError(f"{baseline / SUMMARY_FILE}: no metric the baseline holds to compare the candidate with: "
                           "nothing to compare")
    return cmp


__all__ = [
    "DEFAULT_MAX_DROP",
    "DEFAULT_MAX_SLOWDOWN",
    "DEFAULT_MIN_TIMING_N",
    "TIMING_GATES",
    "Comparison",
    "Diff",
    "TimingGate",
    "compare_runs",
    "metric_kind",
    "timing_gate_note",
]
