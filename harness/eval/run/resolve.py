"""``resolve_run``: a run's options (``RunSpec``), its suite and its bundle turned once into a frozen
``ResolvedRun``, with its engine opened.

Every refusal happens here, before a file of the run directory is touched: bad options, an unknown
engine, family or strategy, an ``--out`` that cannot be a run directory or already holds another run's
samples, a case whose calls the bundle's tools refuse (the check ``harness validate`` makes, so a case
validate rejects is never run), and on ``--resume`` a command asking for another run than run.json
records (every difference named; options left out take the recorded values) or an engine serving
another model. The bundle is
read once (``harness.bundles.load_agent``); generation and scoring both use its agent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from harness.agents import Agent
from harness.engines import EngineError, EngineInfo, EngineOptions, RunEngine, get_engine, open_engine
from harness.eval.data import Suite, SuiteError, ToolSet, load_suite, validate_loaded
from harness.eval.run.run_log import RunLog
from harness.eval.run.spec import CaseSelection, EngineChoice, ResolvedRun, RunError, RunSpec, Sampling
from harness.eval.run.token_bound import TokenBound, choose_token_bound
from harness.eval.store import RUN_FILE, SAMPLES_FILE, RunDirError, RunRecord, default_run_id, read_run
from harness.files import InputFileError, check_output_dir
from harness.vocabulary import FAMILIES, STRATEGIES, Family, Strategy

EngineOpener = Callable[[str, EngineOptions], tuple[RunEngine, list[str] | None]]
"""``(engine name, options) -> (engine, families)``: the registry's ``open_engine`` by default."""

MATRIX_FIELDS = ("engine", "target", "families", "strategies", "epochs", "limit", "max_tokens", "max_steps_per_turn",
                 "temperature", "top_p", "seed", "selection", "vllm_args")
"""What a run's samples depend on, beside its suite: a resumed run must ask for the same (or leave it
out to take the recorded value). Concurrency and the sample timeout may change between sessions."""


def _check_options(spec: RunSpec) -> None:
    """Options a run cannot start with; RunError names the option."""
    if not (math.isfinite(spec.sample_timeout_s) and spec.sample_timeout_s > 0):
        raise RunError(f"--sample-timeout must be a positive, finite number of seconds, got {spec.sample_timeout_s:g}")
    for value, option in ((spec.epochs, "--epochs"), (spec.concurrency, "--concurrency"), (spec.limit, "--limit"),
                          (spec.max_tokens, "--max-tokens")):
        if value is not None and value < 1:
            raise RunError(f"{option} must be >= 1, got {value}")
    if spec.temperature is not None and not (math.isfinite(spec.temperature) and 0.0 <= spec.temperature <= 2.0):
        raise RunError(f"--temperature must be within 0..2, got {spec.temperature:g}")
    if spec.top_p is not None and not (math.isfinite(spec.top_p) and 0.0 < spec.top_p <= 1.0):
        raise RunError(f"--top-p must be above 0 and at most 1, got {spec.top_p:g}")
    if spec.seed is not None and not 0 <= spec.seed < 2**63:
        raise RunError(f"--seed must be within 0..2**63-1, got {spec.seed}")
    if spec.retry_errors and not spec.resume:
        raise RunError("--retry-errors runs again the errored samples of a saved run: give --resume (and --out) too")
    if (spec.vllm_args or spec.keep_server) and spec.engine != "vllm":
        raise RunError(f"--vllm-arg and --keep-server are for --engine vllm (the servers it starts), not {spec.engine}")
    shard = spec.selection.shard if spec.selection is not None else None
    if shard is not None and shard.index > shard.count:
        raise RunError(f"--shard {shard}: I must be between 1 and N")


def _engine_info(name: str) -> EngineInfo:
    try:
        return get_engine(name)
    except EngineError as exc:
        raise RunError(str(exc)) from None


def _check_names(families: list[str] | None, strategies: list[str] | None) -> None:
    names: tuple[tuple[list[str] | None, tuple[str, ...], str], ...] = (
        (families, FAMILIES, "family"), (strategies, STRATEGIES, "strategy"))
    for given, known, what in names:
        bad = [g for g in given or () if g not in known]
        if bad:
            raise RunError(f"unknown {what} {bad[0]!r}: expected one of {', '.join(known)}")


def _run_dir(spec: RunSpec, suite: Suite) -> Path:
    if spec.out is not None:
        return Path(spec.out)
    return spec.results_root / default_run_id(suite.name, spec.engine)


def _holds_samples(path: Path) -> bool:
    return path.exists() and (not path.is_file() or path.stat().st_size > 0)


def _shown(value: object) -> str:
    """An option's value as the refusal names it: a list of names as plain strings (``['ebnf']``)."""
    return repr([str(v) for v in value]) if isinstance(value, list) else repr(value)


