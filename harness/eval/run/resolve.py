"""``resolve_run``: a run's options (``RunOptions``, as given), its suite and its bundle turned once
into a frozen ``ResolvedRun`` whose ``options`` hold every value settled, with its engine opened.

Every refusal happens here, before a file of the run directory is touched: bad options, an unknown
engine, family or strategy, an ``--out`` that cannot be a run directory or already holds another run's
samples, a case whose calls the bundle's tools refuse (the check ``harness validate`` makes, so a case
validate rejects is never run), and on ``--resume`` a command asking for another run than run.json
records (``harness.run_options.differences``: every difference named; options left out take the
recorded values) or an engine serving
another model. The bundle is
read once (``harness.bundles.load_agent``); generation and scoring both use its agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from harness.agents import Agent
from harness.engines import (
    EngineContext,
    EngineError,
    EngineInfo,
    RunEngine,
    get_engine,
    layered_models,
    open_engine,
)
from harness.eval.data import Suite, SuiteError, ToolSet, load_suite, validate_loaded
from harness.eval.run.resolved import CaseSelection, ResolvedRun, RunError
from harness.eval.run.run_log import RunLog
from harness.eval.run.token_bound import TokenBound, choose_token_bound
from harness.eval.store import RUN_FILE, SAMPLES_FILE, RunDirError, RunRecord, default_run_id, read_run
from harness.files import InputFileError, check_output_dir
from harness.run_options import COMPARED, RunOptions, differences
from harness.vocabulary import Family, Strategy

EngineOpener = Callable[[RunOptions, EngineContext], tuple[RunEngine, list[str] | None]]
"""``(options, context) -> (engine, families)``: the registry's ``open_engine`` by default."""


@dataclass(frozen=True, slots=True)
class RunPlace:
    """Where a run is written and whether this invocation continues it: not options of the run (run.json
    does not record them; a resumed run is the same run)."""

    out: Path | None = None
    """The results directory (None: ``results_root/<suite>-<engine>-<UTC time>``)."""
    resume: bool = False
    """Continue the run in ``out``, skipping its saved samples."""
    retry_errors: bool = False
    """With ``resume``: run again the saved samples that ended in a ``model:*`` error."""
    results_root: Path = Path("results")


def _engine_info(name: str) -> EngineInfo:
    try:
        return get_engine(name)
    except EngineError as exc:
        raise RunError(str(exc)) from None


def _run_dir(place: RunPlace, options: RunOptions, suite: Suite) -> Path:
    if place.out is not None:
        return Path(place.out)
    return place.results_root / default_run_id(suite.name, options.engine)


def _holds_samples(path: Path) -> bool:
    return path.exists() and (not path.is_file() or path.stat().st_size > 0)


def _recorded_options(given: RunOptions, suite: Suite, run_dir: Path) -> tuple[RunOptions, RunRecord]:
    """The saved run.json and ``given`` with the recorded values of the options it leaves out, once
    ``given`` asks for exactly the recorded run; an option given with another value is a RunError
    listing every difference (a resumed run never mixes two runs in one samples.jsonl)."""
    try:
        previous = read_run(run_dir)
    except RunDirError as exc:
        raise RunError(f"cannot resume: {exc}") from None
    found = []
    if previous.suite.name != suite.name or previous.suite.version != suite.spec.version:
        found.append(f"suite {suite.name!r} v{suite.spec.version} (recorded: {previous.suite.name!r} "
                     f"v{previous.suite.version})")
    found += differences(given, previous.options)
    if found:
        raise RunError(
            f"{run_dir}: cannot resume: this command asks for another run than run.json records: "
            f"{'; '.join(found)}. Leave these options out to continue the recorded run, or use another --out."
        )
    taken = {name: getattr(previous.options, name) for name in COMPARED if getattr(given, name) is None}
    # The recorded order of families and strategies, whatever order the command gave them in.
    taken.update(families=previous.options.families, strategies=previous.options.strategies)
    return given.model_copy(update=taken), previous


