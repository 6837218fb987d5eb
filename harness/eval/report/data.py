"""What ``harness report`` shows, computed once from the run directories (polars, numpy).

Input is the results-directory contract (run.json, summary.json, samples.jsonl, scores.parquet, and
details.jsonl: the gold calls' outputs and state differences scoring saw) and, for prompts and gold
answers, the run directory's copy of its suite. Nothing here runs a tool: the report reads the run
directory alone. The tables (``tables``), hence report.md (``markdown``) and the HTML page (``html``),
and the plots (``figures``) all draw from what is computed here, so the page and report.md never
disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from harness.eval.data import Suite
from harness.eval.store import (
    Details,
    RunDir,
    SampleRecord,
    SummaryRow,
    load_run_dir,
    read_details,
    scores_frame,
    typed_rows,
)
from harness.vocabulary import ACCURACY_METRICS, HEADLINE_METRICS, STRATEGIES, ErrorKind, Metric, Strategy

ACCURACY = ACCURACY_METRICS
RATES: tuple[Metric, ...] = (*ACCURACY, Metric.grammar_rejection, Metric.truncated, Metric.not_enforced,
                             Metric.target_mask_diff)
# (metric, column header with unit) of the summary table's figures, in the order shown.
FIGURES: tuple[tuple[Metric, str], ...] = (
    (Metric.latency_ms_p50, "latency p50 (ms/call)"),
    (Metric.ttft_ms_p50, "ttft p50 (ms)"),
    (Metric.ms_per_token_p50, "ms/token p50"),
    (Metric.tokens_per_s_p50, "tokens/s p50"),
    (Metric.tokens_p50, "tokens/call p50"),
    (Metric.grammar_us_per_token_p50, "grammar µs/token p50"),
    (Metric.compile_ms, "compile (ms)"),
    (Metric.mask_us_p50, "mask p50 (µs)"),
    (Metric.mask_us_p99, "mask p99 (µs)"),
    (Metric.tool_us_p50, "tool p50 (µs)"),
    (Metric.tool_us_p99, "tool p99 (µs)"),
)
KNOWN_METRICS = (*RATES, *(m for m, _ in FIGURES))


@dataclass(slots=True)
class Run:
    """One run directory as the report sees it."""

    label: str
    data: RunDir
    steps: Any
    """polars: one row per model call with the per-token columns (``harness.eval.score.summary.per_token``)."""
    suite: Suite | None
    """The suite run.json names, for prompts and gold answers (None when it cannot be loaded)."""
    suite_problem: str | None = None
    """Why the suite could not be loaded."""
    details: Details | None = None
    """details.jsonl: each case's gold outputs and each state failure's diff (None: scored before scoring
    wrote it; ``harness score`` writes it)."""

    @property
    def engine(self) -> str:
        """The engine, as every figure and table names it (``oracle --target vllm`` for a target run,
        ``oracle [guidance]`` for a run with ``--grammar-backend guidance``)."""
        options = self.data.run.options
        name = f"{options.engine} --target {options.target}" if options.target else options.engine
        backend = options.grammar_backend or "xgrammar"
        return name if backend == "xgrammar" else f"{name} [{backend}]"

    @property
    def samples(self) -> list[SampleRecord]:
        return list(self.data.samples.samples.values()) if self.data.samples is not None else []

    def summary_row(self, family: str, strategy: str, metric: str) -> SummaryRow | None:
        for row in self.data.summary:
            if (row.family, row.strategy, row.metric) == (family, strategy, metric) and row.value is not None:
                return row
        return None


def _suite(data: RunDir) -> tuple[Suite | None, str | None]:
    """The run's suite: its copy in the run directory (missing or changed since: RunDirError, the run
    directory is not whole), or for a run written before runs kept copies the path it records (not
    found: the report shows no prompts and gold answers, and says so). Only read: no tool is loaded."""
    from harness.eval.data import Snapshot, SnapshotError, SuiteError, load_inputs, load_suite
    from harness.eval.store import RUN_FILE, RunDirError

    run, kept = data.run, data.run.inputs
    if kept is not None:
        try:
            return load_inputs(data.path, Snapshot(kept.suite, kept.suite_digest, kept.bundle, kept.bundle_digest)), None
        except SnapshotError as exc:
            raise RunDirError(exc.path, exc.reason) from None
    for candidate in (Path(run.suite.path), data.path / run.suite.path):
        if (candidate / "suite.yaml").is_file():
            try:
                return load_suite(candidate), None
            except (SuiteError, OSError) as exc:
                return None, f"{run.suite.path}: {exc}"
    return None, (f"{data.path / RUN_FILE}: suite {run.suite.path!r} not found from {Path.cwd()} (a run written "
                  "before runs kept a copy of their suite; prompts and gold answers are not shown)")


def load_runs(run_dirs: Sequence[Path]) -> list[Run]:
    """Every run directory, labelled by its run id (``#2``... for the same id given twice)."""
    from harness.eval.score import per_token, steps_frame

    runs: list[Run] = []
    seen: dict[str, int] = {}
    for d in run_dirs:
        data = load_run_dir(Path(d))
        label = data.run_id
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label}#{seen[label]}"
        samples = list(data.samples.samples.values()) if data.samples else []
        suite, problem = _suite(data)
        runs.append(Run(label, data, per_token(steps_frame(samples)), suite, problem, read_details(data.path)))
    return runs