def _recorded_options(spec: RunSpec, suite: Suite, run_dir: Path) -> tuple[RunSpec, RunRecord]:
    """The saved run.json and ``spec`` with the recorded values of the options it leaves out, once
    ``spec`` asks for exactly the recorded matrix; an option given with another value is a RunError
    listing every difference (a resumed run never mixes two matrices in one samples.jsonl)."""
    try:
        previous = read_run(run_dir)
    except RunDirError as exc:
        raise RunError(f"cannot resume: {exc}") from None
    differences = []
    if previous.suite.name != suite.name or previous.suite.version != suite.spec.version:
        differences.append(f"suite {suite.name!r} v{suite.spec.version} (recorded: {previous.suite.name!r} "
                           f"v{previous.suite.version})")
    taken = {}
    for name in MATRIX_FIELDS:
        recorded, given = getattr(previous, name), getattr(spec, name)
        if given is None:
            taken[name] = recorded
        elif (name in ("families", "strategies") and set(given) != set(recorded)) or (name not in (
                "families", "strategies") and given != recorded):
            differences.append(f"{name} {_shown(given)} (recorded: {_shown(recorded)})")
    if differences:
        raise RunError(
            f"{run_dir}: cannot resume: this command asks for another run than run.json records: "
            f"{'; '.join(differences)}. Leave these options out to continue the recorded run, or use another --out."
        )
    # The recorded order of families and strategies, whatever order the command gave them in.
    taken.update(families=list(previous.families), strategies=list(previous.strategies))
    return replace(spec, **taken), previous


def _settle_run_dir(spec: RunSpec, suite: Suite, log: RunLog) -> tuple[Path, RunSpec, RunRecord | None]:
    """The run directory, and on resume the options with the recorded values and the recorded run."""
    run_dir = _run_dir(spec, suite)
    try:
        check_output_dir(run_dir)
    except InputFileError as exc:
        raise RunError(str(exc)) from None
    resuming = spec.resume and (run_dir / RUN_FILE).exists()
    if not resuming and _holds_samples(run_dir / SAMPLES_FILE):
        if spec.resume:
            raise RunError(f"{run_dir}: samples but no {RUN_FILE}: not a run directory this runner wrote")
        raise RunError(f"{run_dir} already holds samples: use --resume to continue it, or another --out")
    if not resuming:
        if spec.resume:
            log(f"resume: {run_dir} holds no run yet (killed before its first sample?): starting it")
        return run_dir, spec, None
    spec, previous = _recorded_options(spec, suite, run_dir)
    return run_dir, spec, previous


def model_args(spec: RunSpec, suite: Suite, info: EngineInfo) -> dict[str, str]:
    """The model asked for per family: ``--model FAMILY=NAME`` (and the config file's), then a bare
    ``--model`` (every family), then the suite's ``models`` (server engines only: the oracle and the
    embedded engine run no model a suite could name)."""
    models = dict(spec.models)
    if spec.model is None and info.serves_models:
        models = {**{str(f): m for f, m in suite.spec.models.items()
                     if spec.families is None or f in spec.families}, **models}
    return models


def _open_engine(spec: RunSpec, agent: Agent, run_dir: Path, log: RunLog, open_engine: EngineOpener,
                 models: dict[str, str]) -> tuple[RunEngine, list[str] | None]:
    options = EngineOptions(
        base_urls=tuple(spec.base_urls), model=spec.model, models=models, server_args=tuple(spec.vllm_args or ()),
        keep_server=spec.keep_server, target=spec.target, grammar_backend=spec.grammar_backend, families=spec.families,
        timeout_s=spec.sample_timeout_s, bundle_model=agent.config.model, run_dir=run_dir, log=log,
        engine_log=log.engine,
    )
    try:
        return open_engine(spec.engine, options)
    except EngineError as exc:
        raise RunError(str(exc)) from None


def _check_model(run_dir: Path, engine: RunEngine, previous: RunRecord | None, lanes: tuple[Family, ...]) -> None:
    if previous is None:
        return
    if previous.models:
        for family in lanes:
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
    tools = ToolSet({tool.schema.name: tool.schema for tool in agent.tools}, f"{suite.bundle_dir}'s tools")
    problems = validate_loaded(suite, tools)
    if problems:
        raise SuiteError(problems)


def _token_bound(spec: RunSpec, suite: Suite, agent: Agent, previous: RunRecord | None,
                 log: RunLog) -> TokenBound:
    """The run's bound; a resumed run keeps the recorded one with the source it recorded."""
    from harness.grammar import needs_build

    if previous is not None and previous.max_tokens is not None and previous.max_tokens_source \
            and spec.max_tokens == previous.max_tokens:
        return TokenBound(previous.max_tokens, previous.max_tokens_source)
    if spec.max_tokens is None and suite.spec.max_tokens is None:
        # Deriving the bound counts gold answers in each family's tokens: a fresh cache builds them first.
        fresh = [str(family) for family in suite.spec.families if needs_build(family)]
        if fresh:
            log(f"building the {' and '.join(fresh)} tokenizer into the user cache "
                "(once: about a minute on 2 cores)...")
    return choose_token_bound(spec.max_tokens, suite, agent)


