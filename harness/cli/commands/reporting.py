"""``harness report``: read results directories, write report.md, report.html and the plots
(``harness compare`` is in ``compare.py``).

polars and matplotlib load inside the command, never at ``harness --help``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.errors import fail


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
    from harness.files import InputFileError, check_output_dir

    target = out if out is not None else run_dirs[0]
    try:
        check_output_dir(target)
        path = write_report(run_dirs, target)
    except (RunDirError, InputFileError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--out {str(target)!r}: cannot write the report: {exc.strerror or exc}")
    typer.echo(f"wrote {path}")
    typer.echo(f"wrote {path.with_name('report.html')}")
    for png in sorted((path.parent / "plots").glob("*.png")):
        typer.echo(f"wrote {png}")


def merge(
    shard_dirs: Annotated[
        list[Path], typer.Argument(metavar="SHARD_DIR...", help="The run directories of harness run --shard I/N, all N.")
    ],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="The merged run directory (new).")],
) -> None:
    """Join the N shards of a run (harness run ... --shard I/N) into one run directory and score it: the
    same samples, scores and summary as the run without --shard. Exit 2 naming the shard and the
    difference when they are not the shares of one setup and suite, or one is unfinished."""
    import asyncio

    from harness.agents import BundleError
    from harness.eval.data import SuiteError
    from harness.eval.run import MergeError, merge_runs
    from harness.eval.store import RunDirError
    from harness.files import InputFileError, check_output_dir

    try:
        check_output_dir(out)
        summary = asyncio.run(merge_runs(shard_dirs, out))
    except (MergeError, RunDirError, SuiteError, BundleError, InputFileError) as exc:
        fail(str(exc))
    typer.echo(f"merged {len(shard_dirs)} shards -> {out}")
    from harness.cli.commands.run import print_summary

    print_summary(summary)

