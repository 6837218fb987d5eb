"""summary.json and errors.json from a run's samples and scores, grouped with polars.

Rates carry Wilson 95% intervals with the case as the unit, and with epochs > 1 pass@k, pass^k and
the case classes of each accuracy metric (``repeats``). Timings are percentiles (``harness.stats``: one definition) over
what the samples recorded, per model call (*step*) unless said otherwise. Speed is reported per token
next to the latency of a call, because strategies change how long answers are: a strategy that makes
answers shorter looks "faster" per call while it may be slower per token. A metric no sample measured
(an OpenAI server has no mask times, the oracle no time to first token, a suite with no file systems
no state check) is left out, never written as 0.

Per family and strategy:

- the rates of scores.parquet (``validity``, ``exact_match``, ``state_match``, ``grammar_rejection``,
  ``truncated``);
- ``ttft_ms_p50``: time to the first token of a call; ``latency_ms_p50``: the whole call;
- ``ms_per_token_p50``: a call's latency divided by the tokens it generated (prefill included);
- ``tokens_per_s_p50``: generation speed after the first token, ``(tokens - 1) / (latency - ttft)``
  (only where the time to first token was measured);
- ``tokens_p50``: tokens generated per call (the answer's length);
- ``grammar_us_per_token_p50``: the engine's grammar work (mask fills and token accepts) per generated
  token, for engines that run the grammar themselves;
- ``compile_ms`` (cold compiles when there were any, else cache hits), ``mask_us_p50``/``_p99`` (per
  mask fill), ``tool_us_p50``/``_p99`` (per sandboxed tool call);
- ``target_mask_diff`` (the oracle with ``--target vllm``): of the steps where vLLM's grammar and the
  harness's were compared, the fraction where vLLM allows other tokens (``n`` = compared steps).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from harness import vocabulary
from harness.eval.score.repeats import rate_figures
from harness.eval.store import METRICS, ErrorCount, SampleRecord, ScoreRow, SummaryRow, typed_rows
from harness.stats import quantile, wilson
from harness.vocabulary import Metric

RATE_METRICS = METRICS
"""The rates of summary.json: each per-sample metric of scores.parquet, under the same name."""

TIMING_METRICS = vocabulary.TIMING_METRICS
"""The timings of summary.json, in their order."""
TARGET_METRIC = Metric.target_mask_diff
"""The rate of compared steps where ``--target vllm``'s grammar allows other tokens than the harness's."""

Key = tuple[str, str]


class _Figure(NamedTuple):
    """A figure per (family, strategy) as polars aggregates it."""

    family: str
    strategy: str
    value: float
    n: int


def _step_schema() -> dict[str, Any]:
    import polars as pl

    return {
        "sample_id": pl.Utf8, "family": pl.Utf8, "strategy": pl.Utf8, "step": pl.Int64,
        "ttft_ms": pl.Float64, "latency_ms": pl.Float64, "tokens": pl.Int64, "grammar_us": pl.Float64,
        "compile_ms": pl.Float64, "compile_cached": pl.Boolean, "mask_us": pl.List(pl.Float64),
        "tool_us": pl.List(pl.Float64), "target_steps": pl.Int64, "target_diff": pl.Int64,
        "finish_reason": pl.Utf8, "compile_found": pl.Utf8, "constraint_first": pl.Boolean,
    }


def steps_frame(samples: Iterable[SampleRecord]) -> Any:
    """One row per model call: its sample, family and strategy, timings, tokens and grammar figures.
    ``tokens`` is the usage's completion tokens, else what the engine counted (the oracle)."""
    import polars as pl

    rows = []
    for sample in samples:
        for index, step in enumerate(sample.steps):
            stats = step.stats
            tokens = step.usage.completion_tokens if step.usage is not None else (
                stats.generated_tokens if stats is not None else None)
            rows.append({
                "sample_id": sample.sample_id, "family": sample.family, "strategy": sample.strategy, "step": index,
                "ttft_ms": step.ttft_ms, "latency_ms": step.latency_ms, "tokens": tokens,
                "grammar_us": None if stats is None else sum(stats.mask_us) + sum(stats.accept_us),
                "compile_ms": None if stats is None else stats.compile_ms,
                "compile_cached": None if stats is None else stats.compile_cached,
                "mask_us": [] if stats is None else list(stats.mask_us),
                "tool_us": [r.duration_us for r in step.tool_results if r.duration_us is not None],
                "target_steps": None if stats is None else stats.target_steps,
                "target_diff": None if stats is None else stats.target_mask_diff_steps,
                "finish_reason": step.finish_reason,
                "compile_found": None if stats is None else stats.compile_found,
                "constraint_first": step.constraint_first,
            })
    return pl.DataFrame(rows, schema=_step_schema())


def per_token(steps: Any) -> Any:
    """``steps`` with the per-token columns: ``ms_per_token``, ``tokens_per_s`` (after the first
    token) and ``grammar_us_per_token`` (null where they cannot be computed)."""
    import polars as pl

    tokens = pl.col("tokens").cast(pl.Float64)
    decode_ms = pl.col("latency_ms") - pl.col("ttft_ms")
    return steps.with_columns(
        pl.when(tokens > 0).then(pl.col("latency_ms") / tokens).alias("ms_per_token"),
        pl.when((tokens > 1) & (decode_ms > 0)).then((tokens - 1) / decode_ms * 1000.0).alias("tokens_per_s"),
        pl.when(tokens > 0).then(pl.col("grammar_us") / tokens).alias("grammar_us_per_token"),
    )


