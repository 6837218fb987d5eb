"""The report's figures: which plots the runs' data allow, with titles, units and the engine named.

``draw(runs, ...)`` writes each PNG into the plot folder and returns a :class:`Figure` per plot (its
file and caption) or why it is not drawn; report.md links the files, report.html embeds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.eval.report import plots
from harness.eval.report.data import ACCURACY, OVERHEADS, Run, best_strategies, overheads, tradeoff
from harness.vocabulary import Metric, Strategy


@dataclass(frozen=True, slots=True)
class Figure:
    """One plot of the report: drawn (``path``) or not (``missing`` says why)."""

    name: str
    heading: str
    caption: str
    path: Path | None = None
    missing: str | None = None


def legend_label(run: Run) -> str:
    """``run id (engine)``: how every figure names a run."""
    return f"{run.label} ({run.engine})"


def _grid(runs: Sequence[Run], families: Sequence[str], strategies: Sequence[str], title: str) -> plots.Grid:
    subtitle = ""
    if len(runs) == 1:
        subtitle = f"run {runs[0].label}, engine {runs[0].engine}"
    return plots.Grid(families, strategies, [legend_label(r) for r in runs], title, subtitle)


def _step_values(runs: Sequence[Run], panels: Sequence[str]) -> dict[tuple[str, str, str, str], list[float]]:
    """(panel, run label, family, strategy) -> the steps' values of column ``panel`` (lists exploded)."""
    import polars as pl

    data: dict[tuple[str, str, str, str], list[float]] = {}
    for run in runs:
        label = legend_label(run)
        for panel in panels:
            frame = run.steps.select("family", "strategy", panel)
            if isinstance(frame.schema[panel], pl.List):
                frame = frame.explode(panel)
            frame = frame.drop_nulls(panel)
            for (family, strategy), group in frame.group_by("family", "strategy"):
                values = [float(v) for v in group[panel].to_list()]
                if values:
                    data[(panel, label, str(family), str(strategy))] = values
    return data


def _all_oracle(runs: Sequence[Run]) -> bool:
    return all(r.data.run.options.engine == "oracle" for r in runs)


