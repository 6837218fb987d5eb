"""summary.json and errors.json from a run's samples and scores.

Rates carry Wilson 95% intervals; timings are percentiles (``harness.stats.percentile``) over what the
samples recorded. A metric no
sample measured (an OpenAI server has no mask times, the oracle no time to first token, a suite with no
file systems no state check) is left out, never written as 0.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable

from harness.eval.records import METRICS, ErrorCount, SampleRecord, ScoreRow, SummaryRow
from harness.stats import percentile

RATE_METRICS = METRICS
"""The rates of summary.json: each per-sample metric of scores.parquet, under the same name."""

TIMING_METRICS: tuple[str, ...] = (
    "ttft_ms_p50", "latency_ms_p50", "compile_ms", "mask_us_p50", "mask_us_p99", "tool_us_p50", "tool_us_p99",
)


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (95% for z = 1.96); (0, 1) when n = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _timings(samples: Iterable[SampleRecord]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        for step in sample.steps:
            if step.ttft_ms is not None:
                out["ttft"].append(step.ttft_ms)
            if step.latency_ms is not None:
                out["latency"].append(step.latency_ms)
            stats = step.stats
            if stats is not None:
                if stats.compile_ms is not None:
                    out["compile_cached" if stats.compile_cached else "compile_cold"].append(stats.compile_ms)
                out["mask"].extend(stats.mask_us)
            out["tool"].extend(r.duration_us for r in step.tool_results if r.duration_us is not None)
    return out


def _timing_rows(samples: list[SampleRecord]) -> list[tuple[str, float, int]]:
    t = _timings(samples)
    rows: list[tuple[str, float, int]] = []
    if t["ttft"]:
        rows.append(("ttft_ms_p50", percentile(t["ttft"], 50), len(t["ttft"])))
    if t["latency"]:
        rows.append(("latency_ms_p50", percentile(t["latency"], 50), len(t["latency"])))
    # The cost of compiling a grammar: cold compiles when there were any (the runner compiles once per
    # family, strategy and tool set), else the cache hits.
    compiles = t["compile_cold"] or t["compile_cached"]
    if compiles:
        rows.append(("compile_ms", percentile(compiles, 50), len(compiles)))
    if t["mask"]:
        rows.append(("mask_us_p50", percentile(t["mask"], 50), len(t["mask"])))
        rows.append(("mask_us_p99", percentile(t["mask"], 99), len(t["mask"])))
    if t["tool"]:
        rows.append(("tool_us_p50", percentile(t["tool"], 50), len(t["tool"])))
        rows.append(("tool_us_p99", percentile(t["tool"], 99), len(t["tool"])))
    return rows


def summarize(samples: Iterable[SampleRecord], scores: Iterable[ScoreRow]) -> list[SummaryRow]:
    """summary.json rows per family and strategy: rates with Wilson CIs, then timings."""
    by_group_scores: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in scores:
        if row.value is None:
            continue
        by_group_scores[(row.family, row.strategy)][row.metric].append(row.value)
    by_group_samples: dict[tuple[str, str], list[SampleRecord]] = defaultdict(list)
    for sample in samples:
        by_group_samples[(sample.family, sample.strategy)].append(sample)

    out: list[SummaryRow] = []
    for family, strategy in sorted(set(by_group_scores) | set(by_group_samples)):
        metrics = by_group_scores.get((family, strategy), {})
        for metric in RATE_METRICS:
            values = metrics.get(metric)
            if not values:
                continue
            n = len(values)
            low, high = wilson(sum(values), n)
            out.append(_row(family, strategy, metric, sum(values) / n, n, low, high))
        for name, value, n in _timing_rows(by_group_samples.get((family, strategy), [])):
            out.append(_row(family, strategy, name, value, n, None, None))
    return out


def _row(
    family: str, strategy: str, metric: str, value: float, n: int, low: float | None, high: float | None
) -> SummaryRow:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    return SummaryRow(
        family=family, strategy=strategy, metric=metric, value=r(value), n=n, ci_low=r(low), ci_high=r(high)
    )


def error_counts(scores: Iterable[ScoreRow]) -> list[ErrorCount]:
    """errors.json: per family and strategy, how many samples failed with each error kind (a sample
    counts once per kind however many of its metrics it failed)."""
    seen: set[tuple[str, str, str, str]] = set()
    counts: Counter[tuple[str, str, str]] = Counter()
    for row in scores:
        if not row.error_kind:
            continue
        key = (row.family, row.strategy, row.error_kind, row.sample_id)
        if key in seen:
            continue
        seen.add(key)
        counts[(row.family, row.strategy, row.error_kind)] += 1
    return [
        ErrorCount(family=f, strategy=s, error_kind=k, count=c)
        for (f, s, k), c in sorted(counts.items(), key=lambda item: (item[0][0], item[0][1], -item[1], item[0][2]))
    ]


__all__ = ["RATE_METRICS", "TIMING_METRICS", "error_counts", "summarize", "wilson"]
