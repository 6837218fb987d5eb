"""``harness validate SUITE_DIR`` and ``harness import shellper|bfcl``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

import_app = typer.Typer(help="Import upstream datasets as suite directories.", no_args_is_help=True)


_SUITE_DIR = typer.Argument(..., help="A suite directory (suite.yaml + cases).")
_SHELLPER_FILE = typer.Argument(..., help="A distil-SHELLper JSONL file (question/answer lines).")
_BFCL_SOURCE = typer.Argument(
    ...,
    help="A BFCL multi-turn category of the installed bfcl-eval package (base, miss_param, miss_func, "
    "long_context), or a file of entries (one JSON object per line).",
)
_ANSWERS = typer.Option(
    None, "--answers", help="The matching possible_answer file (default: the package's, or possible_answer/ beside FILE)."
)


def validate(suite_dir: Path = _SUITE_DIR) -> None:
    """Check a suite: structure, unique ids, tool names and arguments against the bundle's tools.

    Prints every problem as FILE:LINE: FIELD: MESSAGE and exits 1, or prints a one-line summary."""
    from harness.eval.checks import bundle_tools, describe_suite, validate_suite
    from harness.eval.suite import load_suite

    problems = validate_suite(suite_dir)
    if problems:
        for p in problems:
            typer.echo(p)
        typer.echo(f"{len(problems)} problem(s) in {suite_dir}", err=True)
        raise typer.Exit(1)
    suite = load_suite(suite_dir)
    typer.echo(f"{describe_suite(suite)} (checked against {bundle_tools(suite.bundle_dir).origin})")


def _finish(report_summary: str, out: Path, errors: list[str]) -> None:
    from harness.eval.checks import validate_suite

    for e in errors:
        typer.echo(f"left out: {e}", err=True)
    typer.echo(report_summary)
    problems = validate_suite(out)
    for p in problems:
        typer.echo(p, err=True)
    if problems:
        raise typer.Exit(1)


_OUT = typer.Option(..., "--out", help="Suite directory to write (suite.yaml + cases.jsonl).")
_NAME = typer.Option(None, "--name", help="Suite name (default: the --out directory's name).")
_BUNDLE = typer.Option(
    "shellper", "--bundle", help="Bundle as written in suite.yaml: a bare name or a path relative to --out."
)
_SKIP = typer.Option(False, "--skip-invalid", help="Leave invalid records out (listed) instead of failing.")


def _run_import(do_import: Callable[[], Any], out: Path) -> None:
    """Run an importer; every problem it reports goes to stderr and the exit code is 1."""
    from harness.eval.importers import ImportFailure

    try:
        report = do_import()
    except (ImportFailure, OSError) as exc:
        for p in getattr(exc, "problems", [str(exc)]):
            typer.echo(p, err=True)
        raise typer.Exit(1) from None
    _finish(report.summary(), out, report.errors)


@import_app.command("shellper")
def import_shellper_cmd(
    file: Path = _SHELLPER_FILE,
    out: Path = _OUT,
    name: str | None = _NAME,
    bundle: str = _BUNDLE,
    skip_invalid: bool = _SKIP,
) -> None:
    """Expand every prefix of each conversation into a next-call scoring point."""
    from harness.eval.importers import import_shellper

    _run_import(lambda: import_shellper(file, out, name=name, bundle=bundle, skip_invalid=skip_invalid), out)


_BFCL_BUNDLE = typer.Option(
    "bfcl", "--bundle", help="Bundle as written in suite.yaml: a bare name or a path relative to --out."
)


@import_app.command("bfcl")
def import_bfcl_cmd(
    source: str = _BFCL_SOURCE,
    answers: Path | None = _ANSWERS,
    out: Path = _OUT,
    name: str | None = _NAME,
    bundle: str = _BFCL_BUNDLE,
    skip_invalid: bool = _SKIP,
) -> None:
    """Import GorillaFileSystem-only multi-turn entries as episodes, as BFCL runs them (long-context
    file systems expanded, miss_func tools added at their turn); others are skipped and counted."""
    from harness.eval.importers import import_bfcl

    _run_import(lambda: import_bfcl(source, answers, out, name=name, bundle=bundle, skip_invalid=skip_invalid), out)
