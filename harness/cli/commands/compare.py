"""``harness compare BASELINE CANDIDATE``: the regression gate (``harness.eval.compare``).

Output: the tables and the flip list, then one JSON line, the verdict, last on stdout (also when the
input is bad: ``{"verdict": "error", ...}``). Exit 0 pass, 1 regression, 2 bad input. rich, pydantic,
scipy and junitparser load inside the command, never at ``harness --help``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from harness.cli.errors import ExitCode, fail, warn

if TYPE_CHECKING:
    from harness.eval.compare import Comparison, Policy

# The same defaults as harness.eval.compare (a test checks they agree); not imported from there so
# that ``harness --help`` does not import harness.eval.
DEFAULT_MAX_DROP = 0.02
DEFAULT_MAX_SLOWDOWN = 3.0
DEFAULT_MIN_TIMING_N = 20
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_EFFECT = 0.05


class TimingGateChoice(StrEnum):
    """harness.eval.compare.TIMING_GATES as choices (a test checks they agree)."""

    auto = "auto"
    gate = "gate"
    info = "info"


BaselineArg = Annotated[Path, typer.Argument(
    metavar="BASELINE", help="The baseline: a run directory, or a kept baseline (run.json, summary.json, scores.parquet).")]
CandidateArg = Annotated[list[Path], typer.Argument(
    metavar="CANDIDATE", help="The candidate run directory (with --side-by-side: one or more runs beside BASELINE).")]
SideBySideOpt = Annotated[bool, typer.Option(
    "--side-by-side",
    help="Not the gate: show the runs (of one suite, setups that may differ: other servers, engines) in columns, "
    "name every setup field that differs, list each run's answers its engine let through that the harness's "
    "grammar rejects; exit 0.")]
PolicyOpt = Annotated[Path | None, typer.Option(
    "--policy", metavar="FILE",
    help="A YAML policy: alpha, min_effect, metrics (the rates gated), timings, max_slowdown, timing_ratios, "
    "min_timing_n, max_drop (see docs/regression-gate.md). Flags below override it.")]
AlphaOpt = Annotated[float | None, typer.Option(
    "--alpha", min=0.0, max=1.0, metavar="P",
    help=f"Significance level of the paired tests (default {DEFAULT_ALPHA}).")]
MinEffectOpt = Annotated[float | None, typer.Option(
    "--min-effect", min=0.0, max=1.0, metavar="RATE",
    help=f"Smallest change of a rate that can be a regression, absolute (default {DEFAULT_MIN_EFFECT}).")]
MaxDropOpt = Annotated[float | None, typer.Option(
    "--max-drop", metavar="RATE", min=0.0,
    help=f"Runs without scores.parquet (summary.json only): largest allowed drop of a rate (default {DEFAULT_MAX_DROP}).")]
MaxSlowdownOpt = Annotated[float | None, typer.Option(
    "--max-slowdown", metavar="RATIO", min=1.0,
    help=f"Largest allowed candidate/baseline ratio of a timing (default {DEFAULT_MAX_SLOWDOWN}; CI machines are noisy).")]
MinTimingNOpt = Annotated[int | None, typer.Option(
    "--min-timing-n", metavar="N", min=1,
    help=f"Gate a timing only when both runs measured it over at least N values (default {DEFAULT_MIN_TIMING_N}).")]
TimingsOpt = Annotated[TimingGateChoice | None, typer.Option(
    "--timings",
    help="auto (default): gate timings only when both runs were measured on the same machine (run.json's "
    "machine); gate: always; info: never (a baseline kept in git, measured elsewhere).")]
AllowSetupOpt = Annotated[bool, typer.Option(
    "--allow-setup-change",
    help="Compare runs whose setups differ (engine, model, weights, server, chat template, grammar library, "
    "token bound, suite digest, temperature, top_p); without it they are refused, each difference named.")]
JunitOpt = Annotated[Path | None, typer.Option(
    "--junit", metavar="FILE",
    help="Write JUnit XML: a test per gated metric, and per case x family x strategy (a failure carries its "
    "error kind and the answer).")]
UpdateOpt = Annotated[bool, typer.Option(
    "--update-baseline",
    help="When nothing regressed, replace BASELINE's files with CANDIDATE's, atomically (a ratchet).")]


def _refuse(message: str) -> NoReturn:
    """Bad input: the JSON verdict on stdout, then the error line on stderr, exit 2."""
    typer.echo(json.dumps({"verdict": "error", "exit_code": int(ExitCode.BAD_INPUT), "error": message}))
    fail(message)


def _policy(path: Path | None, alpha: float | None, min_effect: float | None) -> Policy:
    """The policy file (or the defaults) with --alpha and --min-effect; PolicyError naming the flag."""
    from pydantic import ValidationError

    from harness.eval.compare import Policy, PolicyError, load_policy

    settled = load_policy(path) if path is not None else Policy()
    given = {k: v for k, v in (("alpha", alpha), ("min_effect", min_effect)) if v is not None}
    try:
        return Policy.model_validate({**settled.model_dump(), **given}) if given else settled
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise PolicyError(f"--{str(error['loc'][0]).replace('_', '-')}: {error['msg']}") from None


def _check_outputs(baseline: Path, candidate: Path, junit: Path | None, update: bool) -> None:
    """What the gate will write, checked before it compares: the JUnit file, ``$GITHUB_STEP_SUMMARY`` and,
    with --update-baseline, that BASELINE is a kept baseline CANDIDATE can replace (InputFileError or
    BaselineError, naming the path)."""
    from harness.eval.compare import check_baseline_update, step_summary_target
    from harness.files import check_output_file

    if junit is not None:
        check_output_file(junit, "--junit")
    step_summary_target()
    if update:
        check_baseline_update(baseline, candidate)


def _outputs(result: Comparison, junit: Path | None) -> None:
    from harness.eval.compare import append_step_summary, write_junit

    if junit is not None:
        try:
            typer.echo(f"junit: {write_junit(result, junit)}")
        except OSError as exc:
            _refuse(f"--junit {str(junit)!r}: cannot write: {exc.strerror or exc}")
    try:
        summary = append_step_summary(result)
    except (OSError, ValueError) as exc:
        _refuse(f"$GITHUB_STEP_SUMMARY: cannot append the summary: {exc}")
    if summary is not None:
        typer.echo(f"step summary: appended to {summary}")


def _update(result: Comparison, baseline: Path, candidate: Path) -> bool:
    from harness.eval.compare import BaselineError, update_baseline

    if result.regressions:
        typer.echo(f"baseline not updated: {len(result.regressions)} regression(s)")
        return False
    try:
        update_baseline(baseline, candidate, note=warn)
    except BaselineError as exc:
        _refuse(str(exc))
    typer.echo(f"baseline updated: {baseline} now holds {candidate}'s run.json, summary.json and scores")
    return True


def _side_by_side(run_dirs: list[Path]) -> None:
    from rich.console import Console

    from harness.eval.compare import CompareError, print_side_by_side, runs_side_by_side, side_by_side_verdict
    from harness.eval.store import RunDirError

    try:
        view = runs_side_by_side(run_dirs)
    except (RunDirError, CompareError) as exc:
        _refuse(str(exc))
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    print_side_by_side(view, console)
    typer.echo(json.dumps(side_by_side_verdict(view)))


def compare(
    baseline: BaselineArg,
    candidate: CandidateArg,
    policy: PolicyOpt = None,
    alpha: AlphaOpt = None,
    min_effect: MinEffectOpt = None,
    max_drop: MaxDropOpt = None,
    max_slowdown: MaxSlowdownOpt = None,
    min_timing_n: MinTimingNOpt = None,
    timings: TimingsOpt = None,
    allow_setup_change: AllowSetupOpt = False,
    junit: JunitOpt = None,
    update_baseline: UpdateOpt = False,
    side_by_side: SideBySideOpt = False,
) -> None:
    """Compare a candidate run with a baseline, case by case; exit 0 pass, 1 regression, 2 bad input.

    Each rate (validity, exact_match, state_match, grammar_rejection, truncated) of each family and
    strategy is paired by case: an exact McNemar test (a paired bootstrap with a sign test when cases ran
    several epochs). A rate regresses when its change is significant (p < alpha) AND at least the minimum
    effect; with few cases the output says the smallest change the comparison could have detected.
    Timings regress above --max-slowdown times the baseline; a metric in the baseline missing in the
    candidate regresses. Runs without scores.parquet compare on summary.json (a drop over --max-drop).
    Runs must be finished, of one suite and of one setup (unless --allow-setup-change). --side-by-side
    shows any number of runs in columns instead, setups that differ included, and gates nothing.
    """
    from rich.console import Console

    if side_by_side:
        gate = [name for name, given in (("--policy", policy), ("--junit", junit), ("--update-baseline", update_baseline))
                if given]
        if gate:
            _refuse(f"--side-by-side gates nothing: {', '.join(gate)} belong to the gate (leave --side-by-side out)")
        _side_by_side([baseline, *candidate])
        return
    if len(candidate) > 1:
        _refuse(f"the gate compares one CANDIDATE with BASELINE, got {len(candidate)}: pass --side-by-side to show "
                "several runs in columns")

    from harness.eval.compare import (
        BaselineError,
        CompareError,
        PolicyError,
        compare_runs,
        print_comparison,
        verdict,
    )
    from harness.eval.store import RunDirError

    try:
        _check_outputs(baseline, candidate[0], junit, update_baseline)
        settled = _policy(policy, alpha, min_effect)
        result = compare_runs(
            baseline, candidate[0], policy=settled, max_drop=max_drop, max_slowdown=max_slowdown,
            min_timing_n=min_timing_n, timings=None if timings is None else timings.value,
            allow_setup_change=allow_setup_change,
        )
    except (RunDirError, CompareError, PolicyError, BaselineError, ValueError) as exc:  # InputFileError is a ValueError
        _refuse(str(exc))
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    print_comparison(result, console)
    _outputs(result, junit)
    updated = _update(result, baseline, candidate[0]) if update_baseline else False
    typer.echo(verdict(result, baseline_updated=updated).model_dump_json())
    if result.regressions:
        raise typer.Exit(int(ExitCode.FAILED))


__all__ = ["TimingGateChoice", "compare"]
