"""report.md from the report's tables (``tables.Report``), and the project's one markdown-table
writer (report.md, bench.md). Everything quoted from run files goes through ``text``: a hostile run
(a model id or error kind holding ``<script>`` or a tracking image) shows as the text it is."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.eval.report.compile_time import DISAGREEMENT_HEADERS, TTFT_HEADERS, TTFT_NOTE
from harness.eval.report.tables import (
    CLASS_HEADERS,
    FAILURE_HEADERS,
    OVERHEAD_HEADERS,
    REPEAT_HEADERS,
    REPEATS_NOTE,
    Report,
    RunTables,
)

HTML_FILE = "report.html"
MD_FILE = "report.md"


_MARKUP = str.maketrans({"\\": "\\\\", "`": "\\`", "*": "\\*", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;",
                         "\r": " ", "\n": " "})


def text(value: Any) -> str:
    """A value quoted in report.md as the text it is: HTML (``<``, ``&``: so a token such as ``<pad>``
    shows too), links and images (``](``), code and emphasis marks and table bars escaped, line breaks
    as spaces (no line of its own, so no link definition), None as blank. Model ids, error kinds,
    labels and outputs come from run files, which may come from anywhere."""
    if value is None:
        return ""
    return str(value).translate(_MARKUP).replace("](", "\\](")


def cell(value: Any) -> str:
    """A value as a table cell (see ``text``)."""
    return text(value)


def markdown_table(headers: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table; every cell goes through :func:`cell`."""
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _section(tables: RunTables) -> list[str]:
    """One run: its facts, summary, failures and (``--target vllm``) where vLLM's grammar differs."""
    run = tables.run
    md = [f"## Run {text(run.label)} ({text(run.engine)})", "", *(f"- {text(k)}: {text(v)}" for k, v in tables.facts), "",
          "### Results by family and strategy", "", markdown_table(tables.columns, tables.rows), ""]
    if tables.repeats:
        md += ["### Repeats: pass@k, pass^k and flaky cases", "", REPEATS_NOTE, "",
               markdown_table(REPEAT_HEADERS, tables.repeats), "", markdown_table(CLASS_HEADERS, tables.classes), ""]
    md += ["### Failures by error kind", ""]
    if not tables.failure_rows:
        md.append(f"No failures recorded ({len(run.samples)} samples; {text(tables.failure_source)}).")
    else:
        by_checker = ", ".join(f"{text(c)} {n}" for c, n in tables.by_checker)
        md += [f"Failing samples by checker: {by_checker} (from {text(tables.failure_source)}).", "",
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


def _compile_time(report: Report) -> list[str]:
    md: list[str] = []
    if report.ttft:
        md += ["## Time to first token: compile and the rest", "", TTFT_NOTE, "",
               markdown_table(TTFT_HEADERS, report.ttft), ""]
    if report.disagreements:
        md += ["## Where the grammar backends disagree on a gold answer", "",
               markdown_table(DISAGREEMENT_HEADERS, report.disagreements), ""]
    return md


def render_markdown(report: Report, plot_dir: Path) -> str:
    """report.md: the figures are linked from ``plot_dir`` (beside it)."""
    runs = report.runs
    md = [
        "# Evaluation report", "",
        f"Runs: {', '.join(f'{text(r.label)} ({text(r.engine)})' for r in runs)}. Written by harness {__version__} at "
        f"{report.written_at}; every sample, filterable, in {HTML_FILE}.",
        "Rates are per scoring point (next-call suites) or per episode, with Wilson 95% intervals in brackets "
        "(with several epochs, at the effective number of independent samples: the case is the unit); "
        "a blank cell is a metric the run did not measure. Figures are per model call (latency) or per token.", "",
        "## Which strategy", "",
    ]
    md += [f"- {text(run.label)} ({text(run.engine)}): {text(sentence)}" for run, sentence in report.verdicts]
    md.append("")
    for tables in report.sections:
        md += _section(tables)
    if report.side_by_side:
        md += ["## Runs side by side", "", markdown_table(
            ["family", "strategy", "metric", *(f"{r.label} ({r.engine})" for r in runs)], report.side_by_side), ""]
    md += _compile_time(report)
    md += ["## Figures", ""]
    for fig in report.figures:
        md += [f"### {text(fig.heading)}", ""]
        if fig.path is None:
            md += [f"Not drawn: {text(fig.missing)}.", ""]
            continue
        md += [text(fig.caption), "", f"![{fig.name}]({plot_dir.name}/{fig.path.name})", ""]
        if fig.name == "overhead":
            md += [markdown_table(OVERHEAD_HEADERS, report.overhead), ""]
    return "\n".join(md).rstrip() + "\n"


__all__ = ["HTML_FILE", "MD_FILE", "cell", "markdown_table", "render_markdown", "text"]
