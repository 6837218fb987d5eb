"""``harness report``: a markdown report with tables and PNG plots for one or several runs.

Input is the results-directory contract (run.json, summary.json, samples.jsonl, scores.parquet).
Every figure printed comes from those files; a metric a run did not measure stays blank. polars,
numpy and matplotlib load inside the functions.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__
from harness.agents.constraint import STRATEGIES
from harness.eval import plots
from harness.eval.records import SampleRecord, SummaryRow
from harness.eval.results import RunDir, load_run_dir, scores_frame

ACCURACY = ("validity", "exact_match", "state_match")
RATES = (*ACCURACY, "grammar_rejection")
TIMINGS = (
    ("ttft_ms_p50", "ttft p50 (ms)"),
    ("latency_ms_p50", "latency p50 (ms)"),
    ("compile_ms", "compile (ms)"),
    ("mask_us_p50", "mask p50 (µs)"),
    ("mask_us_p99", "mask p99 (µs)"),
    ("tool_us_p50", "tool p50 (µs)"),
    ("tool_us_p99", "tool p99 (µs)"),
)
KNOWN_METRICS = (*RATES, *(m for m, _ in TIMINGS))
Key = tuple[str, str]  # (family, strategy)


@dataclass(slots=True)
class Timings:
    """Distributions taken from samples.jsonl, per (family, strategy)."""

    step_latency_ms: dict[Key, list[float]] = field(default_factory=dict)
    """Per model call."""
    mask_us: dict[Key, list[float]] = field(default_factory=dict)
    sample_latency_ms: dict[Key, list[float]] = field(default_factory=dict)
    sample_grammar_ms: dict[Key, list[float]] = field(default_factory=dict)
    """Per sample: the sum of mask and accept times over all steps (only where every step has stats)."""


@dataclass(slots=True)
class Run:
    label: str
    data: RunDir
    timings: Timings

    def summary_row(self, family: str, strategy: str, metric: str) -> SummaryRow | None:
        for row in self.data.summary:
            if (row.family, row.strategy, row.metric) == (family, strategy, metric):
                return row if row.value is not None else None
        return None


# ---------------------------------------------------------------- formatting


def _num(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _cell(row: SummaryRow | None, rate: bool) -> str:
    if row is None or row.value is None:
        return ""
    fmt = (lambda x: f"{x:.3f}") if rate else _num
    text = fmt(row.value)
    if row.ci_low is not None and row.ci_high is not None:
        text += f" [{fmt(row.ci_low)}, {fmt(row.ci_high)}]"
    return text


def _md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def esc(x: Any) -> str:
        return "" if x is None else str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _ordered(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    seen = list(dict.fromkeys(values))
    first = [v for v in dict.fromkeys(preferred) if v in seen]
    return first + [v for v in seen if v not in first]


def _families(runs: Sequence[Run]) -> list[str]:
    listed = [f for r in runs for f in r.data.run.families]
    found = [row.family for r in runs for row in r.data.summary]
    return _ordered([*listed, *found], listed)


def _strategies(runs: Sequence[Run]) -> list[str]:
    listed = [s for r in runs for s in r.data.run.strategies]
    found = [row.strategy for r in runs for row in r.data.summary]
    return _ordered([*listed, *found], STRATEGIES)


# ---------------------------------------------------------------- data from samples


def collect_timings(samples: Sequence[SampleRecord]) -> Timings:
    """Per-step latency, per-token mask time and per-sample totals from the samples' steps."""
    t = Timings()
    for s in samples:
        key = (s.family, s.strategy)
        lat = [x.latency_ms for x in s.steps]
        t.step_latency_ms.setdefault(key, []).extend(v for v in lat if v is not None)
        if s.steps and all(v is not None for v in lat):
            t.sample_latency_ms.setdefault(key, []).append(sum(v for v in lat if v is not None))
        stats = [x.stats for x in s.steps]
        for st in stats:
            if st is not None:
                t.mask_us.setdefault(key, []).extend(st.mask_us)
        if s.steps and all(st is not None for st in stats):
            total = sum(v for st in stats if st is not None for v in (*st.mask_us, *st.accept_us))
            t.sample_grammar_ms.setdefault(key, []).append(total / 1000.0)
    return t


