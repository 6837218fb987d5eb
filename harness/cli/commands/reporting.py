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
