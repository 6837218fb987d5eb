"""``harness report``: report.md and report.html (with the same figures) for one or several runs.

Input is the results-directory contract (run.json, summary.json, samples.jsonl, scores.parquet) and the
suite run.json names (for prompts and gold answers). Every figure printed comes from those files; a
metric a run did not measure stays blank. report.html is one self-contained file (data, plots, script
and style inline; nothing loaded at view time) with every sample; see ``report_html``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from harness import __version__
from harness.eval.markdown import markdown_table
from harness.eval.report_data import (
    Run,
    failures,
    failures_by_checker,
    families,
    load_runs,
    strategies,
    target_cells,
)
from harness.eval.report_figures import Figure, draw
from harness.eval.report_html import write_html
from harness.eval.report_tables import (
    FAILURE_HEADERS,
    OVERHEAD_HEADERS,
    failure_rows,
    overhead_rows,
    run_facts,
    side_by_side,
    summary_columns,
    summary_rows,
    verdicts,
)

HTML_FILE = "report.html"
MD_FILE = "report.md"


# ---------------------------------------------------------------- report.md


def _markdown(runs: Sequence[Run], family_names: list[str], strategy_names: list[str], figures: list[Figure],
              now: str, plot_dir: Path) -> str:
    md = [
        "# Evaluation report", "",
        f"Runs: {', '.join(f'{r.label} ({r.engine})' for r in runs)}. Written by harness {__version__} at {now}; "
        f"every sample, filterable, in {HTML_FILE}.",
        "Rates are per scoring point (next-call suites) or per episode, with Wilson 95% intervals in brackets; "
        "a blank cell is a metric the run did not measure. Figures are per model call (latency) or per token.", "",
        "## Which strategy", "",
    ]
    md += [f"- {run.label} ({run.engine}): {sentence}" for run, sentence in verdicts(runs, family_names, strategy_names)]
    md.append("")
    for run in runs:
        md += [f"## Run {run.label} ({run.engine})", "", *(f"- {k}: {v}" for k, v in run_facts(run)), "",
               "### Results by family and strategy", ""]
        columns = summary_columns([run])
        md += [markdown_table(["family", "strategy", "n", *(h for _, h in columns)],
                              summary_rows(run, family_names, strategy_names)), "", "### Failures by error kind", ""]
        rows, source = failure_rows(run)
        if not rows:
            md.append(f"No failures recorded ({len(run.samples)} samples; {source}).")
        else:
            by_checker = ", ".join(f"{c} {n}" for c, n in failures_by_checker(failures(run)))
            md += [f"Failing samples by checker: {by_checker} (from {source}).", "",
                   markdown_table(FAILURE_HEADERS, rows), "",
                   "samples: distinct samples with this kind; metrics: the scores it failed ((sample): the "
                   "sample itself ended with status error)."]
        md.append("")
        cells = target_cells(run)
        if cells:
            md += ["### Where vLLM's grammar differs from the harness's", "",
                   markdown_table(["family", "strategy", "compared steps", "differing", "tokens only vLLM allows"],
                                  [[c.family, c.strategy, c.compared, c.differing, " ".join(repr(t) for t in c.examples)]
                                   for c in cells]), ""]
    if len(runs) > 1:
        md += ["## Runs side by side", "", markdown_table(
            ["family", "strategy", "metric", *(f"{r.label} ({r.engine})" for r in runs)],
            side_by_side(runs, family_names, strategy_names)), ""]
    md += ["## Figures", ""]
    for fig in figures:
        md += [f"### {fig.heading}", ""]
        if fig.path is None:
            md += [f"Not drawn: {fig.missing}.", ""]
            continue
        md += [fig.caption, "", f"![{fig.name}]({plot_dir.name}/{fig.path.name})", ""]
        if fig.name == "overhead":
            md += [markdown_table(OVERHEAD_HEADERS, overhead_rows(runs, family_names, strategy_names)), ""]
    return "\n".join(md).rstrip() + "\n"


# ---------------------------------------------------------------- entry point


def write_report(run_dirs: list[Path], out: Path) -> Path:
    """Write ``out/report.md``, ``out/report.html`` and ``out/plots/*.png`` for the runs; returns the
    markdown's path (the page is beside it). Raises RunDirError (naming the file) for an unreadable run."""
    if not run_dirs:
        raise ValueError("write_report needs at least one run directory")
    runs = load_runs(run_dirs)
    family_names, strategy_names = families(runs), strategies(runs)
    out.mkdir(parents=True, exist_ok=True)
    plot_dir = out / "plots"
    figures = draw(runs, family_names, strategy_names, plot_dir)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    path = out / MD_FILE
    path.write_text(_markdown(runs, family_names, strategy_names, figures, now, plot_dir), encoding="utf-8")
    write_html(out / HTML_FILE, runs, family_names, strategy_names, figures, now)
    return path


__all__ = ["HTML_FILE", "MD_FILE", "write_report"]
