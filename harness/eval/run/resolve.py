"""``resolve_run``: a run's options (``RunSpec``), its suite and its bundle turned once into a frozen
``ResolvedRun``, with its engine opened.

Every refusal happens here, before a file of the run directory is touched: bad options, an unknown
engine, family or strategy, an ``--out`` that cannot be a run directory or already holds another run's
samples, and on ``--resume`` a command asking for another run than run.json records (every difference
named; options left out take the recorded values) or an engine serving another model. The bundle is
read once (``harness.bundles.load_agent``); generation and scoring both use its agent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from harness.agents.agent import Agent
from harness.engines import registry
from harness.engines.registry import EngineInfo, EngineOptions, RunEngine
from harness.eval.data.suite import Suite, load_suite
from harness.eval.run.run_log import RunLog
from harness.eval.run.spec import CaseSelection, EngineChoice, ResolvedRun, RunSpec, Sampling
from harness.eval.run.token_bound import TokenBound, choose_token_bound
from harness.eval.store.provenance import default_run_id
from harness.eval.store.records import RunRecord
from harness.eval.store.results import RUN_FILE, SAMPLES_FILE, RunDirError, read_run
from harness.files import InputError, check_output_dir
from harness.vocabulary import FAMILIES, STRATEGIES, Family, Strategy

EngineOpener = Callable[[str, EngineOptions], tuple[RunEngine, list[str] | None]]
"""``(engine name, options) -> (engine, families)``: the registry's ``open_engine`` by default."""

MATRIX_FIELDS = ("engine", "target", "families", "strategies", "epochs", "limit", "max_tokens", "max_steps_per_turn")
"""What a run's samples depend on, beside its suite: a resumed run must ask for the same (or leave it
out to take the recorded value). Concurrency and the sample timeout may change between sessions."""


class RunError(Exception):
    """A run that cannot start (bad options, a run directory in the way...); the message says why."""


def _check_options(spec: RunSpec) -> None:
    """Options a run cannot start with; RunError names the option."""
    if not (math.isfinite(spec.sample_timeout_s) and spec.sample_timeout_s > 0):
        raise RunError(f"--sample-timeout must be a positive, finite number of seconds, got {spec.sample_timeout_s:g}")
    for value, option in ((spec.epochs, "--epochs"), (spec.concurrency, "--concurrency"), (spec.limit, "--limit"),
                          (spec.max_tokens, "--max-tokens")):
        if value is not None and value < 1:
            raise RunError(f"{option} must be >= 1, got {value}")


def _engine_info(name: str) -> EngineInfo:
    try:
        return registry.get_engine(name)
    except registry.EngineError as exc:
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
    except InputError as exc:
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


def _open_engine(spec: RunSpec, agent: Agent, run_dir: Path, log: RunLog,
                 open_engine: EngineOpener) -> tuple[RunEngine, list[str] | None]:
    options = EngineOptions(
        base_urls=tuple(spec.base_urls), model=spec.model, target=spec.target, families=spec.families,
        timeout_s=spec.sample_timeout_s, bundle_model=agent.config.model, run_dir=run_dir, log=log,
        engine_log=log.engine,
    )
    try:
        return open_engine(spec.engine, options)
    except registry.EngineError as exc:
        raise RunError(str(exc)) from None


def _check_model(run_dir: Path, engine: RunEngine, previous: RunRecord | None) -> None:
    if previous is not None and previous.model and engine.model_id != previous.model:
        raise RunError(f"{run_dir}: cannot resume: the engine serves model {engine.model_id!r}, run.json "
                       f"records {previous.model!r}. Pass the recorded --model, or use another --out.")


def _token_bound(spec: RunSpec, suite: Suite, agent: Agent, previous: RunRecord | None) -> TokenBound:
    """The run's bound; a resumed run keeps the recorded one with the source it recorded."""
    if previous is not None and previous.max_tokens is not None and previous.max_tokens_source \
            and spec.max_tokens == previous.max_tokens:
        return TokenBound(previous.max_tokens, previous.max_tokens_source)
    return choose_token_bound(spec.max_tokens, suite, agent)


async def resolve_run(
    spec: RunSpec, log: RunLog, open_engine: EngineOpener = registry.open_engine
) -> tuple[ResolvedRun, RunEngine]:
    """``spec`` resolved once (see the module doc), and its engine opened: the caller closes it
    (``aclose``). ``open_engine(spec.engine, options)`` may restrict the families (the embedded engine
    has weights for some only)."""
    from harness.bundles import load_agent

    _check_options(spec)
    suite = load_suite(spec.suite_dir)
    info = _engine_info(spec.engine)
    _check_names(spec.families, spec.strategies)
    run_dir, spec, previous = _settle_run_dir(spec, suite, log)
    agent = load_agent(suite.bundle_dir)
    bound = _token_bound(spec, suite, agent, previous)
    log(f"token bound: {bound.max_tokens} per model response ({bound.source})")
    engine, families = _open_engine(spec, agent, run_dir, log, open_engine)
    try:
        lanes = tuple(Family(family) for family in families or suite.spec.families)
        models = MappingProxyType({family: engine.model_for(family) for family in lanes})
        _check_model(run_dir, engine, previous)
    except BaseException:
        await engine.aclose()
        raise
    run = ResolvedRun(
        suite=suite, agent=agent, run_dir=run_dir,
        engine=EngineChoice(name=spec.engine, base_urls=tuple(spec.base_urls), model=spec.model, target=spec.target,
                            concurrency=spec.concurrency or info.concurrency),
        models=models, families=lanes, strategies=tuple(Strategy(s) for s in spec.strategies or suite.spec.strategies),
        cases=CaseSelection(limit=spec.limit), epochs=spec.epochs or 1,
        sampling=Sampling(max_tokens=bound.max_tokens, max_tokens_source=bound.source),
        max_steps_per_turn=spec.max_steps_per_turn or agent.config.kernel.max_steps,
        sample_timeout_s=spec.sample_timeout_s, resumed=previous,
    )
    return run, engine


__all__ = ["MATRIX_FIELDS", "EngineOpener", "RunError", "resolve_run"]