def draw(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> list[Figure]:
    """Every plot the data allow (or why not), in the order the report shows them."""
    plot_dir.mkdir(parents=True, exist_ok=True)
    return [
        _accuracy(runs, families, strategies, plot_dir),
        _tradeoff(runs, families, strategies, plot_dir),
        _rejections(runs, families, strategies, plot_dir),
        _per_token(runs, families, strategies, plot_dir),
        _latency(runs, families, strategies, plot_dir),
        _mask(runs, families, strategies, plot_dir),
        _overhead(runs, families, strategies, plot_dir),
    ]


def _bar_of(runs: Sequence[Run]) -> plots.BarFn:
    by_label = {legend_label(r): r for r in runs}

    def bar(panel: str, run: str, family: str, strategy: str) -> plots.Bar | None:
        row = by_label[run].summary_row(family, strategy, panel)
        return None if row is None or row.value is None else (row.value, row.ci_low, row.ci_high)

    return bar


def _accuracy(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Accuracy and validity"
    measured = [m for m in ACCURACY if any(r.summary_row(f, s, m) for r in runs for f in families for s in strategies)]
    if not measured:
        return Figure("accuracy", heading, "", missing="no validity, exact_match or state_match in summary.json")
    grid = _grid(runs, families, strategies, "Accuracy per strategy (rate of scoring points, 95% Wilson interval)")
    path = plots.bar_grid(plot_dir / "accuracy.png", grid, [(m, f"{m} (rate)") for m in measured], _bar_of(runs),
                          ylim=(0.0, 1.15))
    return Figure("accuracy", heading, "Bars: rate; whiskers: Wilson 95% interval.", path)


def _tradeoff(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Accuracy against cost"
    dots: dict[tuple[str, str, str], plots.Dot] = {}
    best: dict[tuple[str, str], str] = {}
    metrics = set()
    for run in runs:
        points = tradeoff(run, families, strategies)
        for p in points:
            if p.cost_ms is not None:
                dots[(legend_label(run), p.family, p.strategy)] = (p.cost_ms, p.accuracy, p.ci_low, p.ci_high)
                metrics.add(p.metric)
        for b in best_strategies(points):
            best[(legend_label(run), b.family)] = b.best.strategy
    if not dots:
        return Figure("tradeoff", heading, "", missing="needs accuracy and model-call latencies")
    metric = " / ".join(sorted(metrics))
    cost = "gold replay time per sample (ms)" if _all_oracle(runs) else "model time per sample, median (ms)"
    grid = _grid(runs, families, strategies, f"Accuracy ({metric}) against cost per family and strategy")
    path = plots.scatter_grid(plot_dir / "tradeoff.png", grid, dots, cost, f"{metric} (rate, 95% interval)", best)
    return Figure("tradeoff", heading, f"x: {cost}, the sum of a sample's model calls; y: {metric}. Ringed: the "
                  "most accurate strategy of the family (the cheaper one on a tie).", path)


def _rejections(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Grammar rejections (oracle)"
    panels = [(m, label) for m, label in ((Metric.grammar_rejection, "grammar_rejection (rate of gold answers)"),
                                          (Metric.target_mask_diff, "target_mask_diff (rate of compared steps)"))
              if any(r.summary_row(f, s, m) for r in runs for f in families for s in strategies)]
    if not panels:
        return Figure("rejections", heading, "", missing="only the oracle engine measures grammar rejections")
    grid = _grid(runs, families, strategies, "Gold answers the grammar rejects (oracle: grammars, no model)")
    path = plots.bar_grid(plot_dir / "rejections.png", grid, panels, _bar_of(runs), ylim=(0.0, 1.15))
    return Figure("rejections", heading, "grammar_rejection: gold answers a strategy's grammar forbids (should be "
                  "0); target_mask_diff: steps where vLLM's grammar allows other tokens than the harness's.", path)


def _per_token(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Speed per token"
    panels = [("ms_per_token", "ms per generated token"), ("tokens", "tokens per call")]
    data = _step_values(runs, [p for p, _ in panels])
    if not any(k[0] == "ms_per_token" for k in data):
        return Figure("per_token", heading, "", missing="samples.jsonl records no latencies with token counts")
    what = "gold replay (oracle: grammar work, no model)" if _all_oracle(runs) else "model calls"
    grid = _grid(runs, families, strategies, f"Time per generated token and answer length, {what}")
    path = plots.box_grid(plot_dir / "per_token.png", grid, panels, data)
    return Figure("per_token", heading, "A call's latency over the tokens it generated, and how many it generated: "
                  "strategies change answer lengths, so compare speed per token. Boxes: quartiles and median; "
                  "whiskers: 1.5 IQR; outliers not drawn.", path)


def _latency(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Latency per model call"
    data = _step_values(runs, ["latency_ms"])
    if not data:
        return Figure("latency", heading, "", missing="samples.jsonl records no latencies")
    title = ("Gold replay time per call (oracle: grammar work, no model)" if _all_oracle(runs)
             else "Latency per model call (step), as the client saw it")
    grid = _grid(runs, families, strategies, title)
    path = plots.box_grid(plot_dir / "latency.png", grid, [("latency_ms", "latency per call (ms)")], data)
    return Figure("latency", heading, "Per call, not per token: see the speed per token above. Boxes: quartiles "
                  "and median; whiskers: 1.5 IQR.", path)


def _mask(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Mask time per fill"
    data = _step_values(runs, ["mask_us"])
    if not data:
        return Figure("mask", heading, "", missing="no engine of these runs measures its own masks (a server does not)")
    grid = _grid(runs, families, strategies, "Token-mask fill time (xgrammar, per fill)")
    path = plots.box_grid(plot_dir / "mask.png", grid, [("mask_us", "mask fill (µs)")], data)
    return Figure("mask", heading, "The oracle fills the mask at every token; the embedded engine only when the "
                  "grammar rejects the model's own token. p99 is in the table.", path)


def _overhead(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> Figure:
    heading = "Overhead per token against none"
    constrained = [s for s in strategies if s != Strategy.none]
    by_label = {legend_label(r): r for r in runs}
    if not any(overheads(r, f, s) for r in runs for f in families for s in constrained):
        return Figure("overhead", heading, "", missing="needs samples of strategy none and of another strategy, "
                      "with token counts")

    def over(panel: str, run: str, family: str, strategy: str) -> plots.Bar | None:
        return overheads(by_label[run], family, strategy).get(panel)

    grid = _grid(runs, families, constrained, "Per-token overhead against none (median per call, 95% bootstrap interval)")
    path = plots.bar_grid(plot_dir / "overhead.png", grid, [(c, label) for c, label in OVERHEADS], over,
                          zero_line=True)
    return Figure("overhead", heading, "Median per call of the strategy minus the median of none, same family and "
                  "run: time per generated token, and the engine's grammar work (mask fills and accepts) per token.",
                  path)


__all__ = ["Figure", "draw", "legend_label"]
