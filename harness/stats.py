"""The project's statistics, defined once: the percentile every summary, benchmark and command uses,
and the estimators of rates over cases that summaries and ``harness compare`` share.

``percentile(values, q)`` is numpy's ``percentile`` with ``method="linear"`` (numpy's default; type 7
of Hyndman and Fan, also R's default and Excel's PERCENTILE.INC): the values are sorted, the
percentile sits at rank ``(n - 1) * q / 100`` and is interpolated linearly between the two closest
ranks. So p50 is the usual median, p100 the maximum, and a p99 of fewer than 101 values lies between
the two largest. Every figure named ``*_p50``/``*_p99`` in run directories, benchmark outputs and
``harness grammar check`` is computed here, so the same values always give the same figure.

Rates (``wilson``, ``clustered_wilson``): Wilson's score interval, which behaves at 0, at 1 and with
few cases where the normal approximation does not. When each case is tried several times (epochs),
its tries are not independent: the case is the unit (Miller 2024, "Adding Error Bars to Evals", and
Inspect's clustered standard error). ``clustered_wilson`` computes the clustered standard error of
the mean, turns it into an effective number of independent samples (Kish's design effect: ``n``
divided by the clustered variance over the binomial one, kept between the number of cases and ``n``)
and gives Wilson's interval at that size. With one try per case it is Wilson's interval itself.

Repeats (``pass_at_k``, ``pass_hat_k``): per case, from ``n`` tries of which ``c`` passed, the unbiased
estimators of the chance that at least one of ``k`` tries passes (pass@k, Chen et al. 2021:
``1 - C(n-c, k) / C(n, k)``) and that all ``k`` pass (pass^k, Yao et al. 2024, tau-bench:
``C(c, k) / C(n, k)``), averaged over cases. Their interval is Wilson's with the case as the unit:
a per-case value in [0, 1] with mean p varies at most as a pass/fail case does, so it is
conservative where a case's value is a fraction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

METHOD: Final = "linear"
"""numpy's percentile method (see the module doc)."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (``q`` in 0..100) of ``values``; raises ValueError for no values."""
    if len(values) == 0:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q, method=METHOD))


def quantile(column: str, q: float) -> Any:
    """A polars expression for the ``q``-th percentile of ``column`` in a group-by, with the same
    definition as :func:`percentile` (polars' ``linear`` interpolation is numpy's linear method; a
    test checks they agree)."""
    import polars as pl

    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    return pl.col(column).quantile(q / 100.0, interpolation=METHOD)


def median(values: Sequence[float]) -> float:
    """The 50th percentile; raises ValueError for no values."""
    return percentile(values, 50.0)


def rounded_percentile(values: Sequence[float], q: float, digits: int = 3) -> float | None:
    """``percentile`` rounded to ``digits``; None for no values (a figure that was not measured)."""
    return round(percentile(values, q), digits) if len(values) else None


def spread(values: Sequence[float], prefix: str, digits: int = 3) -> dict[str, float | None]:
    """``{prefix}_p50``, ``_p90``, ``_p99`` and ``_max`` of ``values`` (None for no values)."""
    return {
        f"{prefix}_{name}": rounded_percentile(values, q, digits)
        for name, q in (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("max", 100.0))
    }


Z95: Final = 1.96
"""The normal quantile of two-sided 95% intervals (the project's intervals use 1.96)."""


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (95% for z = 1.96); (0, 1) when n = 0. ``n`` may be an
    effective (fractional) number of samples."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def clustered_se(cases: Sequence[Sequence[float]]) -> float:
    """Standard error of the mean of every value, with each case's values a cluster:
    ``sqrt(C / (C - 1) * sum_c (sum_i (s_ic - mean))**2) / n`` for C cases and n values (0 for fewer
    than two cases)."""
    values = [v for case in cases for v in case]
    if len(cases) < 2 or not values:
        return 0.0
    mean = sum(values) / len(values)
    spread_ = sum(sum(v - mean for v in case) ** 2 for case in cases)
    return math.sqrt(len(cases) / (len(cases) - 1) * spread_) / len(values)


def effective_n(cases: Sequence[Sequence[float]]) -> float:
    """The number of independent samples the values of ``cases`` are worth: ``n`` over the design
    effect (clustered variance / binomial variance), between the number of cases and ``n``; the
    number of cases when every value is equal (no variance to compare)."""
    n = sum(len(case) for case in cases)
    count = sum(1 for case in cases if case)
    if n == count:
        return float(n)
    p = sum(v for case in cases for v in case) / n
    se = clustered_se(cases)
    if p <= 0.0 or p >= 1.0 or se <= 0.0:
        return float(count)
    return min(float(n), max(float(count), p * (1 - p) / (se * se)))


def clustered_wilson(cases: Sequence[Sequence[float]], z: float = Z95) -> tuple[float, float, float]:
    """(mean, low, high): the mean of pass/fail values (1 or 0) grouped by case, with Wilson's interval
    at the effective number of samples (see the module doc)."""
    n = sum(len(case) for case in cases)
    if n == 0:
        return 0.0, 0.0, 1.0
    p = sum(v for case in cases for v in case) / n
    size = effective_n(cases)
    low, high = wilson(p * size, size, z)
    return p, low, high


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one case with ``c`` of ``n`` tries passed: ``1 - C(n-c, k) / C(n, k)``,
    computed as ``1 - prod_{i=n-c+1..n} (1 - k / i)`` (no large binomials)."""
    _check_k(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one case with ``c`` of ``n`` tries passed: ``C(c, k) / C(n, k)``."""
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_k(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


__all__ = [
    "METHOD",
    "Z95",
    "clustered_se",
    "clustered_wilson",
    "effective_n",
    "median",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "quantile",
    "rounded_percentile",
    "spread",
    "wilson",
]
