"""``harness validate SUITE_DIR`` and ``harness import shellper|bfcl``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from harness.cli.errors import ExitCode, fail, make_app
from harness.cli.options import example

import_app = make_app(help="Import upstream datasets as suite directories.")
suites_app = make_app(help="The suites that ship with the harness (run one by name: harness run NAME).")


_SUITE_DIR = typer.Argument(
    ..., metavar="SUITE", help="A suite directory (suite.yaml + cases), or the name of a shipped suite (harness suites list)."
)
_SHELLPER_FILE = typer.Argument(..., metavar="FILE", help="A distil-SHELLper JSONL file (question/answer lines).")
_BFCL_SOURCE = typer.Argument(
    ..., metavar="CATEGORY_OR_FILE",
    help="A BFCL multi-turn category of the installed bfcl-eval package (base, miss_param, miss_func, "
    "long_context), or a file of entries (one JSON object per line).",
)
_ANSWERS = typer.Option(
    None, "--answers", metavar="FILE", help="The matching possible_answer file (default: the package's, or possible_answer/ beside FILE)."
)


def validate(suite_dir: Path = _SUITE_DIR) -> None:
    """Check a suite: structure, unique ids, tool names and arguments against the bundle's tools.

    Prints every problem as FILE:LINE: FIELD: MESSAGE and exits 1, or prints a one-line summary."""
    from harness.eval.data import bundle_tools, describe_suite, load_suite, validate_suite

    problems = validate_suite(suite_dir)
    if problems:
        for p in problems:
            typer.echo(p)
        fail(f"{len(problems)} problem(s) in {suite_dir}", code=ExitCode.FAILED)
    suite = load_suite(suite_dir)
    typer.echo(f"{describe_suite(suite)} (checked against {bundle_tools(suite.bundle_dir).origin})")


@suites_app.command("list", epilog=example("harness suites list", "harness run smoke --engine oracle"))
def list_suites() -> None:
    """List the suites that ship with the harness: name, kind, cases, bundle and description."""
    from harness.eval.data import SuiteError, load_suite
    from harness.packaged import packaged_suites

    shipped = packaged_suites()
    if not shipped:
        fail("no suites ship with this installation of the harness (harness/packaged/suites is empty)")
    typer.echo(f"{'name':24} {'kind':10} {'cases':>6}  {'bundle':16} description")
    for entry in shipped:
        try:
            suite = load_suite(entry.path)
        except SuiteError as exc:
            typer.echo(f"{entry.name:24} (cannot be read: {exc})")
            continue
        bundle = suite.bundle_dir.name
        typer.echo(f"{entry.name:24} {suite.kind:10} {len(suite.cases):>6}  {bundle:16} {suite.spec.description}")
    typer.echo(f"({len(shipped)} suites in {shipped[0].path.parent}; run one with: harness run NAME)")


def _finish(report_summary: str, out: Path, errors: list[str]) -> None:
    from harness.eval.data import validate_suite

    for e in errors:
        typer.echo(f"left out: {e}", err=True)
    typer.echo(report_summary)
    problems = validate_suite(out)
    if problems:
        fail("the written suite has problems:\n" + "\n".join(problems), hint=f"harness validate {out}")


_OUT = typer.Option(..., "--out", metavar="DIR", help="Suite directory to write (suite.yaml + cases.jsonl).")
_NAME = typer.Option(None, "--name", metavar="NAME", help="Suite name (default: the --out directory's name).")
_BUNDLE = typer.Option(
    "shellper", "--bundle", metavar="BUNDLE", help="Bundle as written in suite.yaml: a bare name or a path relative to --out."
)
_SKIP = typer.Option(False, "--skip-invalid", help="Leave invalid records out (listed) instead of failing.")


def _run_import(do_import: Callable[[], Any], out: Path) -> None:
    """Run an importer; the problems it reports are the error (exit 2: bad input)."""
    from harness.eval.data import ImportFailure

    try:
        report = do_import()
    except (ImportFailure, OSError) as exc:
        fail("\n".join(getattr(exc, "problems", None) or [str(exc)]))
    _finish(report.summary(), out, report.errors)


@import_app.command("shellper", epilog=example("harness import shellper test.jsonl --out suites/imported"))
def import_shellper_cmd(
    file: Path = _SHELLPER_FILE,
    out: Path = _OUT,
    name: str | None = _NAME,
    bundle: str = _BUNDLE,
    skip_invalid: bool = _SKIP,
) -> None:
    """Expand every prefix of each conversation into a next-call scoring point."""
    from harness.eval.data import import_shellper

    _run_import(lambda: import_shellper(file, out, name=name, bundle=bundle, skip_invalid=skip_invalid), out)


_BFCL_BUNDLE = typer.Option(
    "bfcl", "--bundle", metavar="BUNDLE", help="Bundle as written in suite.yaml: a bare name or a path relative to --out."
)


@import_app.command("bfcl", epilog=example("harness import bfcl long_context --out suites/bfcl-long-context"))
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
    from harness.eval.data import import_bfcl

    _run_import(lambda: import_bfcl(source, answers, out, name=name, bundle=bundle, skip_invalid=skip_invalid), out)
