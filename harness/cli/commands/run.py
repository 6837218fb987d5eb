"""``harness run SUITE_DIR`` and ``harness score RUN_DIR``.

Everything heavy (the suite models, polars, xgrammar, the sandbox) is imported inside the commands.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.errors import ExitCode, fail
from harness.cli.options import Engine, Families, GrammarBackendOpt, Names, Strategies, Target
from harness.vocabulary import BENCHMARK_METRICS, SAMPLE_METRICS, STRATEGIES, GrammarBackend

if TYPE_CHECKING:
    from harness.eval.run import RunOutcome
    from harness.eval.store import SummaryRow
    from harness.run_options import RunOptions, Selection

# The options of ``harness run``, one alias each (the command's signature stays readable).
SuiteDirArg = Annotated[Path, typer.Argument(
    metavar="SUITE", help="A suite directory (suite.yaml + cases.jsonl), or the name of a shipped suite (harness suites list).")]
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
    list[str] | None,
    typer.Option(
        "--model", metavar="[FAMILY=]NAME",
        help="The model of a family (FAMILY=NAME, once per family) or of the run's one family (NAME). openai: "
        "the served model id (default: what the server lists). vllm: an HF model folder or id to serve "
        "(default: the Gemma 3 270M base weights for function_gemma, a random-weight Qwen3 format fixture "
        "for qwen). Also a config file's or the suite's models.",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", metavar="FILE", help="A YAML file with the run's models (per family) and server "
                 "settings (server.vllm_args, server.keep); flags override it."),
]
VllmArgOpt = Annotated[
    list[str] | None,
    typer.Option("--vllm-arg", metavar="ARGS", help="vllm: added to each server's command line, split like a "
                 "shell line (--vllm-arg '--max-model-len 8192'; repeatable); recorded in run.json."),
]
KeepServerOpt = Annotated[
    bool, typer.Option("--keep-server", help="vllm: leave the servers this run starts up, for the next run "
                       "(which then starts its first sample in seconds); harness vllm down stops them.")
]
class DialectName(StrEnum):
    """``--dialect``'s choices (``harness.engines.dialects``)."""

    vllm = "vllm"
    llama_cpp = "llama_cpp"
    openai = "openai"


DialectOpt = Annotated[
    DialectName | None,
    typer.Option("--dialect",
                 help="openai: how the server is told the constraint (vllm: structured_outputs; llama_cpp: "
                 "llama-cpp-python's server, a GBNF grammar and the family's prompt on /completions; openai: "
                 "response_format json_schema, strict tools). Default: detected from the server; see docs/servers.md."),
]
class Unenforceable(StrEnum):
    """``--unenforceable``'s choices (``RunOptions.unenforceable``)."""

    refuse = "refuse"
    check = "check"


