"""``harness report``: report.md and report.html (with the same figures) for one or several runs.

Input is the results-directory contract (run.json, summary.json, samples.jsonl, scores.parquet,
details.jsonl) and the run directory's copy of its suite (for prompts and gold answers): nothing is
executed again. Every figure printed comes from those files; a metric a run did not measure stays
blank. The runs are read once (``data.load_runs``), the figures drawn once (``figures.draw``) and the
tables built once (``tables.build_report``); report.md (``markdown``) and report.html (``html``: one
self-contained file with every sample) render the same.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from harness.eval.report.data import families, load_runs, strategies
from harness.eval.report.figures import draw
from harness.eval.report.html import write_html
from harness.eval.report.markdown import HTML_FILE, MD_FILE, render_markdown
from harness.eval.report.tables import build_report


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
    report = build_report(runs, family_names, strategy_names, figures, now)
    path = out / MD_FILE
    path.write_text(render_markdown(report, plot_dir), encoding="utf-8")
    write_html(out / HTML_FILE, report)
    return path


__all__ = ["write_report"]
