"""``harness report``: the runs read once (``data``), the figures (``figures`` with ``plots``), the
tables built once (``tables``), rendered as report.md (``markdown``) and report.html (``html``);
``write`` puts them together."""

from harness.eval.report.data import Run, load_runs
from harness.eval.report.figures import Figure
from harness.eval.report.markdown import HTML_FILE, MD_FILE, markdown_table, render_markdown
from harness.eval.report.tables import Report, RunTables, build_report
from harness.eval.report.write import write_report

__all__ = [
    "HTML_FILE",
    "MD_FILE",
    "Figure",
    "Report",
    "Run",
    "RunTables",
    "build_report",
    "load_runs",
    "markdown_table",
    "render_markdown",
    "write_report",
]