UnenforceableOpt = Annotated[
    Unenforceable | None,
    typer.Option("--unenforceable", help="A tool whose schema uses a keyword no grammar says (uniqueItems, a "
                 "propertyNames that constrains): refuse it (the default: left out of the constraint, named) or "
                 "check: constrain it by the rest of its schema and check the keyword after decoding "
                 "(validity:checked_after). See docs/schemas.md."),
]
AllowUnenforcedOpt = Annotated[
    bool, typer.Option("--allow-unenforced", help="Run a constrained lane whose server does not enforce its "
                       "constraint (the preflight's known-answer probe), labeled 'not enforced' in run.json, "
                       "instead of exiting 2.")
]
RetryErrorsOpt = Annotated[
    bool, typer.Option("--retry-errors", help="With --resume: run again the saved samples that ended in a "
                       "model:* error (their lines move to samples.retried.jsonl).")
]
SampleIdOpt = Annotated[
    list[str] | None,
    typer.Option("--sample-id", metavar="ID", help="Only these cases (case ids) or samples "
                 "(case/family/strategy/epoch); shell patterns allowed; repeatable."),
]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", metavar="TAG", help="Only cases holding this tag; repeatable.")]
SampleOpt = Annotated[
    int | None, typer.Option("--sample", min=1, metavar="N", help="A random subset of N cases, across conversations "
                             "(seeded by --seed; the same seed draws the same cases).")
]
ShardOpt = Annotated[
    str | None,
    typer.Option("--shard", metavar="I/N", help="Run the I-th of N deterministic shares of the selected cases "
                 "(every N-th case from the I-th); harness merge joins the N run directories into one."),
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
MaxStepsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-steps-per-turn", min=1, metavar="N",
        help="Episodes: model calls per user turn (default: the bundle's kernel.max_steps). A turn whose last "
        "call still calls tools ends the episode (state_match fails with state:force_terminated).",
    ),
]
TemperatureOpt = Annotated[
    float | None,
    typer.Option(
        "--temperature", min=0.0, max=2.0, metavar="T",
        help="Sampling temperature, 0 (greedy) to 2 (default: the suite's temperature, else 0). Above 0 each "
        "sample's requests carry a seed derived from --seed, its case and its epoch (vLLM's per-request seed; "
        "the embedded engine samples with it under the grammar's mask), so a rerun with the same seed reproduces.",
    ),
]
TopPOpt = Annotated[
    float | None,
    typer.Option("--top-p", min=0.0, max=1.0, metavar="P",
                 help="Nucleus sampling, above 0 and at most 1 (default: the suite's top_p, else 1)."),
]
SeedOpt = Annotated[
    int | None,
    typer.Option("--seed", min=0, metavar="N",
                 help="The run's seed: each sample's sampling seed derives from it, and --sample draws its subset "
                 "with it (default: the suite's seed, else a random one for sampling and 0 for --sample; "
                 "run.json records it)."),
]

ObserverOpt = Annotated[
    list[str] | None,
    typer.Option("--observer", metavar="MODULE:CLASS",
                 help="Your own observer of the kernel's events (requests, responses, tool calls and results, "
                 "steps, timings), e.g. to export traces: CLASS(sample_key) is called for each sample attempt and "
                 "gets every event through emit(event), then close() if it has one. Importable from the current "
                 "environment; repeatable. See docs/architecture.md."),
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
    config: ConfigOpt = None,
    vllm_arg: VllmArgOpt = None,
    keep_server: KeepServerOpt = False,
    target: TargetOpt = None,
    grammar_backend: GrammarBackendOpt = None,
    dialect: DialectOpt = None,
    allow_unenforced: AllowUnenforcedOpt = False,
    unenforceable: UnenforceableOpt = None,
    family: Families = None,
    strategy: Strategies = None,
    limit: LimitOpt = None,
    sample_id: SampleIdOpt = None,
    tag: TagOpt = None,
    sample: SampleOpt = None,
    shard: ShardOpt = None,
    concurrency: ConcurrencyOpt = None,
    epochs: EpochsOpt = None,
    out: OutOpt = None,
    resume: ResumeOpt = False,
    retry_errors: RetryErrorsOpt = False,
    report: ReportOpt = False,
    sample_timeout: SampleTimeoutOpt = 300.0,
    max_tokens: MaxTokensOpt = None,
    max_steps_per_turn: MaxStepsOpt = None,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
    seed: SeedOpt = None,
    observer: ObserverOpt = None,
) -> None:
    """Run a suite: family x strategy x case x epoch samples, saved as they finish, then scored.

    With --epochs N > 1 (and a temperature above 0, or every epoch repeats the same answer) summary.json
    and the reports add pass@k and pass^k for k = 1..N and each case's class (stable-pass, flaky,
    stable-fail); every interval counts cases, not samples, as the unit. Before the first sample, every server the run uses is checked (it answers, serves the model, fits the
    family, takes a probe request of each family and strategy): a setup that cannot work exits 2 in
    seconds, naming the problem."""
    import asyncio

    from harness.agents import BundleError, ModelCallError
    from harness.eval.data import SuiteError
    from harness.eval.run import RunError, RunPlace, load_observer, run_suite
    from harness.eval.store import RunDirError
    from harness.files import InputFileError

    options = _run_options(
        engine=engine, base_url=base_url, model=model, config=config, vllm_arg=vllm_arg, keep_server=keep_server,
        target=target, grammar_backend=grammar_backend, family=family, strategy=strategy, limit=limit, sample_id=sample_id, tag=tag, sample=sample,
        shard=shard, concurrency=concurrency, epochs=epochs, sample_timeout=sample_timeout, max_tokens=max_tokens,
        max_steps_per_turn=max_steps_per_turn, temperature=temperature, top_p=top_p, seed=seed,
    ).model_copy(update={"dialect": dialect and dialect.value, "allow_unenforced": allow_unenforced,
                         "unenforceable": unenforceable and unenforceable.value})
    place = RunPlace(out=out, resume=resume, retry_errors=retry_errors)
    try:
        observers = [load_observer(name) for name in observer or ()]
    except RunError as exc:
        fail(str(exc))
    bars = _Bars()
    try:
        outcome = asyncio.run(run_suite(suite_dir, options, place, bars.factory, bars.log, observers=observers))
    except (RunError, SuiteError, BundleError, RunDirError, InputFileError, ModelCallError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted: the samples finished so far are saved; continue with --out DIR --resume",
             code=ExitCode.INTERRUPTED)
    finally:
        bars.stop()
    _print_outcome(outcome)
    if report:
        _report([outcome.run_dir], outcome.run_dir)
    if outcome.engine_failed:  # a broken server is not a result about the model: say so, and fail
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(outcome.error_kinds.items()))
        fail(f"every one of the {outcome.ran} samples run ended in a model: error ({kinds}): the engine answered "
             f"none of them; they are saved as errors in {outcome.run_dir}",
             hint="check the engine or its server (run.log, --base-url, --model), then run again into another --out")


