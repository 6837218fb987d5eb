"""The runner: family x strategy x case x epoch samples, run concurrently, saved as they finish.

``run_suite(suite_dir, RunOptions)`` is a short pipeline: the options are resolved once into a ``ResolvedRun``
(``resolve.resolve_run``: the suite and its bundle's agent read once, every option settled, the engine
opened), the samples' file is opened (on resume a line torn by a kill is cut off and its sample runs
again), one agent per lane (family x strategy) runs the samples (payloads and grammars are built
once per lane, not per request) on ``concurrency`` workers, and the run is scored from
samples.jsonl alone. Each sample is bounded in time (``sample:timeout``) and retried once when the
model call failed on a timeout or a lost connection. Every finished sample goes to samples.jsonl at
once (see ``SampleWriter``); with ``resume`` the samples already saved are skipped.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.agents import Agent, AgentOptions, CompletionRequest, Observer
from harness.engines import REGISTRY, EngineError, RunEngine, SampleContext, get_engine, open_engine
from harness.eval.data import Case, NextCallCase, SingleTurnCase, Suite, session_setup
from harness.eval.run.preflight import preflight
from harness.eval.run.recorder import ObserverFactory, close_observers
from harness.eval.run.resolve import EngineOpener, RunError, RunPlace, resolve_run
from harness.eval.run.resolved import ResolvedRun
from harness.eval.run.run_log import LOG_FILE, RunLog
from harness.eval.run.sample import (
    Draw,
    SampleOutcome,
    gold_answers,
    run_episode,
    run_next_call,
    run_single_turn,
    sample_record,
    server_constraints,
    warm_run,
)
from harness.eval.run.setup_identity import checked_identity
from harness.eval.store import (
    RETRIED_FILE,
    SAMPLES_FILE,
    PromptLog,
    RunDirError,
    RunInputs,
    RunRecord,
    RunTiming,
    SampleKey,
    SampleRecord,
    SampleWriter,
    SuiteRef,
    SummaryRow,
    git_commit,
    machine,
    make_sample_id,
    repair_samples,
    set_aside_errors,
    utc_now,
    versions,
    write_run,
)
from harness.run_options import RunOptions
from harness.tools import ToolUnavailable, owners
from harness.vocabulary import ErrorKind, Family

RETRY_KINDS = frozenset({ErrorKind.model_timeout, ErrorKind.model_connection})
HEARTBEAT_S = 5.0


@dataclass
class RunOutcome:
    run_dir: Path
    total: int
    skipped: int
    ran: int
    errors: int
    wall_s: float
    harness_ms: list[float] = field(default_factory=list)
    error_kinds: dict[str, int] = field(default_factory=dict)
    """This session's samples that ended in an error, by error kind."""
    summary: list[SummaryRow] = field(default_factory=list)
    """The summary rows scoring computed (what it wrote to summary.json), every sample of the run counted."""

    @property
    def engine_failed(self) -> bool:
        """Every sample this session ran ended in a ``model:`` error: the engine (its server) answered none."""
        return self.ran > 0 and self.errors == self.ran and all(k.startswith("model:") for k in self.error_kinds)


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
            sample_id=self.sample_id, case_id=self.case.id, family=Family(self.agent.family),
            strategy=self.agent.constraint.strategy, epoch=self.epoch, kind=suite.kind,
        )


