"""``harness validate SUITE_DIR`` and ``harness import shellper|bfcl``."""

from __future__ import annotations

import functools
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
    help="A category of the installed bfcl-eval package: multi-turn (base, miss_param, miss_func, long_context, or "
    "multi_turn for all four: one suite each under --out, sharing the bundle of BFCL's classes in --out/bundle), "
    "single-turn (simple_python, multiple, parallel, parallel_multiple, live_simple, live_multiple, live_parallel, "
    "live_parallel_multiple, irrelevance, live_irrelevance), or single_turn for all ten (one suite each under "
    "--out); or a file of entries (one JSON object per line).",
)
_TEXT_ANSWER = typer.Option(
    True, "--text-answer/--no-text-answer",
    help="Single-turn suites: constrained grammars also allow a plain-text answer (no call), as the "
    "irrelevance categories need (default: on; see the README).",
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
    origin = "each case's own tools" if suite.kind == "single_turn" else bundle_tools(suite.bundle_dir).origin
    typer.echo(f"{describe_suite(suite)} (checked against {origin})")


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
    None, "--bundle", metavar="BUNDLE",
    help="Bundle as written in suite.yaml: a bare name or a path relative to --out (default: multi-turn "
    "./bundle, the bundle of BFCL's classes written there; with --file-system-only: bfcl; single-turn: bfcl, "
    "or bfcl-one-call for categories whose answers hold one call).",
)


_FS_ONLY = typer.Option(
    False, "--file-system-only",
    help="Multi-turn: only the GorillaFileSystem-only entries, as cases of the .pym file-system tools (with "
    "--bundle bfcl: the sandboxed tools; others skipped and counted).",
)


@import_app.command("bfcl", epilog=example("harness import bfcl multi_turn --out suites/bfcl-mt"))
def import_bfcl_cmd(
    source: str = _BFCL_SOURCE,
    answers: Path | None = _ANSWERS,
    out: Path = _OUT,
    name: str | None = _NAME,
    bundle: str | None = _BFCL_BUNDLE,
    skip_invalid: bool = _SKIP,
    text_answer: bool = _TEXT_ANSWER,
    file_system_only: bool = _FS_ONLY,
) -> None:
    """Import BFCL entries as BFCL runs them. Multi-turn: every entry as an episode on BFCL's own API
    classes (run in the tool worker, judged by BFCL's multi_turn_checker; long-context states loaded as
    BFCL loads them, miss_func tools added at their turn; counts per class set). Single-turn: each entry
    with its own tools, judged by BFCL's own checker; entries whose listed answers do not fit the
    converted schema are kept and tagged bad_entry."""
    from harness.bfcl import (
        ALL,
        MULTI_TURN,
        SINGLE_TURN,
        import_bfcl,
        import_bfcl_multi_turn,
        import_bfcl_single_turn,
        is_single_turn,
    )

    if source == ALL:
        for category in SINGLE_TURN:
            _run_import(functools.partial(import_bfcl_single_turn, category, None, out / category, bundle=bundle,
                                          skip_invalid=skip_invalid, text_answer=text_answer), out / category)
    elif is_single_turn(source):
        _run_import(lambda: import_bfcl_single_turn(
            source, answers, out, name=name, bundle=bundle, skip_invalid=skip_invalid, text_answer=text_answer), out)
    elif source == MULTI_TURN:
        for report in _import_all(lambda: import_bfcl_multi_turn(out, skip_invalid=skip_invalid)):
            _finish(report.summary(), report.out_dir, report.errors)
    else:
        _run_import(lambda: import_bfcl(source, answers, out, name=name, bundle=bundle or "./bundle",
                                        skip_invalid=skip_invalid, file_system_only=file_system_only), out)


def _import_all(do_import: Callable[[], list[Any]]) -> list[Any]:
    from harness.eval.data import ImportFailure

    try:
        return do_import()
    except (ImportFailure, OSError) as exc:
        fail("\n".join(getattr(exc, "problems", None) or [str(exc)]))
