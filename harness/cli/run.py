"""``harness run SUITE_DIR`` and ``harness score RUN_DIR``.

Everything heavy (the suite models, polars, xgrammar, the sandbox) is imported inside the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.errors import ExitCode, fail
from harness.cli.options import STRATEGIES, Engine, Families, Strategies, Target


def run(
    suite_dir: Annotated[Path, typer.Argument(metavar="SUITE_DIR", help="Suite directory (suite.yaml + cases.jsonl).")],
    engine: Annotated[
        Engine,
        typer.Option(
            "--engine",
            help="local: the embedded llama.cpp engine (Gemma 3 270M base; needs the 'local' extra). oracle: gold replay, measures grammars, no model. openai: a running OpenAI-compatible "
            "server. vllm: a real vLLM server the harness starts and stops (opt-in: it takes a minute to start).",
        ),
    ] = Engine.local,
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url", metavar="URL",
            help="openai engine: the server (default: $OPENAI_BASE_URL, then the bundle's model.base_url). Give "
            "it several times to spread the run over replicas serving the same model.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="NAME",
            help="openai: the served model id (default: what the server lists). vllm: an HF model folder or "
            "id to serve (default: the Gemma 3 270M base weights for function_gemma, a random-weight Qwen3 "
            "format fixture for qwen).",
        ),
    ] = None,
    target: Annotated[
        Target | None,
        typer.Option(
            "--target",
            help="oracle only: compile each grammar through vLLM's own backend (its tokenizer view, "
            "whitespace setting and stop tokens) and count the steps where it allows other tokens than "
            "the harness's grammar. Needs vLLM installed; no server is started.",
        ),
    ] = None,
    family: Families = None,
    strategy: Strategies = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, metavar="N", help="Only the first N cases.")] = None,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, metavar="N", help="Samples in flight at once (default: 1 for oracle and local, 4 for openai and vllm)."),
    ] = None,
    epochs: Annotated[
        int | None, typer.Option("--epochs", min=1, metavar="N", help="Repeat every case N times (default 1).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="DIR", help="Results directory (default: results/<suite>-<engine>-<UTC time>).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out, skipping saved samples.")] = False,
    report: Annotated[
        bool, typer.Option("--report", help="Write report.md and report.html into the run directory at the end.")
    ] = False,
    sample_timeout: Annotated[float, typer.Option("--sample-timeout", min=0.001, metavar="SECONDS", help="Seconds one sample may take.")] = 300.0,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens", min=1, metavar="N",
            help="Bound per model response (default: the suite's max_tokens, else derived from its longest gold "
            "answer). An answer cut by it fails as length:max_tokens.",
        ),
    ] = None,
) -> None:
    """Run a suite: family x strategy x case x epoch samples, saved as they finish, then scored."""
    import asyncio

    from harness.agents.bundle import BundleError
    from harness.agents.client import ModelCallError
    from harness.eval.results import RunDirError
    from harness.eval.runner import RunError, RunSpec, run_suite
    from harness.eval.suite import SuiteError
    from harness.files import InputError

    engine_name = engine.value
    spec = RunSpec(
        suite_dir=suite_dir, engine=engine_name, base_urls=list(base_url or []), model=model,
        target=None if target is None else target.value, families=list(family) if family else None,
        strategies=list(strategy) if strategy else None, limit=limit, concurrency=concurrency, epochs=epochs,
        out=out, resume=resume, sample_timeout_s=sample_timeout, max_tokens=max_tokens,
    )
    bars: list[Any] = []

    def progress_factory(total: int, done: int) -> Any:
        from harness.cli.progress import make_progress

        bars.append(make_progress(total, done, tty=sys.stdout.isatty()))
        return bars[-1]

    def log(message: str) -> None:
        for bar in bars:
            bar.note(message)
        if not bars:
            typer.echo(message, err=True)

    try:
        outcome = asyncio.run(run_suite(spec, progress_factory, log))
    except (RunError, SuiteError, BundleError, RunDirError, InputError, ModelCallError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted: the samples finished so far are saved; continue with --out DIR --resume",
             code=ExitCode.INTERRUPTED)
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
    # BFCL's verdicts only where a suite scores them
    shown = [m for m in METRICS if not m.startswith("bfcl_") or any(m in cells for cells in table.values())]
    typer.echo(f"{'family':16} {'strategy':15} " + " ".join(f"{m:>18}" for m in shown))
    order = {s: i for i, s in enumerate(STRATEGIES)}  # the canonical order, as report.md and the plots
    for (fam, strat), metrics in sorted(table.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99), kv[0][1])):
        cells = []
        for m in shown:
            r = metrics.get(m)
            cells.append(f"{r.value:.3f} (n={r.n})".rjust(18) if r else "-".rjust(18))
        typer.echo(f"{fam:16} {strat:15} " + " ".join(cells))


def _report(run_dirs: list[Path], out: Path) -> None:
    from harness.eval.report import write_report

    written = write_report(run_dirs, out)
    typer.echo(f"report: {written} and {written.with_name('report.html')}")


def score(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A results directory written by `harness run`.")],
    suite_dir: Annotated[Path | None, typer.Option("--suite", metavar="SUITE_DIR", help="The suite (default: the path in run.json).")] = None,
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