def _median_diff(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """median(a) - median(b) with a 95% bootstrap interval (1000 resamples, fixed seed)."""
    import numpy as np

    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(np.median(xa) - np.median(xb))
    rng = np.random.default_rng(0)
    boots = np.median(rng.choice(xa, (1000, xa.size)), axis=1) - np.median(rng.choice(xb, (1000, xb.size)), axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return diff, float(lo), float(hi)


def overheads(run: Run, family: str, strategy: str) -> dict[str, tuple[float, float, float]]:
    """Per-sample latency and grammar time of ``strategy`` minus ``none`` of the same family (ms)."""
    out: dict[str, tuple[float, float, float]] = {}
    for name, series in (("latency", run.timings.sample_latency_ms), ("grammar time", run.timings.sample_grammar_ms)):
        base, cand = series.get((family, "none")), series.get((family, strategy))
        if base and cand:
            out[name] = _median_diff(cand, base)
    return out


# ---------------------------------------------------------------- markdown sections


def _header(run: Run) -> str:
    r = run.data.run
    lines = [f"## Run `{run.label}`", ""]
    lines.append(f"- Directory: `{run.data.path}`")
    lines.append(f"- Suite: {r.suite.name} {r.suite.version} ({r.suite.kind}), `{r.suite.path}`"
                 + (f"; bundle `{r.bundle}`" if r.bundle else ""))
    lines.append(f"- Engine: `{r.engine}` — {r.engine_note}")
    if r.model or r.base_url:
        lines.append(f"- Model: {r.model or '(not given)'}; base URL: {r.base_url or '(none)'}")
    lines.append("- Families: " + ", ".join(r.families) + "; strategies: " + ", ".join(r.strategies))
    lines.append(f"- epochs: {r.epochs}; limit: {json.dumps(r.limit)}; concurrency: {r.concurrency}; "
                 f"at most {r.max_steps_per_turn} steps per turn")
    lines.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in r.versions.model_dump().items()))
    lines.append(f"- Git commit: {r.git_commit or '(unknown)'}; started {r.started_at}, finished {r.finished_at}")
    samples = run.data.samples
    if samples is None:
        lines.append("- samples.jsonl: absent (no distributions or error details from samples)")
    else:
        rows = samples.samples.values()
        n_err = sum(1 for s in rows if s.status == "error")
        lines.append(f"- Samples: {len(rows)} finished, {n_err} with status `error`")
        if samples.torn_tail_at is not None:
            lines.append(f"- **samples.jsonl: a torn last line (from byte {samples.torn_tail_at}) was skipped**")
        if samples.duplicates:
            lines.append(f"- **samples.jsonl: {samples.duplicates} duplicate sample id(s); the last of each kept**")
    return "\n".join(lines)


def metrics_table(run: Run, families: Sequence[str], strategies: Sequence[str]) -> str:
    """One row per (family, strategy): rates with 95% CI, then timings; blank = not measured."""
    import polars as pl

    extra = _ordered((row.metric for row in run.data.summary if row.metric not in KNOWN_METRICS), ())
    cells: list[dict[str, Any]] = []
    for row in run.data.summary:
        if row.value is None:
            continue
        cells.append({**row.model_dump(), "cell": _cell(row, row.metric in RATES)})
    if not cells:
        return "_summary.json has no values._"
    df = pl.DataFrame(cells).select("family", "strategy", "metric", "cell", pl.col("n").cast(pl.Int64))
    wide = df.pivot(on="metric", index=["family", "strategy"], values="cell", aggregate_function="first")
    n_of = (
        df.filter(pl.col("metric").is_in(list(RATES)))
        .group_by("family", "strategy")
        .agg(pl.col("n").filter(pl.col("metric") == "validity").first().alias("nv"), pl.col("n").max().alias("nmax"))
        .with_columns(pl.coalesce("nv", "nmax").alias("n"))
        .select("family", "strategy", "n")
    )
    wide = wide.join(n_of, on=["family", "strategy"], how="left")
    columns = [*RATES, *(m for m, _ in TIMINGS), *extra]
    for col in columns:
        if col not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Utf8).alias(col))
    order = {k: i for i, k in enumerate((f, s) for f in families for s in strategies)}
    records = sorted(wide.to_dicts(), key=lambda d: order.get((d["family"], d["strategy"]), len(order)))
    headers = ["family", "strategy", "n", *RATES, *(label for _, label in TIMINGS), *extra]
    body = [
        [d["family"], d["strategy"], "" if d["n"] is None else d["n"], *("" if d[c] is None else d[c] for c in columns)]
        for d in records
    ]
    return _md_table(headers, body)


