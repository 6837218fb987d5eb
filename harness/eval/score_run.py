"""Score a results directory from its saved samples alone: ``harness score RUN_DIR`` and the end of
every ``harness run``. Writes scores.parquet, summary.json and errors.json; never calls an engine."""

from __future__ import annotations

from pathlib import Path

from harness.eval.records import RunRecord, SampleRecord, SummaryRow
from harness.eval.results import (
    RUN_FILE,
    SAMPLES_FILE,
    RunDirError,
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
    raise RunDirError(
        run_dir / RUN_FILE, f"suite {path!r} not found from {Path.cwd()}; pass the suite directory (--suite)"
    )


def _check_matrix(run_dir: Path, run: RunRecord, suite: Suite, samples: list[SampleRecord]) -> None:
    """Every sample belongs to the run run.json records (its suite kind, families, strategies and
    epochs): a results directory holding samples of two runs would mix them in every figure."""
    lanes = {(f, s) for f in run.families for s in run.strategies}
    cases = {case.id for case in suite.cases}
    for sample in samples:
        if sample.case_id not in cases:
            raise RunDirError(run_dir / SAMPLES_FILE, f"sample {sample.sample_id!r}: the suite {suite.name!r} "
                              f"({suite.path}) has no case {sample.case_id!r} (is --suite the run's suite?)")
        if sample.kind != suite.kind:
            raise RunDirError(run_dir / SAMPLES_FILE, f"sample {sample.sample_id!r} is of kind {sample.kind}; the "
                              f"suite {suite.name!r} is of kind {suite.kind} (is --suite the run's suite?)")
        if (sample.family, sample.strategy) not in lanes or sample.epoch > run.epochs:
            raise RunDirError(
                run_dir / SAMPLES_FILE,
                f"sample {sample.sample_id!r} is not part of the run {RUN_FILE} records (families "
                f"{', '.join(run.families)}; strategies {', '.join(run.strategies)}; {run.epochs} epoch(s)): "
                "samples of two runs are mixed here",
            )


async def score_run(run_dir: Path, suite: Suite | None = None, suite_dir: Path | None = None) -> list[SummaryRow]:
    """Re-score every saved sample of ``run_dir``; returns the summary rows it wrote."""
    from harness.bundles import load_tools
    from harness.eval.execution import SandboxStates
    from harness.eval.scoring import Scorer
    from harness.eval.summary import error_counts, summarize

    run_dir = Path(run_dir)
    run = read_run(run_dir)
    suite = suite or _suite_for(run_dir, run, suite_dir)
    _, tools = load_tools(suite.bundle_dir)
    samples = list(load_samples(run_dir / SAMPLES_FILE).samples.values())
    _check_matrix(run_dir, run, suite, samples)
    states = SandboxStates(tools, echo_mode=suite.spec.echo_mode)
    scorer = Scorer(suite.cases, [t.schema for t in tools], run.engine, states)
    rows = await scorer.score_all(samples)
    write_scores(run_dir, rows)
    summary = summarize(samples, rows)
    write_summary(run_dir, summary)
    write_errors(run_dir, error_counts(rows))
    return summary


__all__ = ["score_run"]