class Runner:
    """One run: the suite, the engine setup, one agent per family and strategy, the bundle's tool source."""

    def __init__(self, run: ResolvedRun, engine: RunEngine, observers: Sequence[ObserverFactory] = (),
                 log: Callable[[str], None] = lambda _m: None) -> None:
        from harness.eval.score import Scorer

        self.resolved, self.suite, self.engine = run, run.suite, engine
        self.observers, self.log = list(observers), log
        """The user's observer factories (``recorder.ObserverFactory``), called per sample attempt."""
        self.tools, self.source = run.agent.tools, run.source
        self.checker = Scorer(self.suite.cases, [t.schema for t in self.tools], engine.name, None,
                              owners=owners(self.source), audited=engine.audits_answers,
                              check_after=run.options.unenforceable == "check")
        """Validity of each finished sample for the progress (the full scoring runs at the end)."""
        options: AgentOptions = {"stream": engine.stream, "max_tokens": run.sampling.max_tokens,
                                 "check_after": run.options.unenforceable == "check",
                                 "grammar_backend": run.options.grammar_backend or "xgrammar"}
        if self.suite.text_answer:  # episodes: the model ends each user turn with a plain answer
            options["allow_text_answer"] = True
        self.agents = [
            run.agent.variant(**(options | {"family": family, "strategy": strategy, "model_id": run.models[family]}))
            for family, strategy in run.lanes()
        ]
        self.prompts: PromptLog | None = None
        """Where each step's prompt is kept (set once the run directory exists)."""
        # A server renders tools into the prompt only when they are sent; the harness's engines always do.
        self._server = get_engine(engine.name).serves_models if engine.name in REGISTRY else False

    async def prepare(self) -> None:
        """Warm up before the clock starts: the engine, and meanwhile what needs none (``warm_run``)."""
        first = self.suite.cases[0] if self.suite.cases else None
        await warm_run(self.engine, list(self.resolved.families), self.source, self.agents, first,
                       self.suite.spec.echo_mode, self.resolved.options.concurrency or 1,
                       self.resolved.options.sample_timeout_s)

    def jobs(self) -> list[_Job]:
        cases, selection = self.resolved.selected_cases(), self.resolved.cases
        jobs = [
            _Job(agent, case, epoch, make_sample_id(case.id, agent.family, agent.constraint.strategy, epoch))
            for agent in self.agents
            for case in cases
            for epoch in range(1, self.resolved.epochs + 1)
        ]
        return [job for job in jobs if selection.wants(job.sample_id, job.case.id)]

    def _with_prompts(self, record: SampleRecord, requests: list[CompletionRequest], agent: Agent) -> SampleRecord:
        """``record`` with each step naming its prompt in prompts.jsonl (rendered after the sample's clock
        stopped: keeping prompts costs the run, not the sample's harness time)."""
        if self.prompts is None or not record.steps:
            return record
        steps = []
        for step, request in zip(record.steps, requests, strict=True):
            tools = request.tools if request.send_tools or not self._server else ()
            text = agent.adapter.render_prompt(request.messages, tools)
            steps.append(step.model_copy(update={"prompt_id": self.prompts.add(agent.family, text)}))
        return record.model_copy(update={"steps": tuple(steps)})

    def draw(self, job: _Job) -> Draw:
        """The sample's temperature, top_p and seed (derived from the run's seed, its case and epoch)."""
        sampling = self.resolved.sampling
        return Draw(sampling.temperature, sampling.top_p, sampling.seed_for(job.case.id, job.epoch))

    async def _attempt(self, job: _Job) -> SampleOutcome:
        observers = [factory(job.key(self.suite)) for factory in self.observers]
        try:
            return await self._observed_attempt(job, observers)
        finally:
            await close_observers(observers, self.log)

    async def _observed_attempt(self, job: _Job, observers: list[Observer]) -> SampleOutcome:
        constraint = job.agent.constraint
        gold = tuple(tuple(answer) for answer in gold_answers(job.case, constraint.allow_parallel_calls))
        client = self.engine.client_for(SampleContext(job.sample_id, job.agent.family, constraint, gold))
        started = time.perf_counter()
        workspace_ms = 0.0
        if isinstance(job.case, SingleTurnCase):
            outcome = await run_single_turn(job.agent, job.case, client, self.draw(job), observers)
        else:  # ToolUnavailable when the source cannot open the case's state: see run_sample
            session = await self.source.open(session_setup(job.case, self.suite.spec.echo_mode))
            try:
                workspace_ms = (time.perf_counter() - started) * 1000.0
                if isinstance(job.case, NextCallCase):
                    outcome = await run_next_call(job.agent, job.case, client, session.workspace, self.draw(job),
                                                  observers)
                else:
                    outcome = await run_episode(job.agent, job.case, client, session.workspace,
                                                self.resolved.options.max_steps_per_turn, self.draw(job), observers,
                                                owner=self.source.owner)
            finally:
                await session.close()
        outcome.workspace_ms = workspace_ms
        return outcome

    async def run_sample(self, job: _Job) -> SampleRecord:
        started = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            try:
                outcome = await asyncio.wait_for(self._attempt(job), self.resolved.options.sample_timeout_s)
            except TimeoutError:
                outcome = SampleOutcome(
                    error_kind=ErrorKind.sample_timeout, error=f"no result within {self.resolved.options.sample_timeout_s:g} s"
                )
            except Exception as exc:  # a bug, a broken engine, a state the source cannot open: counted, never hidden
                kind = exc.kind if isinstance(exc, ToolUnavailable) else ErrorKind.harness_exception
                outcome = SampleOutcome(error_kind=kind, error=f"{type(exc).__name__}: {exc}")
            if outcome.error_kind in RETRY_KINDS and attempts == 1:
                continue
            return self._with_prompts(sample_record(job.key(self.suite), outcome, started, attempts, self.draw(job).seed),
                                      outcome.requests, job.agent)

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

        workers = [asyncio.create_task(worker()) for _ in range(max(1, self.resolved.options.concurrency or 1))]
        beat = asyncio.create_task(heartbeat())
        try:
            await asyncio.gather(*workers)
        finally:
            for w in [*workers, beat]:
                w.cancel()
        return finished

