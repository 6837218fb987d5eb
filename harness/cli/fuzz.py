"""``harness fuzz``: property-based checking of a tool set's grammars and parsers (``harness.fuzz``).

Prints the failing and not-enforced cells, then one JSON summary as the last stdout line. Keeps the
report, the counterexamples as calls files ``harness grammar check`` replays, and (``--junit``) a
JUnit file. Exit 0: every cell passes (or, with ``--expected``, none is worse than the baseline);
1: a cell fails (is worse); 2: bad input, nothing run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.errors import ExitCode, fail
from harness.cli.options import CONSTRAINED, FAMILIES, BenchFamilies, BenchStrategies, Target

_TOOLS_HELP = "The tools: an OpenAI tools JSON file, a folder of .pym tools, or a bundle (its folder or bundle.yaml)."


def default_jobs(target: Target | None) -> int:
    """Two worker processes where two cores are free to use; one with ``--target`` (each worker would
    load vLLM)."""
    return 1 if target is not None else max(1, min(2, os.cpu_count() or 1))


def fuzz(
    tools_path: Annotated[Path, typer.Option("--tools", metavar="PATH", help=_TOOLS_HELP)],
    families: BenchFamilies = None,
    strategies: BenchStrategies = None,
    examples: Annotated[int, typer.Option("--examples", min=1, metavar="N", help="Valid calls drawn per tool (each checked in every cell, with its mutants).")] = 100,
    seed: Annotated[int, typer.Option("--seed", metavar="S", help="Seed of Hypothesis and of the random walks.")] = 0,
    walks: Annotated[int | None, typer.Option("--walks", min=0, metavar="N", help="Random walks through the mask per cell (default: examples/20, at least 4).")] = None,
    target: Annotated[Target | None, typer.Option("--target", help="Also judge every text with vLLM's own grammar backend (in process) and report where it disagrees.")] = None,
    parallel: Annotated[bool, typer.Option("--parallel", help="Build the grammars with allow_parallel_calls.")] = False,
    expected: Annotated[Path | None, typer.Option("--expected", metavar="FILE", help="Baseline of failing classes per cell: exit 1 only where a cell is worse; better cells are reported.")] = None,
    update: Annotated[bool, typer.Option("--update", help="Rewrite the --expected file with this run's classes.")] = False,
    junit: Annotated[Path | None, typer.Option("--junit", metavar="FILE", help="Also write a JUnit XML file (one test case per cell).")] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Where the report and counterexamples go (default: results/fuzz-<UTC time>).")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", min=1, metavar="N", help="Worker processes (default: 2 on two or more cores; 1 with --target).")] = None,
    cell_timeout: Annotated[float, typer.Option("--cell-timeout", min=0.1, metavar="S", help="Seconds one cell may take before it stops as a timeout.")] = 60.0,
) -> None:
    """Fuzz every tool x family x strategy: valid calls accepted and parsed back, near misses
    rejected (or named as not enforced), random walks valid, the parser never raising."""
    from harness.files import InputError
    from harness.fuzz import FuzzOptions, read_expected
    from harness.fuzz import fuzz as run_fuzz
    from harness.fuzz.inputs import load_fuzz_tools

    if update and expected is None:
        fail("--update needs --expected FILE (the baseline to rewrite)")
    try:
        loaded = load_fuzz_tools(tools_path)
        baseline = read_expected(expected) if expected is not None and not update and expected.exists() else None
    except InputError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    if expected is not None and not update and not expected.exists():
        fail(f"{expected}: no such baseline (write one with --expected {expected} --update)")
    options = FuzzOptions(
        families=tuple(families or FAMILIES), strategies=tuple(strategies or CONSTRAINED), examples=examples,
        seed=seed, walks=walks, cell_timeout_s=cell_timeout, target=target.value if target else None,
        parallel=parallel, database=fuzz_database(), jobs=jobs or default_jobs(target),
    )
    folder = out or Path("results") / f"fuzz-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    cells = len(loaded.tools + loaded.problems) * len(options.families) * len(options.strategies)
    with FuzzProgress(cells) as progress:
        report = run_fuzz(loaded.tools, options, tools_path=str(tools_path), progress=progress.update,
                          problems=loaded.problems)
    _finish(report, folder, expected, update, baseline, junit)


def fuzz_database() -> Path:
    """Hypothesis' example database in the user cache (``HARNESS_FUZZ_DB`` to move it)."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("HARNESS_FUZZ_DB") or Path(user_cache_dir("harness")) / "fuzz" / "examples")


def _finish(report: Any, folder: Path, expected: Path | None, update: bool,
            baseline: dict[str, list[str]] | None, junit: Path | None) -> None:
    from harness.fuzz import FAILING, compare, write_calls_files, write_junit
    from harness.fuzz.keep import write_expected

    files = write_calls_files(report, folder / "counterexamples")
    report.counterexample_files = [str(f) for f in files]
    (folder / "report.json").write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    if junit is not None:
        write_junit(report, junit)
    for cell in report.cells:
        if cell.outcome.value != "passing":
            named = ", ".join(f"{k} {n}" for k, n in sorted(cell.classes.items()))
            typer.echo(f"{cell.key}: {cell.outcome.value} ({named}){': ' + cell.message if cell.message else ''}")
            for found in cell.counterexamples:
                shown = json.dumps(found.calls if found.calls is not None else found.text, ensure_ascii=False)
                typer.echo(f"    {found.outcome.value}: {found.why} :: {shown[:240]}")
    code = ExitCode.FAILED if any(c.outcome in FAILING for c in report.cells) else ExitCode.OK
    if update and expected is not None:
        write_expected(report, expected)
        typer.echo(f"baseline written: {expected}", err=True)
        code = ExitCode.OK
    elif baseline is not None:
        worse, better = compare(report, baseline)
        for line in better:
            typer.echo(f"better than the baseline: {line}", err=True)
        for line in worse:
            typer.echo(f"worse than the baseline: {line}", err=True)
        code = ExitCode.FAILED if worse else ExitCode.OK
    if files:
        typer.echo(f"counterexamples: {folder / 'counterexamples'} (replay: harness grammar check --calls FILE ...)", err=True)
    typer.echo(json.dumps({**report.summary(), "out": str(folder)}))
    raise typer.Exit(code=int(code))


class FuzzProgress:
    """Cells done of all, with the current note: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.bar: Any = None
        self.task: Any = None
        self.last_line = 0.0

    def __enter__(self) -> FuzzProgress:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("fuzz"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total)
        return self

    def update(self, note: str, done: int) -> None:
        self.done += done
        if self.bar is not None:
            self.bar.update(self.task, advance=done, description=note)
        elif done and (time.monotonic() - self.last_line > 5 or self.done == self.total):
            self.last_line = time.monotonic()
            typer.echo(f"fuzz: {self.done}/{self.total} cells, {time.monotonic() - self.started:.0f}s ({note})", err=True)

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()


__all__ = ["fuzz", "fuzz_database"]