def _sampling(spec: RunSpec, suite: Suite, bound: TokenBound, previous: RunRecord | None, log: RunLog) -> Sampling:
    """The per-request settings: flags, else the suite's defaults, else greedy; a resumed run's recorded
    values (a run recorded before sampling settings were is greedy). A sampled run without a seed gets a
    random one, logged and recorded, so it can be reproduced."""
    defaults = (0.0, 1.0) if previous is not None else (suite.spec.temperature or 0.0, suite.spec.top_p or 1.0)
    temperature = spec.temperature if spec.temperature is not None else defaults[0]
    top_p = spec.top_p if spec.top_p is not None else defaults[1]
    seed = spec.seed if spec.seed is not None or previous is not None else suite.spec.seed
    if seed is None and previous is None:
        import secrets

        seed = secrets.randbelow(2**31)
        if temperature > 0:
            log(f"sampling: run seed {seed} (random; --seed {seed} reproduces this run)")
    if temperature > 0:
        log(f"sampling: temperature {temperature:g}, top_p {top_p:g}, per-sample seeds from run seed {seed}")
    return Sampling(max_tokens=bound.max_tokens, max_tokens_source=bound.source, temperature=temperature,
                    top_p=top_p, seed=seed)


async def resolve_run(
    spec: RunSpec, log: RunLog, open_engine: EngineOpener = open_engine
) -> tuple[ResolvedRun, RunEngine]:
    """``spec`` resolved once (see the module doc), and its engine opened: the caller closes it
    (``aclose``). ``open_engine(spec.engine, options)`` may restrict the families (the embedded engine
    has weights for some only)."""
    from harness.bundles import load_agent
    from harness.eval.run.preflight import check_reachable

    _check_options(spec)
    suite = load_suite(spec.suite_dir)
    info = _engine_info(spec.engine)
    _check_names(spec.families, spec.strategies)
    run_dir, spec, previous = _settle_run_dir(spec, suite, log)
    cases = CaseSelection(limit=spec.limit, selection=spec.selection)
    if not cases.select(suite.cases):
        raise RunError(f"the case selection takes none of the {len(suite.cases)} cases of {suite.name!r} "
                       f"({_selection_words(spec)})")
    agent = load_agent(suite.bundle_dir)
    _check_calls(suite, agent)
    asked = model_args(spec, suite, info)
    engine, families = _open_engine(spec, agent, run_dir, log, open_engine, asked)
    try:
        lanes = tuple(Family(family) for family in families or suite.spec.families)
        await check_reachable(engine.endpoints(list(lanes)))  # a server that is down stops the run in seconds
        models = MappingProxyType({family: engine.model_for(family) for family in lanes})
        _check_model(run_dir, engine, previous, lanes)
        bound = _token_bound(spec, suite, agent, previous, log)
    except BaseException:
        await engine.aclose()
        raise
    log(f"token bound: {bound.max_tokens} per model response ({bound.source})")
    run = ResolvedRun(
        suite=suite, agent=agent, run_dir=run_dir,
        engine=EngineChoice(name=spec.engine, base_urls=tuple(spec.base_urls), model=spec.model, target=spec.target,
                            concurrency=spec.concurrency or info.concurrency, model_args=MappingProxyType(asked),
                            vllm_args=tuple(spec.vllm_args or ()), keep_server=spec.keep_server,
                            grammar_backend=spec.grammar_backend),
        models=models, families=lanes, strategies=tuple(Strategy(s) for s in spec.strategies or suite.spec.strategies),
        cases=cases, epochs=spec.epochs or 1,
        sampling=_sampling(spec, suite, bound, previous, log),
        max_steps_per_turn=spec.max_steps_per_turn or agent.config.kernel.max_steps,
        sample_timeout_s=spec.sample_timeout_s, resumed=previous, retry_errors=spec.retry_errors,
    )
    return run, engine


def _selection_words(spec: RunSpec) -> str:
    chosen = spec.selection
    words = [f"--limit {spec.limit}"] if spec.limit else []
    if chosen is not None:
        words += [f"--sample-id {i}" for i in chosen.ids] + [f"--tag {t}" for t in chosen.tags]
        words += [f"--sample {chosen.sample}"] if chosen.sample else []
        words += [f"--shard {chosen.shard}"] if chosen.shard else []
    return " ".join(words) or "no selection"


__all__ = ["MATRIX_FIELDS", "EngineOpener", "RunError", "resolve_run"]
