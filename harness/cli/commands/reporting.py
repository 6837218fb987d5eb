"""``harness report`` and ``harness compare``: read results directories, write a report, gate CI.

polars, matplotlib and rich's table load inside the commands, never at ``harness --help``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from harness.cli.errors import fail

# The same defaults as harness.eval.compare (a test checks they agree); not imported from there so
# that ``harness --help`` does not import harness.eval.
DEFAULT_MAX_DROP = 0.02
DEFAULT_MAX_SLOWDOWN = 3.0
DEFAULT_MIN_TIMING_N = 20


class TimingGateChoice(StrEnum):
    """harness.eval.compare.TIMING_GATES as choices (a test checks they agree)."""

    auto = "auto"
    gate = "gate"
    info = "info"


def report(
    run_dirs: Annotated[
        list[Path], typer.Argument(metavar="RUN_DIR...", help="One or more results directories (runs side by side).")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Where report.md, report.html and plots/ go (default: the first RUN_DIR)."),
    ] = None,
) -> None:
    """Write report.md and report.html (summary with intervals, the best strategy, failures by error kind,
    figures; the page also every sample, filterable) and PNG plots for one or more runs."""
    from harness.eval.report import write_report
    from harness.eval.store import RunDirError
    from harness.files import InputError, check_output_dir

    target = out if out is not None else run_dirs[0]
    try:
        check_output_dir(target)
        path = write_report(run_dirs, target)
    except (RunDirError, InputError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--out {str(target)!r}: cannot write the report: {exc.strerror or exc}")
    typer.echo(f"wrote {path}")
    typer.echo(f"wrote {path.with_name('report.html')}")
    for png in sorted((path.parent / "plots").glob("*.png")):
        typer.echo(f"wrote {png}")


def compare(
    baseline: Annotated[Path, typer.Argument(metavar="BASELINE", help="Baseline run dir (run.json + summary.json).")],
    candidate: Annotated[Path, typer.Argument(metavar="CANDIDATE", help="Candidate run dir.")],
    max_drop: Annotated[
        float,
        typer.Option(
            "--max-drop", metavar="RATE",
            min=0.0,
            help="Largest allowed absolute drop of validity/exact_match/state_match "
            "(and rise of grammar_rejection).",
        ),
    ] = DEFAULT_MAX_DROP,
    max_slowdown: Annotated[
        float,
        typer.Option(
            "--max-slowdown", metavar="RATIO",
            min=1.0,
            help="Largest allowed candidate/baseline ratio of a timing (CI machines are noisy: keep it loose).",
        ),
    ] = DEFAULT_MAX_SLOWDOWN,
    min_timing_n: Annotated[
        int,
        typer.Option(
            "--min-timing-n", metavar="N",
            min=1,
            help="Gate a timing only when both runs measured it over at least this many values "
            "(a percentile of a handful of values is noise).",
        ),
    ] = DEFAULT_MIN_TIMING_N,
    timings: Annotated[
        TimingGateChoice,
        typer.Option(
            "--timings",
            help="auto: gate timings only when both runs were measured on the same machine (run.json's "
            "machine); gate: always; info: never (a baseline kept in git, measured elsewhere).",
        ),
    ] = TimingGateChoice.auto,
) -> None:
    """Print the differences per family, strategy and metric; exit 1 on a regression, 2 on unreadable input.

    Regressions: validity/exact_match/state_match dropping (or grammar_rejections rising) by more than
    --max-drop; a timing over --max-slowdown times the baseline; a metric in the baseline and missing in
    the candidate. New metrics are reported only.
    """
    from rich.console import Console

    from harness.eval.compare import compare_runs, print_comparison
    from harness.eval.store import RunDirError

    try:
        result = compare_runs(
            baseline, candidate, max_drop=max_drop, max_slowdown=max_slowdown, min_timing_n=min_timing_n,
            timings=timings.value,
        )
    except RunDirError as exc:
        fail(str(exc))
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    print_comparison(result, console)
    if result.regressions:
        raise typer.Exit(1)
