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
from typing import Any

from harness.stats import percentile

RATE_METRICS: dict[str, str] = {
    "validity": "validity",
    "exact_match": "exact_match",
    "state_match": "state_match",
    "grammar_rejection": "grammar_rejections",
}
"""scores.parquet metric -> summary.json metric."""

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


def _timings(samples: Iterable[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        for turn in sample.get("turns") or ():
            if turn.get("ttft_ms") is not None:
                out["ttft"].append(float(turn["ttft_ms"]))
            if turn.get("latency_ms") is not None:
                out["latency"].append(float(turn["latency_ms"]))
            stats = turn.get("stats") or {}
            if stats.get("compile_ms") is not None:
                key = "compile_cached" if stats.get("compile_cached") else "compile_cold"
                out[key].append(float(stats["compile_ms"]))
            out["mask"].extend(float(v) for v in stats.get("mask_us") or ())
            for result in turn.get("tool_results") or ():
                if result.get("duration_us") is not None:
                    out["tool"].append(float(result["duration_us"]))
    return out


def _timing_rows(samples: list[dict[str, Any]]) -> list[tuple[str, float, int]]:
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


def summarize(samples: Iterable[dict[str, Any]], scores: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """summary.json rows per family and strategy: rates with Wilson CIs, then timings."""
    by_group_scores: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in scores:
        if row["value"] is None:
            continue
        by_group_scores[(row["family"], row["strategy"])][row["metric"]].append(float(row["value"]))
    by_group_samples: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for sample in samples:
        by_group_samples[(sample["family"], sample["strategy"])].append(sample)

    out: list[dict[str, Any]] = []
    for family, strategy in sorted(set(by_group_scores) | set(by_group_samples)):
        metrics = by_group_scores.get((family, strategy), {})
        for metric, name in RATE_METRICS.items():
            values = metrics.get(metric)
            if not values:
                continue
            n = len(values)
            low, high = wilson(sum(values), n)
            out.append(_row(family, strategy, name, sum(values) / n, n, low, high))
        for name, value, n in _timing_rows(by_group_samples.get((family, strategy), [])):
            out.append(_row(family, strategy, name, value, n, None, None))
    return out


def _row(
    family: str, strategy: str, metric: str, value: float, n: int, low: float | None, high: float | None
) -> dict[str, Any]:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    return {
        "family": family, "strategy": strategy, "metric": metric,
        "value": r(value), "n": n, "ci_low": r(low), "ci_high": r(high),
    }


def error_counts(scores: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """errors.json: per family and strategy, how many samples failed with each error kind (a sample
    counts once per kind however many of its metrics it failed)."""
    seen: set[tuple[str, str, str, str]] = set()
    counts: Counter[tuple[str, str, str]] = Counter()
    for row in scores:
        kind = row.get("error_kind")
        if not kind:
            continue
        key = (row["family"], row["strategy"], kind, row["sample_id"])
        if key in seen:
            continue
        seen.add(key)
        counts[(row["family"], row["strategy"], kind)] += 1
    return [
        {"family": f, "strategy": s, "error_kind": k, "count": c}
        for (f, s, k), c in sorted(counts.items(), key=lambda item: (item[0][0], item[0][1], -item[1], item[0][2]))
    ]


__all__ = ["RATE_METRICS", "TIMING_METRICS", "error_counts", "summarize", "wilson"]
