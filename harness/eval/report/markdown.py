"""report.md from the report's tables (``tables.Report``), and the project's one markdown-table
writer (report.md, bench.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.eval.report.tables import FAILURE_HEADERS, OVERHEAD_HEADERS, Report, RunTables

HTML_FILE = "report.html"
MD_FILE = "report.md"


def cell(value: Any) -> str:
    """A value as a table cell: ``|`` escaped, line breaks as spaces, None as blank."""
    if value is None:
        return ""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(headers: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table; every cell goes through :func:`cell`."""
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _section(tables: RunTables) -> list[str]:
    """One run: its facts, summary, failures and (``--target vllm``) where vLLM's grammar differs."""
    run = tables.run
    md = [f"## Run {run.label} ({run.engine})", "", *(f"- {k}: {v}" for k, v in tables.facts), "",
          "### Results by family and strategy", "", markdown_table(tables.columns, tables.rows), "",
          "### Failures by error kind", ""]
    if not tables.failure_rows:
        md.append(f"No failures recorded ({len(run.samples)} samples; {tables.failure_source}).")
    else:
        by_checker = ", ".join(f"{c} {n}" for c, n in tables.by_checker)
        md += [f"Failing samples by checker: {by_checker} (from {tables.failure_source}).", "",
               markdown_table(FAILURE_HEADERS, tables.failure_rows), "",
               "samples: distinct samples with this kind; metrics: the scores it failed ((sample): the "
               "sample itself ended with status error)."]
    md.append("")
    if tables.target:
        md += ["### Where vLLM's grammar differs from the harness's", "",
               markdown_table(["family", "strategy", "compared steps", "differing", "tokens only vLLM allows"],
                              [[c.family, c.strategy, c.compared, c.differing, " ".join(repr(t) for t in c.examples)]
                               for c in tables.target]), ""]
    return md


def render_markdown(report: Report, plot_dir: Path) -> str:
    """report.md: the figures are linked from ``plot_dir`` (beside it)."""
    runs = report.runs
    md = [
        "# Evaluation report", "",
        f"Runs: {', '.join(f'{r.label} ({r.engine})' for r in runs)}. Written by harness {__version__} at "
        f"{report.written_at}; every sample, filterable, in {HTML_FILE}.",
        "Rates are per scoring point (next-call suites) or per episode, with Wilson 95% intervals in brackets; "
        "a blank cell is a metric the run did not measure. Figures are per model call (latency) or per token.", "",
        "## Which strategy", "",
    ]
    md += [f"- {run.label} ({run.engine}): {sentence}" for run, sentence in report.verdicts]
    md.append("")
    for tables in report.sections:
        md += _section(tables)
    if report.side_by_side:
        md += ["## Runs side by side", "", markdown_table(
            ["family", "strategy", "metric", *(f"{r.label} ({r.engine})" for r in runs)], report.side_by_side), ""]
    md += ["## Figures", ""]
    for fig in report.figures:
        md += [f"### {fig.heading}", ""]
        if fig.path is None:
            md += [f"Not drawn: {fig.missing}.", ""]
            continue
        md += [fig.caption, "", f"![{fig.name}]({plot_dir.name}/{fig.path.name})", ""]
        if fig.name == "overhead":
            md += [markdown_table(OVERHEAD_HEADERS, report.overhead), ""]
    return "\n".join(md).rstrip() + "\n"


__all__ = ["HTML_FILE", "MD_FILE", "cell", "markdown_table", "render_markdown"]