# (summary metric, column of the per-token steps frame, percentile); lists are exploded first.
_STEP_PERCENTILES: tuple[tuple[str, str, float], ...] = (
    ("ttft_ms_p50", "ttft_ms", 50), ("latency_ms_p50", "latency_ms", 50), ("ms_per_token_p50", "ms_per_token", 50),
    ("tokens_per_s_p50", "tokens_per_s", 50), ("tokens_p50", "tokens", 50),
    ("grammar_us_per_token_p50", "grammar_us_per_token", 50),
    ("mask_us_p50", "mask_us", 50), ("mask_us_p99", "mask_us", 99),
    ("tool_us_p50", "tool_us", 50), ("tool_us_p99", "tool_us", 99),
)


def _timings(steps: Any) -> dict[Key, dict[str, tuple[float, int]]]:
    """metric -> (value, n) per (family, strategy)."""
    import polars as pl

    out: dict[Key, dict[str, tuple[float, int]]] = {}
    frame = per_token(steps)
    for metric, column, q in _STEP_PERCENTILES:
        values = frame.select("family", "strategy", column)
        if isinstance(values.schema[column], pl.List):
            values = values.explode(column)
        values = values.with_columns(pl.col(column).cast(pl.Float64)).drop_nulls(column)
        _put(out, metric, values.filter(pl.col(column).is_finite()), column, q)
    # The cost of compiling a grammar: cold compiles when there were any (the runner compiles once per
    # family, strategy and tool set), else the cache hits.
    compiles = steps.drop_nulls("compile_ms").with_columns(pl.col("compile_cached").fill_null(False))
    cold = compiles.filter(~pl.col("compile_cached"))
    has_cold = cold.select("family", "strategy").unique().with_columns(pl.lit(True).alias("has_cold"))
    chosen = (compiles.join(has_cold, on=["family", "strategy"], how="left")
              .filter(~pl.col("compile_cached") | pl.col("has_cold").is_null()))
    _put(out, "compile_ms", chosen, "compile_ms", 50)
    return out


def _put(out: dict[Key, dict[str, tuple[float, int]]], metric: str, frame: Any, column: str, q: float) -> None:
    import polars as pl

    if frame.is_empty():
        return
    agg = frame.group_by("family", "strategy").agg(quantile(column, q).alias("value"), pl.len().alias("n"))
    for row in typed_rows(agg, _Figure):
        out.setdefault((row.family, row.strategy), {})[metric] = (float(row.value), int(row.n))


def _target(steps: Any) -> dict[Key, tuple[float, int]]:
    """(differing steps, compared steps) per (family, strategy), where the oracle had a target."""
    import polars as pl

    compared = steps.drop_nulls("target_steps")
    if compared.is_empty():
        return {}
    agg = compared.group_by("family", "strategy").agg(
        pl.col("target_diff").fill_null(0).sum().alias("value"), pl.col("target_steps").sum().alias("n"))
    return {(r.family, r.strategy): (float(r.value), int(r.n)) for r in typed_rows(agg, _Figure) if r.n}


def summarize(samples: Iterable[SampleRecord], scores: Iterable[ScoreRow]) -> list[SummaryRow]:
    """summary.json rows per family and strategy: rates with Wilson CIs, then timings."""
    steps = steps_frame(samples)
    rates, timings, target = rate_figures(scores), _timings(steps), _target(steps)
    groups = set(rates) | set(timings) | set(target)
    groups |= {(f, s) for f, s in steps.select("family", "strategy").unique().iter_rows()}
    out: list[SummaryRow] = []
    for key in sorted(groups):
        family, strategy = key
        for rate in RATE_METRICS:
            if rate in rates.get(key, {}):
                fig = rates[key][rate]
                out.append(_row(family, strategy, rate, fig.value, fig.n, fig.low, fig.high).model_copy(
                    update={"cases": fig.cases, "repeats": fig.repeats}))
        for timing in TIMING_METRICS:
            if timing in timings.get(key, {}):
                value, n = timings[key][timing]
                out.append(_row(family, strategy, timing, value, n, None, None))
        if key in target:
            differing, n = target[key]
            out.append(_row(family, strategy, TARGET_METRIC, differing / n, n, *wilson(differing, n)))
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
    import polars as pl

    frame = pl.DataFrame(
        [(r.family, r.strategy, r.error_kind, r.sample_id) for r in scores if r.error_kind],
        schema={"family": pl.Utf8, "strategy": pl.Utf8, "error_kind": pl.Utf8, "sample_id": pl.Utf8}, orient="row",
    )
    counts = (
        frame.unique().group_by("family", "strategy", "error_kind").len("count")
        .sort(["family", "strategy", "count", "error_kind"], descending=[False, False, True, False])
    )
    return typed_rows(counts, ErrorCount)


__all__ = [
    "RATE_METRICS",
    "TARGET_METRIC",
    "TIMING_METRICS",
    "error_counts",
    "per_token",
    "steps_frame",
    "summarize",
    "wilson",
]
