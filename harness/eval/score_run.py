"""Score a results directory from its saved samples alone: ``harness score RUN_DIR`` and the end of
every ``harness run``. Writes scores.parquet, summary.json and errors.json; never calls an engine."""

from __future__ import annotations

from pathlib import Path

from harness.eval.records import RunRecord, SummaryRow
from harness.eval.results import (
    SAMPLES_FILE,
    load_samples,
    read_run,
    write_errors,
    write_scores,
    write_summary,
)
from harness.eval.suite import Suite, load_suite


def _suite_for(run_dir: Path, run: RunRecord, suite_dir: Path | None) -> Suite:
    if suite_dir is not None:
        return load_suite(suite_dir)
    path = run.suite.path
    candidates = [Path(path), run_dir / path]
    for candidate in candidates:
        if (candidate / "suite.yaml").is_file():
            return load_suite(candidate)
    raise FileNotFoundError(
        f"{run_dir / 'run.json'}: suite {path!r} not found from {Path.cwd()}; pass the suite directory"
    )


async def score_run(run_dir: Path, suite: Suite | None = None, suite_dir: Path | None = None) -> list[SummaryRow]:
    """Re-score every saved sample of ``run_dir``; returns the summary rows it wrote."""
    from harness.agents.bundle import bundle_file
    from harness.bundles import load_bundle
    from harness.eval.execution import SandboxStates
    from harness.eval.scoring import Scorer
    from harness.eval.summary import error_counts, summarize
    from harness.sandbox import load_bundle_tools

    run_dir = Path(run_dir)
    run = read_run(run_dir)
    suite = suite or _suite_for(run_dir, run, suite_dir)
    file = bundle_file(suite.bundle_dir)
    tools = load_bundle_tools(file, load_bundle(file))
    samples = list(load_samples(run_dir / SAMPLES_FILE).samples.values())
    states = SandboxStates(tools, echo_mode=suite.spec.echo_mode)
    scorer = Scorer(suite.cases, [t.schema for t in tools], run.engine, states)
    rows = await scorer.score_all(samples)
    write_scores(run_dir, rows)
    summary = summarize(samples, rows)
    write_summary(run_dir, summary)
    write_errors(run_dir, error_counts(rows))
    return summary


__all__ = ["score_run"]