# -- the pipeline --------------------------------------------------------------------------------------


def _relative(path: Path) -> str:
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


def _open_samples(run: ResolvedRun, log: RunLog) -> set[str]:
    """The run directory made ready for appending samples: on resume its torn last line cut off (and with
    ``retry_errors`` the samples that ended in a ``model:*`` error moved to samples.retried.jsonl, to run
    again). Returns the ids of the samples already saved."""
    samples_path = run.run_dir / SAMPLES_FILE
    done: set[str] = set()
    if run.resumed is not None:
        try:
            saved = repair_samples(samples_path)
            retried = set_aside_errors(samples_path, "model:") if run.retry_errors else []
        except RunDirError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        if saved.torn_tail_at is not None:
            log(f"resume: cut off a torn last line of {samples_path} (its sample runs again)")
        if run.retry_errors:
            log(f"resume --retry-errors: {len(retried)} samples that ended in a model:* error run again (their "
                f"lines are kept in {RETRIED_FILE})")
        done = set(saved.samples) - set(retried)
    try:
        run.run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"--out {str(run.run_dir)!r}: cannot create the directory: {exc.strerror or exc}") from None
    return done


def _run_record(run: ResolvedRun, engine: RunEngine, inputs: RunInputs) -> RunRecord:
    """run.json as the run starts (a resumed run keeps its start time and notes this session's)."""
    suite = run.suite
    record = RunRecord(
        run_id=run.run_dir.name, options=run.options,
        suite=SuiteRef(name=suite.name, version=suite.spec.version, kind=suite.kind, path=_relative(suite.path)),
        bundle=_relative(run.agent.path), engine_note=engine.note, base_url=engine.base_url, model=engine.model_id,
        models={family: model for family, model in run.models.items()}, inputs=inputs,
        max_tokens_source=run.max_tokens_source, versions=versions(), machine=machine(),
        git_commit=git_commit(), started_at=utc_now(),
    )
    if run.resumed is not None:
        record = record.model_copy(update={"started_at": run.resumed.started_at,
                                           "resumed_at": [*run.resumed.resumed_at, utc_now()]})
    return record


@dataclass
class _Generated:
    """What the samples' part of a run left: run.json as written, and the samples of this session."""

    record: RunRecord
    total: int
    skipped: int
    finished: list[SampleRecord]
    run_s: float


async def _generate(run: ResolvedRun, engine: RunEngine, done: set[str], log: RunLog,
                    progress_factory: Callable[[int, int], Progress] | None,
                    observers: Sequence[ObserverFactory]) -> _Generated:
    """run.json written, the engine prepared (before the clock starts), the samples not yet saved run."""
    runner = Runner(run, engine, observers, log)
    jobs = runner.jobs()
    todo = [j for j in jobs if j.sample_id not in done]
    record = _run_record(run, engine, _inputs(run))
    write_run(run.run_dir, record)
    runner.prompts = PromptLog(run.run_dir)
    cases = len(jobs) // max(1, len(run.families) * len(run.strategies) * run.epochs)
    log(f"{len(jobs)} samples: {', '.join(run.families)} x {', '.join(run.strategies)} x {cases} cases x "
        f"{run.epochs} epoch(s)" + (f", {len(jobs) - len(todo)} already saved" if done else "")
        + f" -> {run.run_dir}")
    if todo:
        log(f"{engine.name}: loading (tokenizers, weights, servers) before the clock starts...")
        prepared = time.perf_counter()
        try:
            await runner.prepare()
            unenforced = await preflight(engine, runner.agents, todo[0].case, run.options.sample_timeout_s, log,
                                         run.options.allow_unenforced)
        except EngineError as exc:
            raise RunError(str(exc)) from None
        log(f"{engine.name}: ready in {time.perf_counter() - prepared:.1f} s")
        # What an engine knows only once it runs (a started server's version, command and model).
        record = record.model_copy(update={"engine_note": engine.note, "base_url": engine.base_url,
                                           "model": engine.model_id, "engine_details": engine.describe() or None,
                                           "server_constraints": server_constraints(runner.agents),
                                           "not_enforced": unenforced, "answers_audited": engine.audits_answers})
    record = record.model_copy(update={"setup": checked_identity(run, record, prepared=bool(todo))})
    write_run(run.run_dir, record)
    progress = progress_factory(len(jobs), len(jobs) - len(todo)) if progress_factory else None
    started = time.perf_counter()
    async with SampleWriter(run.run_dir / SAMPLES_FILE) as writer:
        finished = await runner.run(writer, todo, progress)
    return _Generated(record, len(jobs), len(jobs) - len(todo), finished, time.perf_counter() - started)