def _run_options(*, engine: Engine, base_url: list[str] | None, model: list[str] | None, config: Path | None,
                 vllm_arg: list[str] | None, keep_server: bool, target: Target | None,
                 grammar_backend: GrammarBackend | None, family: Names | None,
                 strategy: Names | None, limit: int | None, sample_id: list[str] | None, tag: list[str] | None,
                 sample: int | None, shard: str | None, concurrency: int | None, epochs: int | None,
                 sample_timeout: float, max_tokens: int | None, max_steps_per_turn: int | None,
                 temperature: float | None, top_p: float | None, seed: int | None) -> RunOptions:
    """The one place ``harness run``'s flags (and its ``--config`` file) become the run's ``RunOptions``
    (``harness.run_options``: validated there, once); exit 2 naming the flag, file or field that is wrong.
    ``--model``, ``--vllm-arg`` and ``--keep-server`` take over the config file's (whose models only
    server engines use)."""
    from pydantic import ValidationError

    from harness.engines import get_engine, layered_models
    from harness.eval.run import ConfigError, ConfigFile, load_config_file, parse_models, split_vllm_args
    from harness.run_options import RunOptions, problems
    from harness.vocabulary import Family, Strategy

    try:
        file = load_config_file(config) if config is not None else ConfigFile()
        bare, models = parse_models(model or [])
        args = split_vllm_args(vllm_arg) if vllm_arg else split_vllm_args(file.server.vllm_args, "server.vllm_args")
    except ConfigError as exc:
        fail(str(exc))
    info = get_engine(engine.value)  # what the engine takes, from its registry line, never its name
    models = layered_models(info, bare, models, file.models)
    if info.starts_servers:
        keep_server = keep_server or file.server.keep
    elif not vllm_arg:
        args = []
    try:
        return RunOptions(
            engine=engine.value, base_urls=tuple(base_url or ()), model=bare, models=models,
            vllm_args=tuple(args) or None, keep_server=keep_server, target=None if target is None else target.value,
            grammar_backend=None if grammar_backend is None else grammar_backend.value,
            families=tuple(Family(f) for f in family) if family else None,
            strategies=tuple(Strategy(s) for s in strategy) if strategy else None,
            limit=limit, selection=_selection(sample_id, tag, sample, seed, shard), concurrency=concurrency,
            epochs=epochs, sample_timeout_s=sample_timeout, max_tokens=max_tokens,
            max_steps_per_turn=max_steps_per_turn, temperature=temperature, top_p=top_p, seed=seed,
        )
    except ValidationError as exc:
        fail("; ".join(problems(exc)))


