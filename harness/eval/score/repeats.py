"""The rates of summary.json with the case as the unit: per family, strategy and metric, the mean of
the scores that apply, its interval (``harness.stats.clustered_wilson``: Wilson's, at the effective
number of samples when a case was tried several times) and, for the accuracy metrics of a run with
epochs > 1, its ``Repeats``: pass@k and pass^k for k = 1..epochs and the case classes (stable-pass:
every try passed; flaky: some did; stable-fail: none did).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from harness.eval.store import KFigure, Repeats, ScoreRow
from harness.stats import clustered_wilson, pass_at_k, pass_hat_k, wilson
from harness.vocabulary import ACCURACY_METRICS

Key = tuple[str, str]
"""(family, strategy)."""


class RateFigure(NamedTuple):
    """One rate of one family and strategy, as summary.json writes it."""

    value: float
    n: int
    """Scores it is the mean of."""
    cases: int
    low: float
    high: float
    repeats: Repeats | None


def by_case(scores: Iterable[ScoreRow]) -> dict[Key, dict[str, dict[str, list[float]]]]:
    """(family, strategy) -> metric -> case id -> the values of its epochs (scores that apply only)."""
    out: dict[Key, dict[str, dict[str, list[float]]]] = {}
    for row in scores:
        if row.value is None:
            continue
        cases = out.setdefault((row.family, row.strategy), {}).setdefault(row.metric, {})
        cases.setdefault(row.case_id, []).append(float(row.value))
    return out


def _k_figures(per_case: Sequence[tuple[int, int]], k: int, estimator: str) -> KFigure:
    """The mean over cases of pass@k or pass^k, with Wilson's interval over the cases."""
    estimate = pass_at_k if estimator == "at" else pass_hat_k
    values = [estimate(n, c, k) for n, c in per_case]
    mean = sum(values) / len(values)
    low, high = wilson(mean * len(values), len(values))
    return KFigure(k=k, value=round(mean, 6), ci_low=round(low, 6), ci_high=round(high, 6))


def repeats(cases: Sequence[Sequence[float]]) -> Repeats | None:
    """pass@k, pass^k and the case classes of pass/fail values grouped by case; None unless every case
    was tried at least twice (k runs to the fewest tries of a case)."""
    counts = [(len(values), sum(1 for v in values if v >= 1.0)) for values in cases if values]
    if not counts or min(n for n, _ in counts) < 2:
        return None
    epochs = min(n for n, _ in counts)
    ks = range(1, epochs + 1)
    return Repeats(
        epochs=epochs, cases=len(counts),
        pass_at_k=tuple(_k_figures(counts, k, "at") for k in ks),
        pass_hat_k=tuple(_k_figures(counts, k, "hat") for k in ks),
        stable_pass=sum(1 for n, c in counts if c == n),
        flaky=sum(1 for n, c in counts if 0 < c < n),
        stable_fail=sum(1 for _, c in counts if c == 0),
    )


def rate_figures(scores: Iterable[ScoreRow]) -> dict[Key, dict[str, RateFigure]]:
    """Every rate per (family, strategy) and metric (see the module doc)."""
    out: dict[Key, dict[str, RateFigure]] = {}
    for key, metrics in by_case(scores).items():
        for metric, per_case in metrics.items():
            cases = list(per_case.values())
            value, low, high = clustered_wilson(cases)
            extra = repeats(cases) if metric in ACCURACY_METRICS else None
            out.setdefault(key, {})[metric] = RateFigure(
                value, sum(len(c) for c in cases), len(cases), low, high, extra)
    return out


__all__ = ["RateFigure", "by_case", "rate_figures", "repeats"]