def error_breakdown(run: Run) -> str:
    """Failing samples per ``checker:reason``, family and strategy (from scores.parquet and samples.jsonl)."""
    import polars as pl

    schema = {"sample_id": pl.Utf8, "family": pl.Utf8, "strategy": pl.Utf8, "error_kind": pl.Utf8, "metric": pl.Utf8}
    parts: list[pl.DataFrame] = []
    scores = None if run.data.scores is None else scores_frame(run.data.scores)
    if scores is not None:
        parts.append(scores.filter(pl.col("error_kind").is_not_null()).select(
            *(pl.col(c).cast(t) for c, t in schema.items())))
    samples = list(run.data.samples.samples.values()) if run.data.samples is not None else []
    failed = [
        {"sample_id": s.sample_id, "family": s.family, "strategy": s.strategy,
         "error_kind": s.error_kind or "sample:error_without_kind", "metric": "(sample)"}
        for s in samples if s.status == "error"
    ]
    if failed:
        parts.append(pl.DataFrame(failed, schema=schema))
    if scores is None and run.data.samples is None:
        if run.data.errors:
            body = [[e.error_kind, e.family, e.strategy, e.count] for e in run.data.errors]
            return "From errors.json:\n\n" + _md_table(["error kind", "family", "strategy", "count"], body)
        return "_No per-sample data (scores.parquet, samples.jsonl, errors.json) in this run directory._"
    total = len(samples) if samples else (scores["sample_id"].n_unique() if scores is not None else 0)
    errs = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    if errs.is_empty():
        return f"No errors recorded ({total} samples)."
    if samples:
        totals = pl.DataFrame([{"family": s.family, "strategy": s.strategy} for s in samples])
    else:
        assert scores is not None
        totals = scores.select("sample_id", "family", "strategy").unique().select("family", "strategy")
    totals = totals.group_by("family", "strategy").len("of")
    table = (
        errs.group_by("error_kind", "family", "strategy")
        .agg(pl.col("sample_id").n_unique().alias("samples"), pl.col("metric").unique().sort().alias("metrics"))
        .join(totals, on=["family", "strategy"], how="left")
        .sort(["samples", "error_kind", "family", "strategy"], descending=[True, False, False, False])
    )
    checker = (
        errs.select("sample_id", "error_kind").unique()
        .with_columns(pl.col("error_kind").str.split(":").list.first().alias("checker"))
        .group_by("checker").len("samples").sort(["samples", "checker"], descending=[True, False])
    )
    body = [
        [d["error_kind"], d["family"], d["strategy"], d["samples"], "" if d["of"] is None else d["of"],
         ", ".join(d["metrics"])]
        for d in table.to_dicts()
    ]
    by_checker = ", ".join(f"`{d['checker']}` {d['samples']}" for d in checker.to_dicts())
    return (
        f"Failing samples by checker (of {total}): {by_checker}\n\n"
        + _md_table(["error kind", "family", "strategy", "samples", "of", "metrics"], body)
        + "\n\n_samples: distinct samples with this error kind; metrics: the scores it failed "
        "(`(sample)`: the sample itself ended with status `error`)._"
    )


def side_by_side(runs: Sequence[Run], families: Sequence[str], strategies: Sequence[str]) -> str:
    """Every (family, strategy, metric) with one value column per run."""
    metrics = _ordered((row.metric for r in runs for row in r.data.summary), KNOWN_METRICS)
    body = []
    for f in families:
        for s in strategies:
            for m in metrics:
                vals = [r.summary_row(f, s, m) for r in runs]
                if all(v is None for v in vals):
                    continue
                fmt = (lambda x: f"{x:.3f}") if m in RATES else _num
                body.append([f, s, m, *("" if v is None or v.value is None else fmt(v.value) for v in vals)])
    return _md_table(["family", "strategy", "metric", *(f"`{r.label}`" for r in runs)], body)


def _overhead_table(runs: Sequence[Run], families: Sequence[str], strategies: Sequence[str]) -> str | None:
    body = []
    for r in runs:
        for f in families:
            for s in strategies:
                if s == "none":
                    continue
                o = overheads(r, f, s)
                if not o:
                    continue
                cell = {k: f"{_num(v[0])} [{_num(v[1])}, {_num(v[2])}]" for k, v in o.items()}
                body.append([r.label, f, s, cell.get("latency", ""), cell.get("grammar time", "")])
    if not body:
        return None
    return _md_table(["run", "family", "strategy", "Δ latency p50 (ms)", "Δ grammar time p50 (ms)"], body)


# ---------------------------------------------------------------- plots