def _selection(ids: list[str] | None, tags: list[str] | None, sample: int | None, seed: int | None,
               shard: str | None) -> Selection | None:
    """The case selection of the flags (None: none given); exit 2 naming a bad ``--shard``."""
    from harness.run_options import Selection, Shard

    parsed = None
    if shard is not None:
        index, _, count = shard.partition("/")
        if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
            fail(f"--shard {shard!r}: expected I/N with 1 <= I <= N (--shard 1/4 ... --shard 4/4)")
        parsed = Shard(index=int(index), count=int(count))
    if not (ids or tags or sample or parsed):
        return None
    return Selection(ids=tuple(ids or ()), tags=tuple(tags or ()), sample=sample,
                     seed=(seed or 0) if sample else None, shard=parsed)


def _print_outcome(outcome: RunOutcome) -> None:
    typer.echo(
        f"{outcome.ran} samples run ({outcome.skipped} resumed, {outcome.errors} errors) in {outcome.wall_s:.1f} s"
        f" -> {outcome.run_dir}"
    )
    print_summary(outcome.summary)


def print_summary(summary: list[SummaryRow]) -> None:
    """The rates of summary.json rows as a plain table."""
    table: dict[tuple[str, str], dict[str, SummaryRow]] = {}
    for row in summary:
        if row.metric in SAMPLE_METRICS:
            table.setdefault((row.family, row.strategy), {})[row.metric] = row
    # a benchmark's own verdicts only where a suite scores them
    shown = [m for m in SAMPLE_METRICS if m not in BENCHMARK_METRICS or any(m in cells for cells in table.values())]
    typer.echo(f"{'family':16} {'strategy':15} " + " ".join(f"{m:>18}" for m in shown))
    order: dict[str, int] = {s: i for i, s in enumerate(STRATEGIES)}  # the canonical order, as report.md and the plots
    for (fam, strat), metrics in sorted(table.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99), kv[0][1])):
        cells = []
        for m in shown:
            r = metrics.get(m)
            cells.append(f"{r.value:.3f} (n={r.n})".rjust(18) if r else "-".rjust(18))
        typer.echo(f"{fam:16} {strat:15} " + " ".join(cells))
    for row in summary:
        if row.repeats is not None:
            rep = row.repeats
            at, hat = rep.pass_at_k[-1], rep.pass_hat_k[-1]
            typer.echo(f"{row.family}/{row.strategy} {row.metric} over {rep.epochs} epochs of {rep.cases} cases: "
                       f"pass@1 {rep.pass_at_k[0].value:.3f}, pass@{at.k} {at.value:.3f}, pass^{hat.k} {hat.value:.3f}; "
                       f"{rep.stable_pass} stable-pass, {rep.flaky} flaky, {rep.stable_fail} stable-fail")


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

    from harness.agents import BundleError
    from harness.eval.data import SuiteError
    from harness.eval.score import score_run
    from harness.eval.store import RunDirError
    from harness.files import InputFileError

    try:
        summary = asyncio.run(score_run(run_dir, suite_dir=suite_dir))
    except (SuiteError, BundleError, RunDirError, InputFileError) as exc:
        fail(str(exc))
    typer.echo(f"re-scored {run_dir}")
    print_summary(summary)
