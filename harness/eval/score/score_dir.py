"""Score a results directory from its saved samples alone: ``harness score RUN_DIR`` (``score_run``)
and the end of every ``harness run`` (``score_samples``, with the suite and tools the run already
read). Writes scores.parquet, summary.json, errors.json and details.jsonl (the gold calls' outputs and the
state differences report.html shows, from the calls scoring executed); never calls an engine."""

from __future__ import annotations

from pathlib import Path

from harness.eval.data import Suite, load_suite
from harness.eval.store import (
    RUN_FILE,
    SAMPLES_FILE,
    RunDirError,
    RunRecord,
    SampleDiff,
    SampleRecord,
    SummaryRow,
    load_samples,
    read_run,
    write_details,
    write_errors,
    write_scores,
    write_summary,
)
from harness.tools import ToolSource


def run_suite_of(run_dir: Path, run: RunRecord) -> Suite:
    """The suite a run directory ran, with its bundle: the copies it keeps (``inputs``, checked against
    their digests), or for a run written before it kept copies the path run.json records (from the
    working directory, then from the run directory). RunDirError naming what is missing or changed."""
    from harness.eval.data import Snapshot, SnapshotError, load_inputs

    if run.inputs is not None:
        kept = run.inputs
        try:
            return load_inputs(run_dir, Snapshot(kept.suite, kept.suite_digest, kept.bundle, kept.bundle_digest))
        except SnapshotError as exc:
            raise RunDirError(exc.path, exc.reason) from None
    path = run.suite.path
    for candidate in (Path(path), run_dir / path):
        if (candidate / "suite.yaml").is_file():
            return load_suite(candidate)
    raise RunDirError(run_dir / RUN_FILE, f"suite {path!r} not found from {Path.cwd()} (a run written before runs "
                      "kept a copy of their suite); pass the suite directory (--suite)")


def _suite_for(run_dir: Path, run: RunRecord, suite_dir: Path | None) -> Suite:
    return load_suite(suite_dir) if suite_dir is not None else run_suite_of(run_dir, run)


def _check_matrix(run_dir: Path, run: RunRecord, suite: Suite, samples: list[SampleRecord]) -> None:
    """Every sample belongs to the run run.json records (its suite kind, families, strategies and
    epochs): a results directory holding samples of two runs would mix them in every figure."""
    options = run.options
    families, strategies, epochs = options.families or (), options.strategies or (), options.epochs or 1
    lanes = {(f, s) for f in families for s in strategies}
    cases = {case.id for case in suite.cases}
    for sample in samples:
        if sample.case_id not in cases:
            raise RunDirError(run_dir / SAMPLES_FILE, f"sample {sample.sample_id!r}: the suite {suite.name!r} "
                              f"({suite.path}) has no case {sample.case_id!r} (is --suite the run's suite?)")
        if sample.kind != suite.kind:
            raise RunDirError(run_dir / SAMPLES_FILE, f"sample {sample.sample_id!r} is of kind {sample.kind}; the "
                              f"suite {suite.name!r} is of kind {suite.kind} (is --suite the run's suite?)")
        if (sample.family, sample.strategy) not in lanes or sample.epoch > epochs:
            raise RunDirError(
                run_dir / SAMPLES_FILE,
                f"sample {sample.sample_id!r} is not part of the run {RUN_FILE} records (families "
                f"{', '.join(families)}; strategies {', '.join(strategies)}; {epochs} epoch(s)): "
                "samples of two runs are mixed here",
            )


async def score_samples(run_dir: Path, run: RunRecord, suite: Suite, source: ToolSource) -> list[SummaryRow]:
    """Score every saved sample of ``run_dir`` (the run ``run`` records, on ``suite`` with the bundle's
    tool ``source``): writes scores.parquet, summary.json, errors.json and details.jsonl; returns the summary rows."""
    import asyncio

    from harness.eval.score.scoring import Scorer
    from harness.eval.score.summary import error_counts, summarize

    samples = list(load_samples(run_dir / SAMPLES_FILE).samples.values())
    _check_matrix(run_dir, run, suite, samples)
    scorer = Scorer(suite.cases, [t.schema for t in source.tools], run.options.engine, source,
                    echo_mode=suite.spec.echo_mode, audited=run.answers_audited,
                    check_after=run.options.unenforceable == "check")
    rows = await scorer.score_all(samples)
    cases = await asyncio.gather(*(scorer.case_detail(scorer.cases[c]) for c in dict.fromkeys(s.case_id for s in samples)))
    found = ((s.sample_id, scorer.differences.get(s.sample_id)) for s in samples)
    write_scores(run_dir, rows)
    summary = summarize(samples, rows)
    write_summary(run_dir, summary)
    write_errors(run_dir, error_counts(rows))
    write_details(run_dir, cases, [SampleDiff(sample_id=k, difference=d) for k, d in found if d is not None])
    return summary


async def score_run(run_dir: Path, suite: Suite | None = None, suite_dir: Path | None = None) -> list[SummaryRow]:
    """Re-score every saved sample of ``run_dir`` (``harness score``): its run.json, its suite (``suite``,
    else ``suite_dir``, else the path run.json records) and that suite's bundle read once; returns the
    summary rows it wrote."""
    from harness.bundles import bundle_source

    run_dir = Path(run_dir)
    run = read_run(run_dir)
    suite = suite or _suite_for(run_dir, run, suite_dir)
    _, source = bundle_source(suite.bundle_dir)
    return await score_samples(run_dir, run, suite, source)


__all__ = ["run_suite_of", "score_run", "score_samples"]
