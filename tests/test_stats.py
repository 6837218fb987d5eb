"""The one percentile definition (numpy's linear method) that every figure of the project uses."""

from __future__ import annotations

import math

import pytest

from harness.stats import median, percentile, quantile, rounded_percentile, spread

# (values, q, expected): rank (n - 1) * q / 100, interpolated between the two closest ranks.
PERCENTILES = [
    ([1, 2, 3, 4], 50, 2.5),
    ([5.0], 99, 5.0),
    (list(range(101)), 99, 99.0),
    (list(range(1, 11)), 99, 9.91),  # nearest rank would say 10: the definition matters
    (list(range(1, 11)), 0, 1.0),
    (list(range(1, 11)), 100, 10.0),
    ([3, 1, 2], 50, 2.0),  # unsorted input
]


@pytest.mark.parametrize(("values", "q", "expected"), PERCENTILES)
def test_percentile_is_linear_between_ranks(values: list[float], q: float, expected: float) -> None:
    assert math.isclose(percentile(values, q), expected)


def test_median_is_the_50th_percentile() -> None:
    assert median([4, 1, 3, 2]) == percentile([4, 1, 3, 2], 50) == 2.5


@pytest.mark.parametrize("q", [-1, 100.5])
def test_q_outside_0_100_is_an_error(q: float) -> None:
    with pytest.raises(ValueError, match=r"within 0\.\.100"):
        percentile([1.0], q)


def test_no_values() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    assert rounded_percentile([], 50) is None
    assert spread([], "x") == {"x_p50": None, "x_p90": None, "x_p99": None, "x_max": None}


def test_spread_rounds_and_names() -> None:
    assert spread(list(range(1, 11)), "mask_us", digits=2) == {
        "mask_us_p50": 5.5, "mask_us_p90": 9.1, "mask_us_p99": 9.91, "mask_us_max": 10.0,
    }


@pytest.mark.parametrize(("values", "q", "expected"), PERCENTILES)
def test_the_polars_expression_is_the_same_percentile(values: list[float], q: float, expected: float) -> None:
    import polars as pl

    frame = pl.DataFrame({"g": [1] * len(values), "v": [float(v) for v in values]})
    got = frame.group_by("g").agg(quantile("v", q).alias("p"))["p"][0]
    assert math.isclose(got, expected) and math.isclose(got, percentile(values, q))
