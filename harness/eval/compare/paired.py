"""Two runs compared case by case (their scores.parquet), per family x strategy x rate.

Pairing: a case is compared with itself. Each case's score is the mean over its epochs, and the
difference ``d_c = candidate_c - baseline_c`` per case is what the tests see, so the variance between
cases (some are easy, some hard) cancels out; an unpaired test keeps it and needs far more cases to see
the same change. The flip list pairs samples by case and epoch (two runs with one seed draw the same
random numbers per case and epoch, so a flip there is what changed, not luck).

Tests (two-sided, at the policy's ``alpha``):

- one try per case on both sides (each ``d_c`` is -1, 0 or +1): the exact McNemar test. Of the cases
  that changed, ``b`` got worse and ``c`` better; with no change each is a fair coin, so
  ``p = binomtest(b, b + c, 1/2)`` (scipy);
- several tries (``d_c`` a fraction): a paired bootstrap over cases (10,000 resamples, fixed seed; the
  mean difference shifted to zero, p the share of resampled means at least as far from zero as the
  one observed), and since a bootstrap of a handful of cases is too sure of itself (three cases that all
  dropped give an interval of width zero), the exact sign test over the cases that changed as well:
  the gate takes the larger p.

A rate regresses when it moved the worse way, significantly, by at least the policy's ``min_effect``.
One comparison tests many rates (every family x strategy x gated metric), and at ``alpha`` = 0.05 one
in twenty unchanged rates would look significant by luck; so the p values of the gated rates are
adjusted with Holm's step-down method (``holm``), which keeps the chance of any false alarm in the
whole comparison at ``alpha`` (policy ``correction: none`` gates each rate on its own p).
The minimum detectable effect says what the comparison could have seen at all: the larger of the
change that ``k`` cases moving one way make, where ``k`` is the fewest that can be significant
(``2 * 0.5**k < alpha``: 6 at 0.05), and ``(z(1 - alpha/2) + z(0.8)) * sd(d) / sqrt(cases)``, the change
found with 80% power given the spread seen (Miller 2024, "Adding Error Bars to Evals"); with Holm's
adjustment at the level a lone change must reach, ``alpha`` over the number of gated rates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal

from harness.eval.compare.policy import Policy
from harness.eval.store import ScoreRow

RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261126
POWER = 0.8
RateKey = tuple[str, str, str]
"""(family, strategy, metric): one rate of one lane."""
Status = Literal["ok", "improved", "regression", "info"]


@dataclass(frozen=True, slots=True)
class Flip:
    """A case and epoch that passed on one side and failed on the other."""

    case_id: str
    epoch: int
    worse: bool
    """True: passed in the baseline, fails in the candidate."""
    baseline_kind: str | None
    """The baseline's error kind there (None where it passed)."""
    candidate_kind: str | None
    candidate_sample: str
    """The candidate's sample id (report.html's anchor)."""


@dataclass(frozen=True, slots=True)
class PairedMetric:
    """One rate of one family and strategy, compared case by case."""

    family: str
    strategy: str
    metric: str
    cases: int
    """Cases scored on both sides."""
    baseline: float
    """The baseline's rate over those cases."""
    candidate: float
    effect: float
    """candidate - baseline (in rate)."""
    ci_low: float
    """95% paired-bootstrap interval of the effect."""
    ci_high: float
    worse_cases: int
    """Cases whose score moved the worse way."""
    better_cases: int
    test: str
    """``exact McNemar`` or ``paired bootstrap + sign test``."""
    p_value: float
    p_adjusted: float
    """``p_value`` adjusted for the number of gated rates (Holm); what the verdict uses."""
    mde: float
    """The smallest change this comparison could have detected (module doc)."""
    status: Status
    reason: str
    flips: tuple[Flip, ...]
    gated: bool

    @property
    def is_regression(self) -> bool:
        return self.status == "regression"