def ordered(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """``values`` once each, those in ``preferred`` first in its order."""
    seen = list(dict.fromkeys(values))
    first = [v for v in dict.fromkeys(preferred) if v in seen]
    return first + [v for v in seen if v not in first]


def families(runs: Sequence[Run]) -> list[str]:
    listed = [f for r in runs for f in r.data.run.options.families or ()]
    return ordered([*listed, *(row.family for r in runs for row in r.data.summary)], listed)


def strategies(runs: Sequence[Run]) -> list[str]:
    """The strategies of the runs in the canonical order (none, ebnf, structural_tag, json_schema)."""
    listed = [s for r in runs for s in r.data.run.options.strategies or ()]
    return ordered([*listed, *(row.strategy for r in runs for row in r.data.summary)], STRATEGIES)


# -- accuracy against cost ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Point:
    """One family x strategy of a run on the accuracy-versus-cost view."""

    family: str
    strategy: str
    metric: str
    """The accuracy shown: the first of ``HEADLINE_METRICS`` the run measured (a benchmark's own verdict,
    else ``state_match``, else ``exact_match``)."""
    accuracy: float
    ci_low: float | None
    ci_high: float | None
    n: int
    cost_ms: float | None
    """Median model time per sample (the sum of its calls' latencies), ms."""


@dataclass(frozen=True, slots=True)
class Best:
    """The strategy a family should use, by the run's figures."""

    family: str
    best: Point
    tied: tuple[str, ...]
    """Strategies whose 95% interval overlaps the best's: not distinguishable at this n."""

    def sentence(self) -> str:
        b = self.best
        interval = f" [{b.ci_low:.2f}, {b.ci_high:.2f}]" if b.ci_low is not None and b.ci_high is not None else ""
        cost = f", {_ms(b.cost_ms)} ms of model time per sample" if b.cost_ms is not None else ""
        text = f"{self.family}: best is {b.strategy} ({b.metric} {b.accuracy:.2f}{interval}, n={b.n}{cost})"
        if self.tied:
            text += f"; not distinguishable at this n from {', '.join(self.tied)} (95% intervals overlap)"
        return text + "."


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


class _Cost(NamedTuple):
    family: str
    strategy: str
    cost: float
    """Median model time per sample, ms."""


def sample_costs(run: Run) -> dict[tuple[str, str], float]:
    """Median model time per sample (ms) per (family, strategy)."""
    import polars as pl

    from harness.stats import quantile

    steps = run.steps.drop_nulls("latency_ms")
    if steps.is_empty():
        return {}
    per_sample = steps.group_by("family", "strategy", "sample_id").agg(pl.col("latency_ms").sum())
    agg = per_sample.group_by("family", "strategy").agg(quantile("latency_ms", 50).alias("cost"))
    return {(r.family, r.strategy): float(r.cost) for r in typed_rows(agg, _Cost)}


def tradeoff(run: Run, family_names: Sequence[str], strategy_names: Sequence[str]) -> list[Point]:
    """The accuracy-versus-cost points of a run."""
    costs = sample_costs(run)
    points = []
    for family in family_names:
        for strategy in strategy_names:
            row = next((r for m in HEADLINE_METRICS if (r := run.summary_row(family, strategy, m)) is not None), None)
            if row is None or row.value is None:
                continue
            points.append(Point(family, strategy, row.metric, row.value, row.ci_low, row.ci_high, row.n or 0,
                                costs.get((family, strategy))))
    return points


def best_strategies(points: Sequence[Point]) -> list[Best]:
    """Per family: the most accurate strategy (the cheaper one on a tie), and those not distinguishable."""
    out = []
    for family in dict.fromkeys(p.family for p in points):
        mine = [p for p in points if p.family == family]
        best = max(mine, key=lambda p: (p.accuracy, -(p.cost_ms if p.cost_ms is not None else float("inf"))))
        low = best.ci_low if best.ci_low is not None else best.accuracy
        tied = tuple(p.strategy for p in mine if p is not best
                     and (p.ci_high if p.ci_high is not None else p.accuracy) >= low)
        out.append(Best(family, best, tied))
    return out


# -- per-token overhead against none --------------------------------------------------------------------


def median_diff(a: Sequence[float], b: Sequence[float], resamples: int = 1000) -> tuple[float, float, float]:
    """median(a) - median(b) with a 95% bootstrap interval (fixed seed, so the report is reproducible)."""
    import numpy as np

    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(np.median(xa) - np.median(xb))
    rng = np.random.default_rng(0)
    boots = (np.median(rng.choice(xa, (resamples, xa.size)), axis=1)
             - np.median(rng.choice(xb, (resamples, xb.size)), axis=1))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return diff, float(lo), float(hi)


OVERHEADS = (("ms_per_token", "Δ ms per token"), ("grammar_us_per_token", "Δ grammar µs per token"))
"""The per-token figures compared with ``none``: (column of the steps frame, label)."""


def overheads(run: Run, family: str, strategy: str) -> dict[str, tuple[float, float, float]]:
    """Per token, ``strategy`` minus ``none`` of the same family and run: medians over model calls with
    a 95% bootstrap interval. Per token, because strategies change answer lengths."""
    import polars as pl

    out: dict[str, tuple[float, float, float]] = {}
    for column, _ in OVERHEADS:
        def values(s: str, column: str = column) -> list[float]:
            frame = run.steps.filter((pl.col("family") == family) & (pl.col("strategy") == s))
            return [float(v) for v in frame[column].drop_nulls().to_list()]

        base, cand = values(Strategy.none), values(strategy)
        if base and cand:
            out[column] = median_diff(cand, base)
    return out


# -- failures --------------------------------------------------------------------------------------------


def failures(run: Run) -> Any:
    """polars: error kind, family, strategy, failing samples, samples of that family x strategy, the
    metrics it failed (``(sample)``: the sample itself ended with status error), most frequent first."""
    import polars as pl

    schema = {"sample_id": pl.Utf8, "family": pl.Utf8, "strategy": pl.Utf8, "error_kind": pl.Utf8, "metric": pl.Utf8}
    parts = []
    if run.data.scores is not None:
        scores = scores_frame(run.data.scores)
        parts.append(scores.filter(pl.col("error_kind").is_not_null()).select(
            *(pl.col(c).cast(t) for c, t in schema.items())))
    samples = run.samples
    failed = [(s.sample_id, s.family, s.strategy, s.error_kind or ErrorKind.sample_error_without_kind, "(sample)")
              for s in samples if s.status == "error"]
    parts.append(pl.DataFrame(failed, schema=schema, orient="row"))
    errors = pl.concat(parts)
    totals = pl.DataFrame([(s.family, s.strategy) for s in samples], schema={"family": pl.Utf8, "strategy": pl.Utf8},
                          orient="row").group_by("family", "strategy").len("of")
    return (
        errors.group_by("error_kind", "family", "strategy")
        .agg(pl.col("sample_id").n_unique().alias("samples"), pl.col("metric").unique().sort().alias("metrics"))
        .join(totals, on=["family", "strategy"], how="left")
        .sort(["samples", "error_kind", "family", "strategy"], descending=[True, False, False, False])
    )


class Failure(NamedTuple):
    """One row of ``failures``: an error kind in a family and strategy."""

    error_kind: str
    family: str
    strategy: str
    samples: int
    """Distinct failing samples."""
    of: int | None
    """Samples of that family and strategy."""
    metrics: list[str]
    """The metrics it failed (``(sample)``: the sample itself ended with status error)."""


class _CheckerCount(NamedTuple):
    checker: str
    samples: int


def failure_list(run: Run) -> list[Failure]:
    """``failures`` as typed rows, most frequent first."""
    return typed_rows(failures(run), Failure)


def failures_by_checker(table: Any) -> list[tuple[str, int]]:
    """(checker, failing samples) from ``failures``' rows: the part of a kind before the colon."""
    import polars as pl

    if table.is_empty():
        return []
    agg = (table.with_columns(pl.col("error_kind").str.split(":").list.first().alias("checker"))
           .group_by("checker").agg(pl.col("samples").sum()).sort(["samples", "checker"], descending=[True, False]))
    return [(r.checker, int(r.samples)) for r in typed_rows(agg, _CheckerCount)]


# -- where vLLM's grammar differs (oracle --target vllm) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class TargetLane:
    family: str
    strategy: str
    compared: int
    differing: int
    examples: tuple[str, ...]
    """A few tokens only vLLM's grammar allows there."""


def target_lanes(run: Run) -> list[TargetLane]:
    """The lanes (family x strategy) of a ``--target vllm`` run where vLLM's grammar allows other tokens."""
    lanes: dict[tuple[str, str], list[Any]] = {}
    for sample in run.samples:
        for step in sample.steps:
            stats = step.stats
            if stats is None or stats.target_steps is None:
                continue
            lane = lanes.setdefault((sample.family, sample.strategy), [0, 0, {}])
            lane[0] += stats.target_steps
            lane[1] += stats.target_mask_diff_steps or 0
            for token in stats.target_only_tokens:
                lane[2][token] = None
    return [TargetLane(f, s, c[0], c[1], tuple(list(c[2])[:8])) for (f, s), c in lanes.items() if c[1]]


__all__ = [
    "ACCURACY",
    "FIGURES",
    "KNOWN_METRICS",
    "OVERHEADS",
    "RATES",
    "Best",
    "Failure",
    "Point",
    "Run",
    "TargetLane",
    "best_strategies",
    "failure_list",
    "failures",
    "failures_by_checker",
    "families",
    "load_runs",
    "median_diff",
    "ordered",
    "overheads",
    "sample_costs",
    "strategies",
    "target_lanes",
    "tradeoff",
]