async def run_suite(
    suite_dir: Path,
    options: RunOptions,
    place: RunPlace | None = None,
    progress_factory: Callable[[int, int], Progress] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    open_engine: EngineOpener = open_engine,
    observers: Sequence[ObserverFactory] = (),
) -> RunOutcome:
    """Run the suite in ``suite_dir`` with ``options`` into a results directory (``place``), then score
    it: resolve, open the samples, generate, score (``place`` None: a new run under ``results/``).
    ``open_engine(options, context)`` sets the engine up (the registry's by default) and may restrict
    the families (the embedded engine has weights for some only). ``observers``: factories of the
    user's observers (``recorder``'s module doc), called with each sample attempt's key; what they
    return gets every kernel event of that attempt."""
    from harness.eval.score import score_samples

    started = time.perf_counter()
    run_log = RunLog(log)
    run, engine = await resolve_run(suite_dir, options, run_log, place or RunPlace(), open_engine)
    try:
        done = _open_samples(run, run_log)
    except BaseException:
        await engine.aclose()
        raise
    with run_log.to_file(run.run_dir / LOG_FILE):
        try:
            generated = await _generate(run, engine, done, run_log, progress_factory, observers)
        finally:
            await engine.aclose()
        finished = generated.finished
        harness_ms = [r.harness_ms for r in finished]
        details = engine.describe() or generated.record.engine_details  # final figures (e.g. requests per replica)
        record = generated.record.model_copy(update={
            "finished_at": utc_now(), "timing": _timing(generated.run_s, harness_ms), "engine_details": details})
        write_run(run.run_dir, record)
        summary = await score_samples(run.run_dir, record, run.suite, run.source)
    return RunOutcome(
        run_dir=run.run_dir, total=generated.total, skipped=generated.skipped, ran=len(finished),
        errors=sum(r.status == "error" for r in finished), wall_s=time.perf_counter() - started,
        harness_ms=harness_ms, error_kinds=dict(Counter(str(r.error_kind) for r in finished if r.status == "error")),
        summary=summary,
    )


def _inputs(run: ResolvedRun) -> RunInputs:
    """The run directory's copies of its suite and bundle (made once; a resumed run checks that the suite
    and bundle it is given are still what the copies hold)."""
    from harness.eval.data import SnapshotError, copy_inputs, digests

    previous = run.resumed.inputs if run.resumed is not None else None
    try:
        if previous is not None:
            suite_digest, bundle_digest = digests(run.suite)
            for what, now, then in (("suite", suite_digest, previous.suite_digest),
                                    ("bundle", bundle_digest, previous.bundle_digest)):
                if now != then:
                    raise RunError(f"{run.run_dir}: cannot resume: the {what} changed since the run started (digest "
                                   f"{now[:12]}, run.json records {then[:12]}); use another --out")
            return previous
        snapshot = copy_inputs(run.suite, run.run_dir)
    except SnapshotError as exc:
        raise RunError(str(exc)) from None
    return RunInputs(suite=snapshot.suite, suite_digest=snapshot.suite_digest, bundle=snapshot.bundle,
                     bundle_digest=snapshot.bundle_digest)


def _timing(run_s: float, harness_ms: list[float]) -> RunTiming:
    from harness.stats import rounded_percentile

    return RunTiming(
        samples_s=round(run_s, 3),
        samples=len(harness_ms),
        harness_ms_p50=rounded_percentile(harness_ms, 50),
        harness_ms_p99=rounded_percentile(harness_ms, 99),
        harness_ms_mean=round(sum(harness_ms) / len(harness_ms), 3) if harness_ms else None,
    )


__all__ = ["Progress", "RunOutcome", "Runner", "run_suite"]
