"""The runner: family x strategy x case x epoch samples, run concurrently, saved as they finish.

``run_suite(RunSpec)`` loads the suite and its bundle's agent once (``harness.bundles.load_agent``: the
road library users take too, every bundle field honoured), takes one agent variant per family and
strategy (payloads and grammars are built once per variant, not per request), then hands samples to
``concurrency`` workers. Each sample is bounded in time (``sample:timeout``) and retried once when the
model call failed on a timeout or a lost connection. Every finished sample goes to samples.jsonl at
once (see ``SampleWriter``); with ``resume`` the samples already saved are skipped, and a line torn by
a kill is cut off and its sample run again. Scoring runs at the end from samples.jsonl alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO

from harness.agents.agent import Agent, AgentOptions
from harness.engines import registry
from harness.engines.registry import EngineOptions, RunEngine
from harness.eval.records import RunRecord, RunTiming, SampleKey, SampleRecord, SuiteRef
from harness.eval.results import (
    RUN_FILE,
    SAMPLES_FILE,
    RunDirError,
    SampleWriter,
    default_run_id,
    git_commit,
    machine,
    make_sample_id,
    read_run,
    repair_samples,
    utc_now,
    versions,
    write_run,
)
from harness.eval.sample import (
    SampleOutcome,
    gold_answers,
    run_episode,
    run_next_call,
    run_single_turn,
    sample_record,
)
from harness.eval.suite import Case, EpisodeCase, NextCallCase, SingleTurnCase, Suite, load_suite
from harness.eval.token_bound import token_bound
from harness.files import InputError, check_output_dir

RETRY_KINDS = frozenset({"model:timeout", "model:connection"})
LOG_FILE = "run.log"
"""The run's log in its directory: what the run said (setup, bound, servers) and the engine's own lines
(llama.cpp's), with times; the terminal gets the progress, not engine chatter."""
HEARTBEAT_S = 5.0


class RunError(Exception):
    """A run that cannot start (bad options, a run directory in the way...); the message says why."""


@dataclass
class RunSpec:
    suite_dir: Path
    engine: str = "oracle"
    base_urls: list[str] = field(default_factory=list)
    """OpenAI-compatible servers (openai engine); several = replicas serving the same model."""
    model: str | None = None
    target: str | None = None
    """Oracle only: replay gold through another system's grammar compiler (``vllm``)."""
    families: list[str] | None = None
    strategies: list[str] | None = None
    limit: int | None = None
    """Only the first N cases; None = all (on resume: the recorded limit)."""
    concurrency: int | None = None
    """Samples in flight; None = the engine's default (its ``EngineInfo.concurrency``)."""
    epochs: int | None = None
    """Repetitions of every case; None = 1 (on resume: the recorded number)."""
    out: Path | None = None
    resume: bool = False
    sample_timeout_s: float = 300.0
    """Seconds one sample may take (positive and finite)."""
    max_steps_per_turn: int | None = None
    """Model calls per user turn of an episode; None = the bundle's ``kernel.max_steps``. When the
    last one still calls tools, the episode ends there and its state_match fails with
    ``state:force_terminated`` (BFCL's force quit; BFCL's 20 responses with calls plus one to answer
    are 21, as ``bundles/bfcl`` sets)."""
    max_tokens: int | None = None
    """Bound per model response; None = the suite's ``max_tokens``, else derived from its longest gold
    answer (``harness.eval.token_bound``). Always sent, and recorded in run.json with its source."""
    results_root: Path = Path("results")


@dataclass
class RunOutcome:
    run_dir: Path
    total: int
    skipped: int
    ran: int
    errors: int
    wall_s: float
    harness_ms: list[float] = field(default_factory=list)


class Progress(Protocol):
    """What a run reports as it goes (``harness run`` draws a bar or prints lines)."""

    def started(self, key: SampleKey) -> None:
        """A sample began (its model calls may take a while: the first prompt prefills the cache)."""

    def finished(self, record: SampleRecord, failure: str | None) -> None:
        """A sample was saved; ``failure``: its validity failure or error kind (None: a valid answer)."""

    def tick(self) -> None:
        """Called every few seconds while samples run."""


@dataclass
class _Job:
    agent: Agent
    """The bundle's agent for this family and strategy."""
    case: Case
    epoch: int
    sample_id: str

    def key(self, suite: Suite) -> SampleKey:
        return SampleKey(
            sample_id=self.sample_id, case_id=self.case.id, family=self.agent.family,
            strategy=self.agent.constraint.strategy, epoch=self.epoch, kind=suite.kind,
        )


class Runner:
    """One run: the suite, the engine setup, one agent per family and strategy, the sandbox states."""

    def __init__(self, spec: RunSpec, suite: Suite, engine: RunEngine, families: list[str],
                 strategies: list[str], agent: Agent) -> None:
        from harness.eval.execution import SandboxStates
        from harness.eval.scoring import Scorer

        self.spec, self.suite, self.engine = spec, suite, engine
        self.tools = agent.tools
        self.checker = Scorer(suite.cases, [t.schema for t in self.tools], engine.name, backend=None)
        """Validity of each finished sample for the progress (the full scoring runs at the end)."""
        self.states = SandboxStates(self.tools, echo_mode=suite.spec.echo_mode)
        options: AgentOptions = {"stream": engine.stream}
        if suite.text_answer:  # episodes: the model ends each user turn with a plain answer
            options["allow_text_answer"] = True
        if spec.max_tokens is not None:
            options["max_tokens"] = spec.max_tokens
        self.agents = [
            agent.variant(**(options | {"family": family, "strategy": strategy, "model_id": engine.model_for(family)}))
            for family in families
            for strategy in strategies
        ]

    async def prepare(self, families: list[str]) -> None:
        """Warm up before the clock starts: the engine's tokenizers, the sandbox's worker pool (its
        first call starts processes) and each agent's payloads. The engine's part runs in a thread, so
        that Ctrl-C (asyncio cancels the run's task) ends a run still waiting for a server to start."""
        await asyncio.to_thread(self.engine.prepare, families)
        no_args = [t.schema.name for t in self.tools if not t.schema.required]
        first = self.suite.cases[0] if self.suite.cases else None
        if isinstance(first, NextCallCase | EpisodeCase) and no_args:  # single-turn cases run no tool
            state = self.states.initial(first)
            await asyncio.gather(*(
                self.states.run_call(state.copy(), no_args[0], {}) for _ in range(self.spec.concurrency or 1)
            ))
        for agent in self.agents:
            agent.adapter.build_payload([t.schema for t in agent.tools], agent.constraint)

    def jobs(self) -> list[_Job]:
        cases = self.suite.cases[: self.spec.limit] if self.spec.limit else self.suite.cases
        return [
            _Job(agent, case, epoch, make_sample_id(case.id, agent.family, agent.constraint.strategy, epoch))
            for agent in self.agents
            for case in cases
            for epoch in range(1, (self.spec.epochs or 1) + 1)
        ]

    async def _attempt(self, job: _Job) -> SampleOutcome:
        gold = gold_answers(job.case, job.agent.constraint.allow_parallel_calls)
        client = self.engine.client_for(job.agent.family, job.agent.constraint, gold)
        started = time.perf_counter()
        setup_ms = 0.0
        if isinstance(job.case, SingleTurnCase):
            outcome = await run_single_turn(job.agent, job.case, client)
        elif isinstance(job.case, NextCallCase):
            workspace = await self.states.workspace_after_history(job.case)
            setup_ms = (time.perf_counter() - started) * 1000.0
            outcome = await run_next_call(job.agent, job.case, client, workspace)
        else:
            workspace = self.states.workspace(job.case)
            setup_ms = (time.perf_counter() - started) * 1000.0
            outcome = await run_episode(job.agent, job.case, client, workspace, self.spec.max_steps_per_turn)
        outcome.setup_ms = setup_ms
        return outcome

    async def run_sample(self, job: _Job) -> SampleRecord:
        started = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            try:
                outcome = await asyncio.wait_for(self._attempt(job), self.spec.sample_timeout_s)
            except TimeoutError:
                outcome = SampleOutcome(
                    error_kind="sample:timeout", error=f"no result within {self.spec.sample_timeout_s:g} s"
                )
            except Exception as exc:  # a bug or a broken engine: counted on the sample, never hidden
                outcome = SampleOutcome(error_kind="harness:exception", error=f"{type(exc).__name__}: {exc}")
            if outcome.error_kind in RETRY_KINDS and attempts == 1:
                continue
            return sample_record(job.key(self.suite), outcome, started, attempts)

    async def run(self, writer: SampleWriter, todo: list[_Job], progress: Progress | None) -> list[SampleRecord]:
        queue: asyncio.Queue[_Job] = asyncio.Queue()
        for job in todo:
            queue.put_nowait(job)
        finished: list[SampleRecord] = []

        async def worker() -> None:
            while True:
                try:
                    job = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if progress is not None:
                    progress.started(job.key(self.suite))
                record = await self.run_sample(job)
                writer.put(record)
                finished.append(record)
                if progress is not None:
                    progress.finished(record, self.checker.validity_of(record).error_kind)

        async def heartbeat() -> None:
            while progress is not None:
                await asyncio.sleep(HEARTBEAT_S)
                progress.tick()

        workers = [asyncio.create_task(worker()) for _ in range(max(1, self.spec.concurrency or 1))]
        beat = asyncio.create_task(heartbeat())
        try:
            await asyncio.gather(*workers)
        finally:
            for w in [*workers, beat]:
                w.cancel()
        return finished


class RunLog:
    """The run's messages: to the caller's ``log`` and, with times, to ``run.log`` once the run
    directory exists (earlier lines are kept until then). ``engine`` lines (llama.cpp's own) go to the
    file only. Thread-safe: llama.cpp logs from the worker thread."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        import threading

        self.echo = echo
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._file: TextIO | None = None

    def __call__(self, message: str) -> None:
        self.echo(message)
        self._write(message)

    def engine(self, text: str) -> None:
        self._write(text.rstrip("\n"), prefix="engine: ")

    def _write(self, message: str, prefix: str = "") -> None:
        if not message:
            return
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {prefix}{message}\n"
        with self._lock:
            if self._file is None:
                self._pending.append(line)
            else:
                self._file.write(line)
                self._file.flush()

    @contextlib.contextmanager
    def to_file(self, path: Path) -> Iterator[None]:
        """Write to ``path`` (appended: a resumed run keeps its earlier lines) while the block runs."""
        with path.open("a", encoding="utf-8") as fh:
            with self._lock:
                fh.writelines(self._pending)
                self._pending.clear()
                self._file = fh
            try:
                yield
            finally:
                with self._lock:
                    self._file = None


def _run_dir(spec: RunSpec, suite: Suite) -> Path:
    if spec.out is not None:
        return Path(spec.out)
    return spec.results_root / default_run_id(suite.name, spec.engine)


def _relative(path: Path) -> str:
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


def _check_names(families: list[str] | None, strategies: list[str] | None) -> None:
    from harness.agents.constraint import STRATEGIES
    from harness.agents.families import FAMILIES

    for given, known, what in ((families, FAMILIES, "family"), (strategies, STRATEGIES, "strategy")):
        bad = [g for g in given or () if g not in known]
        if bad:
            raise RunError(f"unknown {what} {bad[0]!r}: expected one of {', '.join(known)}")


def _check_options(spec: RunSpec) -> None:
    """Options a run cannot start with; RunError names the option."""
    if not (math.isfinite(spec.sample_timeout_s) and spec.sample_timeout_s > 0):
        raise RunError(f"--sample-timeout must be a positive, finite number of seconds, got {spec.sample_timeout_s:g}")
    for value, option in ((spec.epochs, "--epochs"), (spec.concurrency, "--concurrency"), (spec.limit, "--limit"),
                          (spec.max_tokens, "--max-tokens")):
        if value is not None and value < 1:
            raise RunError(f"{option} must be >= 1, got {value}")


MATRIX_FIELDS = ("engine", "target", "families", "strategies", "epochs", "limit", "max_tokens", "max_steps_per_turn")
"""What a run's samples depend on, beside its suite: a resumed run must ask for the same (or leave it
out to take the recorded value). Concurrency and the sample timeout may change between sessions."""


def _check_resume(run_dir: Path, spec: RunSpec, suite: Suite) -> RunRecord:
    """The saved run.json, once ``spec`` asks for exactly the recorded matrix: options left out take
    the recorded values; an option given with another value is a RunError listing every difference
    (a resumed run never mixes two matrices in one samples.jsonl)."""
    try:
        previous = read_run(run_dir)
    except RunDirError as exc:
        raise RunError(f"cannot resume: {exc}") from None
    differences = []
    if previous.suite.name != suite.name or previous.suite.version != suite.spec.version:
        differences.append(f"suite {suite.name!r} v{suite.spec.version} (recorded: {previous.suite.name!r} "
                           f"v{previous.suite.version})")
    for name in MATRIX_FIELDS:
        recorded, given = getattr(previous, name), getattr(spec, name)
        if given is None:
            setattr(spec, name, recorded)
        elif (name in ("families", "strategies") and set(given) != set(recorded)) or (name not in (
                "families", "strategies") and given != recorded):
            differences.append(f"{name} {given!r} (recorded: {recorded!r})")
    if differences:
        raise RunError(
            f"{run_dir}: cannot resume: this command asks for another run than run.json records: "
            f"{'; '.join(differences)}. Leave these options out to continue the recorded run, or use another --out."
        )
    spec.families, spec.strategies = list(previous.families), list(previous.strategies)  # the recorded order
    return previous


async def run_suite(
    spec: RunSpec,
    progress_factory: Callable[[int, int], Progress] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    open_engine: Callable[[str, EngineOptions], tuple[RunEngine, list[str] | None]] = registry.open_engine,
) -> RunOutcome:
    """Run a suite into a results directory, then score it. ``open_engine(spec.engine, options)`` sets
    the engine up (the registry's by default) and may restrict the families (the embedded engine has
    weights for some only)."""
    from harness.bundles import load_agent
    from harness.eval.score_run import score_run

    started = time.perf_counter()
    run_log = RunLog(log)
    _check_options(spec)
    suite = load_suite(spec.suite_dir)
    try:
        info = registry.get_engine(spec.engine)
    except registry.EngineError as exc:
        raise RunError(str(exc)) from None
    _check_names(spec.families, spec.strategies)
    run_dir = _run_dir(spec, suite)
    try:
        check_output_dir(run_dir)
    except InputError as exc:
        raise RunError(str(exc)) from None
    samples_path = run_dir / SAMPLES_FILE
    resuming = spec.resume and (run_dir / RUN_FILE).exists()
    if spec.resume and not resuming:
        if samples_path.exists() and (not samples_path.is_file() or samples_path.stat().st_size > 0):
            raise RunError(f"{run_dir}: samples but no {RUN_FILE}: not a run directory this runner wrote")
        run_log(f"resume: {run_dir} holds no run yet (killed before its first sample?): starting it")
    previous = _check_resume(run_dir, spec, suite) if resuming else None
    if spec.concurrency is None:
        spec.concurrency = info.concurrency
    if previous is not None:
        # Unless given again, a resumed run keeps the matrix it was started with.
        spec.families = spec.families or previous.families
        spec.strategies = spec.strategies or previous.strategies
    spec.epochs = spec.epochs or 1
    agent = load_agent(suite.bundle_dir)
    spec.max_steps_per_turn = spec.max_steps_per_turn or agent.config.kernel.max_steps
    bound = token_bound(spec.max_tokens, suite, agent)
    spec.max_tokens = bound.max_tokens
    run_log(f"token bound: {bound.max_tokens} per model response ({bound.source})")
    options = registry.EngineOptions(
        base_urls=tuple(spec.base_urls), model=spec.model, target=spec.target, families=spec.families,
        timeout_s=spec.sample_timeout_s, bundle_model=agent.config.model, run_dir=run_dir, log=run_log,
        engine_log=run_log.engine,
    )
    try:
        engine, families = open_engine(spec.engine, options)
    except registry.EngineError as exc:
        raise RunError(str(exc)) from None
    families = families or list(suite.spec.families)
    strategies = spec.strategies or list(suite.spec.strategies)
    done: set[str] = set()
    if previous is not None:
        try:
            log_file = repair_samples(samples_path)
        except RunDirError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if log_file.torn_tail_at is not None:
            run_log(f"resume: cut off a torn last line of {samples_path} (its sample runs again)")
        done = set(log_file.samples)
    elif samples_path.exists() and (not samples_path.is_file() or samples_path.stat().st_size > 0):
        raise RunError(f"{run_dir} already holds samples: use --resume to continue it, or another --out")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"--out {str(run_dir)!r}: cannot create the directory: {exc.strerror or exc}") from None
    with run_log.to_file(run_dir / LOG_FILE):
        try:
            runner = Runner(spec, suite, engine, families, strategies, agent)
            if previous is not None and previous.model and engine.model_id != previous.model:
                raise RunError(f"{run_dir}: cannot resume: the engine serves model {engine.model_id!r}, run.json "
                               f"records {previous.model!r}. Pass the recorded --model, or use another --out.")
            jobs = runner.jobs()
            todo = [j for j in jobs if j.sample_id not in done]
            run = RunRecord(
                run_id=run_dir.name,
                suite=SuiteRef(name=suite.name, version=suite.spec.version, kind=suite.kind, path=_relative(suite.path)),
                bundle=_relative(agent.path), engine=engine.name, engine_note=engine.note, base_url=engine.base_url,
                target=spec.target,
                model=engine.model_id, families=families, strategies=strategies, epochs=spec.epochs, limit=spec.limit,
                concurrency=spec.concurrency, sample_timeout_s=spec.sample_timeout_s,
                max_steps_per_turn=spec.max_steps_per_turn, max_tokens=spec.max_tokens, max_tokens_source=bound.source,
                versions=versions(),
                machine=machine(), git_commit=git_commit(), started_at=utc_now(),
            )
            if previous is not None:
                run = run.model_copy(update={"started_at": previous.started_at,
                                             "resumed_at": [*previous.resumed_at, utc_now()]})
            write_run(run_dir, run)
            cases = len(jobs) // max(1, len(families) * len(strategies) * spec.epochs)
            run_log(f"{len(jobs)} samples: {', '.join(families)} x {', '.join(strategies)} x {cases} cases x "
                f"{spec.epochs} epoch(s)" + (f", {len(jobs) - len(todo)} already saved" if done else "")
                + f" -> {run_dir}")
            if todo:
                run_log(f"{engine.name}: loading (tokenizers, weights, servers) before the clock starts...")
                prepared = time.perf_counter()
                await runner.prepare(families)
                run_log(f"{engine.name}: ready in {time.perf_counter() - prepared:.1f} s")
                # What an engine knows only once it runs (a started server's version, command and model).
                run = run.model_copy(update={"engine_note": engine.note, "base_url": engine.base_url,
                                             "model": engine.model_id, "engine_details": engine.describe() or None})
                write_run(run_dir, run)
            progress = progress_factory(len(jobs), len(jobs) - len(todo)) if progress_factory else None
            run_started = time.perf_counter()
            async with SampleWriter(samples_path) as writer:
                finished = await runner.run(writer, todo, progress)
            run_s = time.perf_counter() - run_started
        finally:
            await engine.aclose()
        harness_ms = [r.harness_ms for r in finished]
        details = engine.describe() or run.engine_details  # final figures (e.g. requests per replica)
        write_run(run_dir, run.model_copy(update={"finished_at": utc_now(), "timing": _timing(run_s, harness_ms),
                                                  "engine_details": details}))
        await score_run(run_dir, suite=suite)
        return RunOutcome(
            run_dir=run_dir, total=len(jobs), skipped=len(jobs) - len(todo), ran=len(finished),
            errors=sum(r.status == "error" for r in finished), wall_s=time.perf_counter() - started,
            harness_ms=harness_ms,
        )


def _timing(run_s: float, harness_ms: list[float]) -> RunTiming:
    from harness.stats import rounded_percentile

    return RunTiming(
        samples_s=round(run_s, 3),
        samples=len(harness_ms),
        harness_ms_p50=rounded_percentile(harness_ms, 50),
        harness_ms_p99=rounded_percentile(harness_ms, 99),
        harness_ms_mean=round(sum(harness_ms) / len(harness_ms), 3) if harness_ms else None,
    )


__all__ = ["LOG_FILE", "Progress", "RunError", "RunLog", "RunOutcome", "RunSpec", "Runner", "run_suite"]
