"""The project's one definition of a percentile, used by every summary, benchmark and command.

``percentile(values, q)`` is numpy's ``percentile`` with ``method="linear"`` (numpy's default; type 7
of Hyndman and Fan, also R's default and Excel's PERCENTILE.INC): the values are sorted, the
percentile sits at rank ``(n - 1) * q / 100`` and is interpolated linearly between the two closest
ranks. So p50 is the usual median, p100 the maximum, and a p99 of fewer than 101 values lies between
the two largest. Every figure named ``*_p50``/``*_p99`` in run directories, benchmark outputs and
``harness grammar check`` is computed here, so the same values always give the same figure.
"""

from __future__ import annotations

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


__all__ = ["METHOD", "median", "percentile", "quantile", "rounded_percentile", "spread"]