def _settle_run_dir(place: RunPlace, options: RunOptions, suite: Suite,
                    log: RunLog) -> tuple[Path, RunOptions, RunRecord | None]:
    """The run directory, and on resume the options with the recorded values and the recorded run."""
    run_dir = _run_dir(place, options, suite)
    try:
        check_output_dir(run_dir)
    except InputFileError as exc:
        raise RunError(str(exc)) from None
    resuming = place.resume and (run_dir / RUN_FILE).exists()
    if not resuming and _holds_samples(run_dir / SAMPLES_FILE):
        if place.resume:
            raise RunError(f"{run_dir}: samples but no {RUN_FILE}: not a run directory this runner wrote")
        raise RunError(f"{run_dir} already holds samples: use --resume to continue it, or another --out")
    if not resuming:
        if place.resume:
            log(f"resume: {run_dir} holds no run yet (killed before its first sample?): starting it")
        return run_dir, options, None
    options, previous = _recorded_options(options, suite, run_dir)
    return run_dir, options, previous


def model_args(options: RunOptions, suite: Suite, info: EngineInfo) -> dict[str, str]:
    """The model asked for per family: ``--model FAMILY=NAME`` (and the config file's), then a bare
    ``--model`` (every family), then the suite's ``models`` (server engines only: the oracle and the
    embedded engine run no model a suite could name)."""
    suite_models = {str(f): m for f, m in suite.spec.models.items() if options.families is None or f in options.families}
    return layered_models(info, options.model, options.models, suite_models)


def _open_engine(options: RunOptions, agent: Agent, run_dir: Path, log: RunLog,
                 open_engine: EngineOpener) -> tuple[RunEngine, list[str] | None]:
    context = EngineContext(run_dir=run_dir, log=log, engine_log=log.engine, bundle_model=agent.config.model)
    try:
        return open_engine(options, context)
    except EngineError as exc:
        raise RunError(str(exc)) from None


def _check_model(run_dir: Path, engine: RunEngine, previous: RunRecord | None, families: tuple[Family, ...]) -> None:
    if previous is None:
        return
    if previous.models:
        for family in families:
            recorded, now = previous.models.get(family), engine.model_for(family)
            if recorded is not None and recorded != now:
                raise RunError(f"{run_dir}: cannot resume: {family} would run on {now!r}, run.json records "
                               f"{recorded!r}. Pass the recorded --model {family}=..., or use another --out.")
    elif previous.model and engine.model_id != previous.model:
        raise RunError(f"{run_dir}: cannot resume: the engine serves model {engine.model_id!r}, run.json "
                       f"records {previous.model!r}. Pass the recorded --model, or use another --out.")


def _check_calls(suite: Suite, agent: Agent) -> None:
    """The suite's calls against the tools the run will use, by the check ``harness validate`` makes
    (``validate_loaded``): a case validate rejects is never run. SuiteError lists every problem."""
    python = agent.config.python
    tools = ToolSet({tool.schema.name: tool.schema for tool in agent.tools}, f"{suite.bundle_dir}'s tools",
                    classes=None if python is None else frozenset(python.classes))
    problems = validate_loaded(suite, tools)
    if problems:
        raise SuiteError(problems)


def _token_bound(options: RunOptions, suite: Suite, agent: Agent, previous: RunRecord | None,
                 log: RunLog) -> TokenBound:
    """The run's bound; a resumed run keeps the recorded one with the source it recorded."""
    from harness.grammar import needs_build

    recorded = previous.options.max_tokens if previous is not None else None
    if previous is not None and recorded is not None and previous.max_tokens_source \
            and options.max_tokens == recorded:
        return TokenBound(recorded, previous.max_tokens_source)
    if options.max_tokens is None and suite.spec.max_tokens is None:
        # Deriving the bound counts gold answers in each family's tokens: a fresh cache builds them first.
        fresh = [str(family) for family in suite.spec.families if needs_build(family)]
        if fresh:
            log(f"building the {' and '.join(fresh)} tokenizer into the user cache "
                "(once: about a minute on 2 cores)...")
    return choose_token_bound(options.max_tokens, suite, agent)


