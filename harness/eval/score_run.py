"""Score a results directory from its saved samples alone: ``harness score RUN_DIR`` and the end of
every ``harness run``. Writes scores.parquet, summary.json and errors.json; never calls an engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.eval.results import (
    ERRORS_FILE,
    SAMPLES_FILE,
    SCORES_FILE,
    SUMMARY_FILE,
    load_samples,
    read_run,
    write_json,
    write_scores,
)
from harness.eval.suite import Suite, load_suite


def _suite_for(run_dir: Path, run: dict[str, Any], suite_dir: Path | None) -> Suite:
    if suite_dir is not None:
        return load_suite(suite_dir)
    path = (run.get("suite") or {}).get("path")
    if not path:
        raise ValueError(f"{run_dir / 'run.json'}: suite.path is missing; pass the suite directory")
    candidates = [Path(path), run_dir / path]
    for candidate in candidates:
        if (candidate / "suite.yaml").is_file():
            return load_suite(candidate)
    raise FileNotFoundError(
        f"{run_dir / 'run.json'}: suite {path!r} not found from {Path.cwd()}; pass the suite directory"
    )


async def score_run(run_dir: Path, suite: Suite | None = None, suite_dir: Path | None = None) -> list[dict[str, Any]]:
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
    scorer = Scorer(suite.cases, [t.schema for t in tools], str(run.get("engine")), SandboxStates(tools))
    rows = await scorer.score_all(samples)
    write_scores(run_dir / SCORES_FILE, rows)
    summary = summarize(samples, rows)
    write_json(run_dir / SUMMARY_FILE, summary)
    write_json(run_dir / ERRORS_FILE, error_counts(rows))
    return summary


__all__ = ["score_run"]
