"""``harness run SUITE_DIR`` and ``harness score RUN_DIR``.

Everything heavy (the suite models, polars, xgrammar, the sandbox) is imported inside the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.errors import ExitCode, fail
from harness.cli.options import Engine, Families, Strategies, Target
from harness.vocabulary import SAMPLE_METRICS, STRATEGIES

if TYPE_CHECKING:
    from harness.eval.run import RunOutcome
    from harness.eval.store import SummaryRow

# The options of ``harness run``, one alias each (the command's signature stays readable).
SuiteDirArg = Annotated[Path, typer.Argument(metavar="SUITE_DIR", help="Suite directory (suite.yaml + cases.jsonl).")]
EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="local: the embedded llama.cpp engine (Gemma 3 270M base; needs the 'local' extra). oracle: gold replay, measures grammars, no model. openai: a running OpenAI-compatible "
        "server. vllm: a real vLLM server the harness starts and stops (opt-in: it takes a minute to start).",
    ),
]
BaseUrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--base-url", metavar="URL",
        help="openai engine: the server (default: $OPENAI_BASE_URL, then the bundle's model.base_url). Give "
        "it several times to spread the run over replicas serving the same model.",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model", metavar="NAME",
        help="openai: the served model id (default: what the server lists). vllm: an HF model folder or "
        "id to serve (default: the Gemma 3 270M base weights for function_gemma, a random-weight Qwen3 "
        "format fixture for qwen).",
    ),
]
TargetOpt = Annotated[
    Target | None,
    typer.Option(
        "--target",
        help="oracle only: compile each grammar through vLLM's own backend (its tokenizer view, "
        "whitespace setting and stop tokens) and count the steps where it allows other tokens than "
        "the harness's grammar. Needs vLLM installed; no server is started.",
    ),
]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, metavar="N", help="Only the first N cases.")]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option("--concurrency", min=1, metavar="N", help="Samples in flight at once (default: 1 for oracle and local, 4 for openai and vllm)."),
]
EpochsOpt = Annotated[
    int | None, typer.Option("--epochs", min=1, metavar="N", help="Repeat every case N times (default 1).")
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", metavar="DIR", help="Results directory (default: results/<suite>-<engine>-<UTC time>).")
]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue the run in --out, skipping saved samples.")]
ReportOpt = Annotated[
    bool, typer.Option("--report", help="Write report.md and report.html into the run directory at the end.")
]
SampleTimeoutOpt = Annotated[
    float, typer.Option("--sample-timeout", min=0.001, metavar="SECONDS", help="Seconds one sample may take.")
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-tokens", min=1, metavar="N",
        help="Bound per model response (default: the suite's max_tokens, else derived from its longest gold "
        "answer). An answer cut by it fails as length:max_tokens.",
    ),
]


class _Bars:
    """The run's progress bars (one per run_suite call) and where its messages go: above the bar, or
    to stderr before there is one."""

    def __init__(self) -> None:
        self.bars: list[Any] = []

    def factory(self, total: int, done: int) -> Any:
        from harness.cli.progress import make_progress

        self.bars.append(make_progress(total, done, tty=sys.stdout.isatty()))
        return self.bars[-1]

    def log(self, message: str) -> None:
        for bar in self.bars:
            bar.note(message)
        if not self.bars:
            typer.echo(message, err=True)

    def stop(self) -> None:
        for bar in self.bars:
            bar.stop()


def run(
    suite_dir: SuiteDirArg,
    engine: EngineOpt = Engine.local,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    target: TargetOpt = None,
    family: Families = None,
    strategy: Strategies = None,
    limit: LimitOpt = None,
    concurrency: ConcurrencyOpt = None,
    epochs: EpochsOpt = None,
    out: OutOpt = None,
    resume: ResumeOpt = False,
    report: ReportOpt = False,
    sample_timeout: SampleTimeoutOpt = 300.0,
    max_tokens: MaxTokensOpt = None,
) -> None:
    """Run a suite: family x strategy x case x epoch samples, saved as they finish, then scored."""
    import asyncio

    from harness.agents.bundle import BundleError
    from harness.agents.client import ModelCallError
    from harness.eval.data import SuiteError
    from harness.eval.run import RunError, RunSpec, run_suite
    from harness.eval.store import RunDirError
    from harness.files import InputError

    spec = RunSpec(
        suite_dir=suite_dir, engine=engine.value, base_urls=list(base_url or []), model=model,
        target=None if target is None else target.value, families=list(family) if family else None,
        strategies=list(strategy) if strategy else None, limit=limit, concurrency=concurrency, epochs=epochs,
        out=out, resume=resume, sample_timeout_s=sample_timeout, max_tokens=max_tokens,
    )
    bars = _Bars()
    try:
        outcome = asyncio.run(run_suite(spec, bars.factory, bars.log))
    except (RunError, SuiteError, BundleError, RunDirError, InputError, ModelCallError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted: the samples finished so far are saved; continue with --out DIR --resume",
             code=ExitCode.INTERRUPTED)
    finally:
        bars.stop()
    _print_outcome(outcome)
    if report:
        _report([outcome.run_dir], outcome.run_dir)


def _print_outcome(outcome: RunOutcome) -> None:
    from harness.eval.store import read_summary

    typer.echo(
        f"{outcome.ran} samples run ({outcome.skipped} resumed, {outcome.errors} errors) in {outcome.wall_s:.1f} s"
        f" -> {outcome.run_dir}"
    )
    _print_summary(read_summary(outcome.run_dir))


def _print_summary(summary: list[SummaryRow]) -> None:
    """The rates of summary.json rows as a plain table."""
    table: dict[tuple[str, str], dict[str, SummaryRow]] = {}
    for row in summary:
        if row.metric in SAMPLE_METRICS:
            table.setdefault((row.family, row.strategy), {})[row.metric] = row
    # BFCL's verdicts only where a suite scores them
    shown = [m for m in SAMPLE_METRICS if not m.startswith("bfcl_") or any(m in cells for cells in table.values())]
    typer.echo(f"{'family':16} {'strategy':15} " + " ".join(f"{m:>18}" for m in shown))
    order: dict[str, int] = {s: i for i, s in enumerate(STRATEGIES)}  # the canonical order, as report.md and the plots
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
    from harness.eval.data import SuiteError
    from harness.eval.score import score_run
    from harness.eval.store import RunDirError
    from harness.files import InputError

    try:
        summary = asyncio.run(score_run(run_dir, suite_dir=suite_dir))
    except (SuiteError, BundleError, RunDirError, InputError) as exc:
        fail(str(exc))
    typer.echo(f"re-scored {run_dir}")
    _print_summary(summary)