CaseTable = dict[str, dict[int, ScoreRow]]
"""case id -> epoch -> its score row."""


def index_scores(rows: Iterable[ScoreRow]) -> dict[RateKey, CaseTable]:
    """Score rows that apply, by (family, strategy, metric), case and epoch."""
    out: dict[RateKey, CaseTable] = {}
    for row in rows:
        if row.value is not None:
            out.setdefault((row.family, row.strategy, row.metric), {}).setdefault(row.case_id, {})[row.epoch] = row
    return out


def exact_mcnemar(worse: int, better: int) -> float:
    """Two-sided exact McNemar p of ``worse`` against ``better`` discordant cases (1 when none)."""
    if worse + better == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(worse, worse + better, 0.5).pvalue)


def paired_bootstrap(diffs: list[float], resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """(p, low, high): the bootstrap test of a zero mean difference and the 95% percentile interval of
    the mean (module doc)."""
    import numpy as np

    d = np.asarray(diffs, dtype=np.float64)
    if d.size == 0:
        return 1.0, 0.0, 0.0
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    observed = float(d.mean())
    if observed == 0.0:
        p = 1.0
    else:
        p = float(np.mean(np.abs(means - observed) >= abs(observed) - 1e-12))
    low, high = np.percentile(means, [2.5, 97.5])
    return p, float(low), float(high)


def fewest_significant(alpha: float) -> int:
    """The fewest cases that, all moving one way, make the exact test significant (p < alpha)."""
    return max(1, math.floor(1 - math.log2(alpha)) + 1)


def min_detectable_effect(diffs: list[float], step: float, alpha: float) -> float:
    """The smallest change the comparison of these per-case differences could detect (module doc);
    ``step`` is the smallest change one case can make (1 / tries)."""
    cases = len(diffs)
    if cases == 0:
        return 1.0
    floor = min(1.0, fewest_significant(alpha) * step / cases)
    if cases < 2:
        return max(floor, 1.0)
    mean = sum(diffs) / cases
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (cases - 1))
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(POWER)
    return min(1.0, max(floor, z * sd / math.sqrt(cases)))


def _passed(value: float, higher_is_better: bool) -> bool:
    return value >= 1.0 if higher_is_better else value <= 0.0


def flips(base: CaseTable, cand: CaseTable, higher_is_better: bool) -> list[Flip]:
    """Every case and epoch scored on both sides that passed on one and failed on the other."""
    out = []
    for case_id in sorted(set(base) & set(cand)):
        for epoch in sorted(set(base[case_id]) & set(cand[case_id])):
            b, c = base[case_id][epoch], cand[case_id][epoch]
            b_pass, c_pass = _passed(float(b.value or 0), higher_is_better), _passed(float(c.value or 0), higher_is_better)
            if b_pass != c_pass:
                out.append(Flip(case_id, epoch, b_pass, b.error_kind, c.error_kind, c.sample_id))
    return out