def _plots(runs: Sequence[Run], families: list[str], strategies: list[str], plot_dir: Path) -> list[str]:
    """Draw every plot the data allows; returns markdown lines (images, or why a plot is missing)."""
    labels = [r.label for r in runs]
    by_label = {r.label: r for r in runs}
    out: list[str] = []
    rel = plot_dir.name

    acc = [m for m in ACCURACY if any(r.summary_row(f, s, m) for r in runs for f in families for s in strategies)]
    out.append("### Accuracy and validity (95% CI)\n")
    if acc:
        def bar(panel: str, run: str, family: str, strategy: str) -> plots.Bar | None:
            row = by_label[run].summary_row(family, strategy, panel)
            return None if row is None or row.value is None else (row.value, row.ci_low, row.ci_high)

        grid = plots.Grid(families, strategies, labels, "Accuracy per strategy (95% CI)")
        plots.bar_grid(plot_dir / "accuracy.png", grid, [(m, m) for m in acc], bar, ylim=(0.0, 1.12))
        out.append(f"![accuracy]({rel}/accuracy.png)\n")
    else:
        out.append("_Not plotted: no validity, exact_match or state_match in summary.json._\n")

    for name, attr, title, ylabel in (
        ("latency", "step_latency_ms", "Latency per model call (step)", "latency (ms)"),
        ("mask", "mask_us", "Mask time per generated token", "mask time (µs)"),
    ):
        data = {(r.label, f, s): v for r in runs for (f, s), v in getattr(r.timings, attr).items() if v}
        out.append(f"### {title}\n")
        if data:
            grid = plots.Grid(families, strategies, labels, title)
            plots.box_grid(plot_dir / f"{name}.png", grid, data, ylabel)
            out.append("Boxes: quartiles and median; whiskers: 1.5 IQR; outliers not drawn (p99 is in the table).\n")
            out.append(f"![{name}]({rel}/{name}.png)\n")
        else:
            out.append(f"_Not plotted: samples.jsonl records no {ylabel.split(' (')[0]}._\n")

    out.append("### Overhead against `none`\n")
    constrained = [s for s in strategies if s != "none"]
    table = _overhead_table(runs, families, strategies)
    if table is None:
        out.append("_Not available: needs samples of strategy `none` and of another strategy, with latencies._\n")
        return out

    def over(panel: str, run: str, family: str, strategy: str) -> plots.Bar | None:
        return overheads(by_label[run], family, strategy).get(panel)

    grid = plots.Grid(families, constrained, labels, "Overhead against `none` (median per sample, 95% bootstrap CI)")
    panels = [("latency", "Δ latency (ms)"), ("grammar time", "Δ mask+accept time (ms)")]
    plots.bar_grid(plot_dir / "overhead.png", grid, panels, over, zero_line=True)
    out.append(
        "Median per sample of the strategy minus the median of `none` in the same family and run; "
        "grammar time = sum of per-token mask and accept times.\n"
    )
    out.append(table + "\n")
    out.append(f"![overhead]({rel}/overhead.png)\n")
    return out


# ---------------------------------------------------------------- entry point


def load_runs(run_dirs: Sequence[Path]) -> list[Run]:
    runs: list[Run] = []
    seen: dict[str, int] = {}
    for d in run_dirs:
        data = load_run_dir(Path(d))
        label = data.run_id
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label}#{seen[label]}"
        runs.append(Run(label, data, collect_timings(list(data.samples.samples.values()) if data.samples else [])))
    return runs


def write_report(run_dirs: list[Path], out: Path) -> Path:
    """Write ``out/report.md`` and ``out/plots/*.png`` for the runs; returns the report's path.

    Raises RunDirError (naming the file) when a run directory cannot be read.
    """
    if not run_dirs:
        raise ValueError("write_report needs at least one run directory")
    runs = load_runs(run_dirs)
    families, strategies = _families(runs), _strategies(runs)
    out.mkdir(parents=True, exist_ok=True)
    plot_dir = out / "plots"
    plot_dir.mkdir(exist_ok=True)

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    md = [
        "# Evaluation report",
        "",
        f"Runs: {', '.join(f'`{r.label}`' for r in runs)}. Written by harness {__version__} at {now}.",
        "Rates are per scoring point (next-call suites) or per episode, with Wilson 95% intervals in brackets; "
        "a blank cell is a metric the run did not measure.",
        "",
    ]
    for run in runs:
        md += [_header(run), "", "### Results by family and strategy", "",
               metrics_table(run, families, strategies), "", "### Errors by kind", "", error_breakdown(run), ""]
    if len(runs) > 1:
        md += ["## Runs side by side", "", side_by_side(runs, families, strategies), ""]
    md += ["## Plots", "", *_plots(runs, families, strategies, plot_dir)]
    path = out / "report.md"
    path.write_text("\n".join(md).rstrip() + "\n", encoding="utf-8")
    return path