def _sampling(options: RunOptions, suite: Suite, previous: RunRecord | None, log: RunLog) -> dict[str, object]:
    """The per-request settings: flags, else the suite's defaults, else greedy; a resumed run's recorded
    values (a run recorded before sampling settings were is greedy). A sampled run without a seed gets a
    random one, logged and recorded, so it can be reproduced."""
    defaults = (0.0, 1.0) if previous is not None else (suite.spec.temperature or 0.0, suite.spec.top_p or 1.0)
    temperature = options.temperature if options.temperature is not None else defaults[0]
    top_p = options.top_p if options.top_p is not None else defaults[1]
    seed = options.seed if options.seed is not None or previous is not None else suite.spec.seed
    if seed is None and previous is None:
        import secrets

        seed = secrets.randbelow(2**31)
        if temperature > 0:
            log(f"sampling: run seed {seed} (random; --seed {seed} reproduces this run)")
    if temperature > 0:
        log(f"sampling: temperature {temperature:g}, top_p {top_p:g}, per-sample seeds from run seed {seed}")
    return {"temperature": temperature, "top_p": top_p, "seed": seed}


async def resolve_run(
    suite_dir: Path, given: RunOptions, log: RunLog, place: RunPlace = RunPlace(),
    open_engine: EngineOpener = open_engine,
) -> tuple[ResolvedRun, RunEngine]:
    """``given`` resolved once (see the module doc), and its engine opened: the caller closes it
    (``aclose``). ``open_engine(options, context)`` may restrict the families (the embedded engine
    has weights for some only)."""
    from harness.bundles import bundle_source, load_agent
    from harness.eval.run.preflight import check_reachable

    if place.retry_errors and not place.resume:
        raise RunError("--retry-errors runs again the errored samples of a saved run: give --resume (and --out) too")
    suite = load_suite(suite_dir)
    info = _engine_info(given.engine)
    run_dir, options, previous = _settle_run_dir(place, given, suite, log)
    cases = CaseSelection(limit=options.limit, selection=options.selection)
    if not cases.select(suite.cases):
        raise RunError(f"the case selection takes none of the {len(suite.cases)} cases of {suite.name!r} "
                       f"({_selection_words(options)})")
    _, source = bundle_source(suite.bundle_dir)
    agent = load_agent(suite.bundle_dir, source=source)
    _check_calls(suite, agent)
    options = options.model_copy(update={"models": model_args(options, suite, info)})
    engine, families = _open_engine(options, agent, run_dir, log, open_engine)
    try:
        run_families = tuple(Family(family) for family in families or suite.spec.families)
        await check_reachable(engine.endpoints(list(run_families)))  # a server that is down stops the run in seconds
        models = MappingProxyType({family: engine.model_for(family) for family in run_families})
        _check_model(run_dir, engine, previous, run_families)
        bound = _token_bound(options, suite, agent, previous, log)
    except BaseException:
        await engine.aclose()
        raise
    log(f"token bound: {bound.max_tokens} per model response ({bound.source})")
    settled = options.model_copy(update={
        "families": run_families, "strategies": tuple(Strategy(s) for s in options.strategies or suite.spec.strategies),
        "epochs": options.epochs or 1, "concurrency": options.concurrency or info.concurrency,
        "max_steps_per_turn": options.max_steps_per_turn or agent.config.kernel.max_steps,
        "max_tokens": bound.max_tokens, "vllm_args": options.vllm_args or (),
        **_sampling(options, suite, previous, log),
    })
    run = ResolvedRun(suite=suite, agent=agent, source=source, run_dir=run_dir, options=settled, models=models,
                      max_tokens_source=bound.source, resumed=previous, retry_errors=place.retry_errors)
    return run, engine


def _selection_words(options: RunOptions) -> str:
    chosen = options.selection
    words = [f"--limit {options.limit}"] if options.limit else []
    if chosen is not None:
        words += [f"--sample-id {i}" for i in chosen.ids] + [f"--tag {t}" for t in chosen.tags]
        words += [f"--sample {chosen.sample}"] if chosen.sample else []
        words += [f"--shard {chosen.shard}"] if chosen.shard else []
    return " ".join(words) or "no selection"


__all__ = ["EngineOpener", "RunError", "RunPlace", "model_args", "resolve_run"]
