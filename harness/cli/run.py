"""``harness run SUITE_DIR`` and ``harness score RUN_DIR``.

Everything heavy (the suite models, polars, xgrammar, the sandbox) is imported inside the commands.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.errors import fail


def _split(value: str | None) -> list[str] | None:
    if not value:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items or None


class _PlainProgress:
    """Progress as plain lines (stdout is not a terminal): at most one line every few seconds."""

    def __init__(self, total: int, done: int, every_s: float = 5.0) -> None:
        self.total, self.done, self.errors = total, done, 0
        self.every_s = every_s
        self.started = self.last = time.monotonic()

    def __call__(self, record: Any) -> None:
        self.done += 1
        self.errors += record.status == "error"
        now = time.monotonic()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            typer.echo(f"[{now - self.started:6.1f}s] {self.done}/{self.total} samples, {self.errors} errors")


class _RichProgress:
    def __init__(self, total: int, done: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]samples"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[errors]} errors"),
        )
        self.task = self.progress.add_task("run", total=total, completed=done, errors=0)
        self.errors = 0
        self.progress.start()

    def __call__(self, record: Any) -> None:
        self.errors += record.status == "error"
        self.progress.update(self.task, advance=1, errors=self.errors)

    def stop(self) -> None:
        self.progress.stop()


def run(
    suite_dir: Annotated[Path, typer.Argument(help="Suite directory (suite.yaml + cases.jsonl).")],
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="vllm (a real vLLM server the harness starts and stops) | local (the embedded llama.cpp "
            "engine) | openai (a running OpenAI-compatible server) | oracle (gold replay: measures grammars, "
            "no model). Default: local (the oracle where llama.cpp is not installed); vllm is opt-in, as "
            "starting its server takes a minute.",
        ),
    ] = "local",
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible server (openai engine). Give it several times to spread the run over "
            "replicas serving the same model.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="openai: the served model id (default: what the server lists). vllm: an HF model folder or "
            "id to serve (default: the Gemma 3 270M base weights for function_gemma, a random-weight Qwen3 "
            "format fixture for qwen).",
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help="oracle only: vllm = compile each grammar through vLLM's own backend (its tokenizer view, "
            "whitespace setting and stop tokens) and count the steps where it allows other tokens than "
            "the harness's grammar. Needs vLLM installed; no server is started.",
        ),
    ] = None,
    family: Annotated[str | None, typer.Option("--family", help="Families, comma-separated (default: the suite's).")] = None,
    strategy: Annotated[
        str | None, typer.Option("--strategy", help="Strategies, comma-separated (default: the suite's).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N cases.")] = None,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, help="Samples in flight at once (default: 1 for oracle and local, 4 for openai)."),
    ] = None,
    epochs: Annotated[
        int | None, typer.Option("--epochs", min=1, help="Repeat every case N times (default 1).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Results directory (default: results/<suite>-<engine>-<UTC time>).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out, skipping saved samples.")] = False,
    report: Annotated[bool, typer.Option("--report", help="Write the report into the run directory at the end.")] = False,
    sample_timeout: Annotated[float, typer.Option("--sample-timeout", help="Seconds one sample may take.")] = 300.0,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="Bound per model response (default: 512 for openai, the engine's own for local)."),
    ] = None,
) -> None:
    """Run a suite: family x strategy x case x epoch samples, saved as they finish, then scored."""
    import asyncio

    from harness.agents.bundle import BundleError
    from harness.agents.client import ModelCallError
    from harness.engines.registry import unavailable
    from harness.eval.results import RunDirError
    from harness.eval.runner import RunError, RunSpec, run_suite
    from harness.eval.suite import SuiteError
    from harness.files import InputError

    families = _split(family)
    if engine == "local":
        why = unavailable("local")
        if why is not None:
            typer.echo(f"the embedded engine is not available ({why}); falling back to --engine oracle", err=True)
            engine = "oracle"
        elif families is None:
            from harness.engines.local.engine import LocalEngine

            weights = ", ".join(LocalEngine.families)
            typer.echo(f"--engine local has weights for {weights} only: running {weights}", err=True)
    spec = RunSpec(
        suite_dir=suite_dir, engine=engine, base_urls=list(base_url or []), model=model, target=target, families=families,
        strategies=_split(strategy), limit=limit, concurrency=concurrency, epochs=epochs, out=out,
        resume=resume, sample_timeout_s=sample_timeout, max_tokens=max_tokens,
    )
    bars: list[_RichProgress] = []

    def progress_factory(total: int, done: int) -> Any:
        if sys.stdout.isatty():
            bars.append(_RichProgress(total, done))
            return bars[-1]
        return _PlainProgress(total, done)

    def log(message: str) -> None:
        typer.echo(message, err=True)

    try:
        outcome = asyncio.run(run_suite(spec, progress_factory, log))
    except (RunError, SuiteError, BundleError, RunDirError, InputError, ModelCallError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo("interrupted: the samples finished so far are saved; continue with --out DIR --resume", err=True)
        raise typer.Exit(130) from None
    finally:
        for bar in bars:
            bar.stop()
    _print_outcome(outcome)
    if report:
        _report([outcome.run_dir], outcome.run_dir)


def _print_outcome(outcome: Any) -> None:
    from harness.eval.results import read_summary

    typer.echo(
        f"{outcome.ran} samples run ({outcome.skipped} resumed, {outcome.errors} errors) in {outcome.wall_s:.1f} s"
        f" -> {outcome.run_dir}"
    )
    _print_summary(read_summary(outcome.run_dir))


def _print_summary(summary: list[Any]) -> None:
    """The rates of summary.json rows (``SummaryRow``) as a plain table."""
    from harness.eval.records import METRICS

    table: dict[tuple[str, str], dict[str, Any]] = {}
    for row in summary:
        if row.metric in METRICS:
            table.setdefault((row.family, row.strategy), {})[row.metric] = row
    typer.echo(f"{'family':16} {'strategy':15} " + " ".join(f"{m:>18}" for m in METRICS))
    for (fam, strat), metrics in sorted(table.items()):
        cells = []
        for m in METRICS:
            r = metrics.get(m)
            cells.append(f"{r.value:.3f} (n={r.n})".rjust(18) if r else "-".rjust(18))
        typer.echo(f"{fam:16} {strat:15} " + " ".join(cells))


def _report(run_dirs: list[Path], out: Path) -> None:
    try:
        from harness.eval.report import write_report
    except ImportError as exc:
        typer.echo(f"--report: the report module is not available ({exc})", err=True)
        return
    written = write_report(run_dirs, out)
    typer.echo(f"report: {written}")


def score(
    run_dir: Annotated[Path, typer.Argument(help="A results directory written by `harness run`.")],
    suite_dir: Annotated[Path | None, typer.Option("--suite", help="The suite (default: the path in run.json).")] = None,
) -> None:
    """Re-score a run from its saved samples (no engine is called): rewrites scores.parquet, summary.json."""
    import asyncio

    from harness.agents.bundle import BundleError
    from harness.eval.results import RunDirError
    from harness.eval.score_run import score_run
    from harness.eval.suite import SuiteError
    from harness.files import InputError

    try:
        summary = asyncio.run(score_run(run_dir, suite_dir=suite_dir))
    except (SuiteError, BundleError, RunDirError, InputError) as exc:
        fail(str(exc))
    typer.echo(f"re-scored {run_dir}")
    _print_summary(summary)