def _mean(rows: Mapping[int, ScoreRow]) -> float:
    return sum(float(r.value or 0.0) for r in rows.values()) / len(rows)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p values times (m - i + 1), made
    non-decreasing, at most 1 (in the input's order)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _verdict(m: PairedMetric, policy: Policy, worse_allowed: int | None) -> tuple[Status, str]:
    size, p, gated = abs(m.effect), m.p_adjusted, m.gated
    moved = ("fell" if m.effect < 0 else "rose") + f" by {size:.3f}"
    shown = f"p = {m.p_value:.3g}" + (f", adjusted {p:.3g}" if p != m.p_value else "")
    if gated and worse_allowed is not None and m.worse_cases > worse_allowed:
        return "regression", (f"{m.worse_cases} case(s) got worse (more than max_worse_cases {worse_allowed}: "
                              f"without noise every one is a change); {moved} ({shown})")
    if size == 0:
        return ("ok" if gated else "info"), "no change"
    if p >= policy.alpha:
        return ("ok" if gated else "info"), f"{moved}, not significant ({shown})"
    if size < policy.min_effect - 1e-9:
        return ("ok" if gated else "info"), f"{moved} ({shown}), below the minimum effect {policy.min_effect:g}"
    if not gated:
        return "info", f"{moved} ({shown}); not a gated metric"
    worse = m.effect < 0 if policy.higher_is_better(m.metric) else m.effect > 0
    return ("regression" if worse else "improved"), f"{moved} ({shown} < {policy.alpha:g})"


def compare_rate(key: RateKey, base: CaseTable, cand: CaseTable, policy: Policy, tests: int = 1) -> PairedMetric | None:
    """The paired comparison of one rate, its verdict not yet given (``compare_scores`` gives it once
    every rate's p is known); None when no case is scored on both sides."""
    family, strategy, metric = key
    shared = sorted(set(base) & set(cand))
    if not shared:
        return None
    higher = policy.higher_is_better(metric)
    diffs = [_mean(cand[c]) - _mean(base[c]) for c in shared]
    worse_cases = sum(1 for d in diffs if (d < 0 if higher else d > 0))
    better_cases = sum(1 for d in diffs if d != 0) - worse_cases
    one_try = all(len(base[c]) == 1 and len(cand[c]) == 1 for c in shared)
    p_sign = exact_mcnemar(worse_cases, better_cases)
    p_boot, low, high = paired_bootstrap(diffs)
    p = p_sign if one_try else max(p_sign, p_boot)
    tries = max(max(len(base[c]), len(cand[c])) for c in shared)
    return PairedMetric(
        family=family, strategy=strategy, metric=metric, cases=len(shared),
        baseline=sum(_mean(base[c]) for c in shared) / len(shared),
        candidate=sum(_mean(cand[c]) for c in shared) / len(shared), effect=sum(diffs) / len(diffs),
        ci_low=low, ci_high=high, worse_cases=worse_cases, better_cases=better_cases,
        test="exact McNemar" if one_try else "paired bootstrap + sign test", p_value=p, p_adjusted=p,
        mde=min_detectable_effect(diffs, 1.0 / tries, policy.alpha / tests), status="info", reason="",
        flips=tuple(flips({c: base[c] for c in shared}, {c: cand[c] for c in shared}, higher)),
        gated=metric in policy.metrics,
    )


def compare_scores(base: Iterable[ScoreRow], cand: Iterable[ScoreRow], policy: Policy,
                   worse_allowed: int | None = None) -> list[PairedMetric]:
    """Every rate both runs scored, compared case by case, in the baseline's order; ``worse_allowed``:
    the cases that may get worse on a gated rate before it regresses whatever its p (None: no limit)."""
    b, c = index_scores(base), index_scores(cand)
    # With Holm's method a lone change must reach alpha / (gated rates): what it could detect says so.
    tests = max(1, sum(1 for key in b if key in c and key[2] in policy.metrics)) if policy.correction == "holm" else 1
    out = [r for key in b if key in c and (r := compare_rate(key, b[key], c[key], policy, tests)) is not None]
    gated = [i for i, r in enumerate(out) if r.gated]
    if policy.correction == "holm":
        for i, adjusted in zip(gated, holm([out[i].p_value for i in gated]), strict=True):
            out[i] = replace(out[i], p_adjusted=adjusted)
    if worse_allowed is not None:  # a count of cases that got worse detects what the tests cannot
        out = [replace(r, mde=min(r.mde, (worse_allowed + 1) / r.cases)) if r.gated else r for r in out]
    return [replace(r, status=status, reason=reason) for r in out
            for status, reason in [_verdict(r, policy, worse_allowed)]]


__all__ = [
    "Flip",
    "PairedMetric",
    "compare_rate",
    "compare_scores",
    "exact_mcnemar",
    "fewest_significant",
    "flips",
    "holm",
    "index_scores",
    "min_detectable_effect",
    "paired_bootstrap",
]
