"""Running one sample: a case on one family x strategy, through the real kernel, into a sample record.

The agent of a sample is the bundle's ``Agent`` for that family and strategy (``harness.bundles``);
each sample gets its own kernel (``Agent.make_kernel``) on the client the engine gives it, and its
steps are recorded from the kernel's events (``recorder.SampleRecorder``), which the user's observers
receive too.
Generation only: nothing here scores. A next-call sample is one ``kernel.step`` on the case's history,
its calls executed in the sandbox on the state the history leaves (so the transcript holds real tool
results and timings). An episode is one ``kernel.run`` per user turn, tools executed in the sandbox on a
workspace built from the case's initial file system, at most ``max_steps`` model calls a turn (an
episode whose model still calls tools at the bound ends there, as the multi-turn benchmark's force quit; see
``run_episode``). Scoring later re-executes calls from the saved record on its own copies, so it never
needs the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from harness.agents import (
    Agent,
    AgentKernel,
    CompletionRequest,
    CompletionResponse,
    ConstraintError,
    LLMClient,
    Message,
    ModelCallError,
    Observer,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolSchema,
)
from harness.engines import RunEngine
from harness.eval.data import Case, EchoMode, EpisodeCase, FsCase, NextCallCase, SingleTurnCase, session_setup
from harness.eval.run.recorder import SampleRecorder
from harness.eval.store import SampleKey, SampleRecord, StepRecord
from harness.grammar import BuildBound, set_build_bound
from harness.grammar.formats import ToolRequest, server_constraint
from harness.tools import ToolSource
from harness.vocabulary import ErrorKind, Strategy


def gold_answers(
    case: NextCallCase | EpisodeCase | SingleTurnCase, parallel_calls: bool = False
) -> list[list[ToolCall]]:
    """What the oracle answers, request by request: a next-call case's expected call; a single-turn
    case's expected calls in one answer (none: a plain answer); an episode's ground-truth calls, then a
    closing message per turn. With ``parallel_calls`` (the agent's grammar allows several calls per
    answer) a turn's calls come in one answer, as the imported benchmark lists them; else one answer each."""
    if isinstance(case, NextCallCase):
        return [[case.expected.to_tool_call(f"{case.id}-gold")]]
    if isinstance(case, SingleTurnCase):
        return [[c.to_tool_call(f"{case.id}-gold-{i}") for i, c in enumerate(case.expected)]]
    answers: list[list[ToolCall]] = []
    for t, turn in enumerate(case.ground_truth):
        calls = [c.to_tool_call(f"{case.id}-t{t}-{i}") for i, c in enumerate(turn)]
        if parallel_calls and calls:
            answers.append(calls)
        else:
            answers.extend([c] for c in calls)
        answers.append([])
    return answers


class Draw(NamedTuple):
    """How a sample's requests choose tokens: the run's temperature and top_p, the sample's seed."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None


GREEDY = Draw()


@dataclass
class SampleOutcome:
    """What one attempt produced: the steps, and the error that ended it (if any)."""

    steps: list[StepRecord] = field(default_factory=list)
    error_kind: str | None = None
    error: str | None = None
    workspace_ms: float = 0.0
    """Time spent building the sample's workspace (a next-call point replays its history in the
    sandbox, once per case): sandbox time, not harness time."""
    max_steps_turns: list[int] = field(default_factory=list)
    """The episode's user turn whose model kept calling tools past the step bound (a force quit:
    the episode ended there)."""
    requests: list[CompletionRequest] = field(default_factory=list)
    """The request of each step, in step order (their prompts are kept in prompts.jsonl)."""


def _kernel(agent: Agent, client: LLMClient, draw: Draw, observers: Sequence[Observer],
            episode: bool) -> tuple[AgentKernel, SampleRecorder]:
    """The sample's kernel, its events going to the sample's recorder and the user's observers."""
    recorder = SampleRecorder(episode=episode)
    return agent.make_kernel(client, [recorder, *observers], **draw._asdict()), recorder


def _check_recorded(kernel: AgentKernel) -> None:
    """The recorder saw every event (an observer's failure is reported, not raised, by the kernel: a
    failure of the runner's own would lose steps without a word)."""
    lost = [e for e in kernel.observer_errors if e.observer == SampleRecorder.__name__]
    if lost:
        raise RuntimeError(f"the sample's recorder failed on {lost[0].event_type}: {lost[0].error}")


async def run_next_call(
    agent: Agent, case: NextCallCase, client: LLMClient, workspace: Any, draw: Draw = GREEDY,
    observers: Sequence[Observer] = (),
) -> SampleOutcome:
    """One step on the case's history; the calls run on ``workspace`` (the state after the history)."""
    if (refused := refused_gold(agent, agent.tools, case)) is not None:
        return refused
    return await _one_step(agent, case.history(), agent.tools, client, workspace, draw, observers)


def refused_gold(agent: Agent, tools: Sequence[Any], case: NextCallCase | EpisodeCase | SingleTurnCase
                 ) -> SampleOutcome | None:
    """``constraint:refused`` for a case whose gold calls need a tool the strategy refused (named, with
    why); None when the case can run (the other tools stay constrained, a refused one is left out)."""
    if not agent.constraint.constrained or not tools:
        return None
    try:
        artifact = agent.adapter.build_payload([t.schema for t in tools], agent.constraint).artifact
    except ConstraintError as exc:
        return SampleOutcome(error_kind=ErrorKind.constraint_refused, error=str(exc))
    refused = dict(artifact.refused) if artifact is not None else {}
    needed = sorted({c.name for answer in gold_answers(case) for c in answer if c.name in refused})
    if not needed:
        return None
    return SampleOutcome(error_kind=ErrorKind.constraint_refused, error="; ".join(refused[n] for n in needed))


async def _one_step(
    agent: Agent, messages: Sequence[Message], tools: Sequence[Tool], client: LLMClient, workspace: Any, draw: Draw,
    observers: Sequence[Observer],
) -> SampleOutcome:
    kernel, recorder = _kernel(agent, client, draw, observers, episode=False)
    outcome = SampleOutcome(steps=recorder.steps, requests=recorder.requests)
    try:
        await kernel.step(agent.opening(messages), tools, workspace=workspace)
    except ModelCallError as exc:
        outcome.error_kind, outcome.error = exc.kind, exc.detail  # the kind is its own field
        return outcome
    _check_recorded(kernel)
    _note_rejection(outcome, recorder.responses)
    return outcome


@dataclass(frozen=True, slots=True)
class SchemaOnlyTool:
    """A tool the model may call that nothing executes: single-turn cases judge the call,
    not its result (their functions have no implementation)."""

    schema: ToolSchema

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        return ToolResult(call_id=call.id, name=call.name, output=NOT_EXECUTED)


NOT_EXECUTED = "(not executed: this suite judges the call, not its result)"


def schema_only_tools(case: SingleTurnCase) -> list[SchemaOnlyTool]:
    """The tools a single-turn case brings, offered as they are and never run."""
    return [SchemaOnlyTool(s) for s in case.tool_schemas()]
EMPTY_LANGUAGE = ErrorKind.constraint_empty_language


async def run_single_turn(agent: Agent, case: SingleTurnCase, client: LLMClient, draw: Draw = GREEDY,
                          observers: Sequence[Observer] = ()) -> SampleOutcome:
    """One step on the case's messages with the case's own tools (nothing is executed). An entry with no
    function under a grammar that forces a call has no valid answer at all (``constraint:empty_language``);
    an entry whose tools use a keyword the strategy does not enforce gets no grammar
    (``constraint:refused``, naming the keyword): counted, never run unconstrained."""
    constraint = agent.constraint
    if not case.tool_schemas() and constraint.constrained and not constraint.allow_text_answer:
        return SampleOutcome(error_kind=EMPTY_LANGUAGE, error="no function to call and no plain answer allowed")
    try:
        tools = schema_only_tools(case)
        if (refused := refused_gold(agent, tools, case)) is not None:
            return refused
        return await _one_step(agent, case.history(), tools, client, None, draw, observers)
    except ConstraintError as exc:
        return SampleOutcome(error_kind=ErrorKind.constraint_refused, error=str(exc))


Owner = Callable[[Tool], str | None]
"""The class a tool belongs to (``ToolSource.owner``)."""


def NO_OWNER(_tool: Tool) -> str | None:
    return None


def episode_tools(case: EpisodeCase, tools: Sequence[Tool], turn: int, owner: Owner = NO_OWNER) -> list[Tool]:
    """The tools user turn ``turn`` offers: those of the case's classes (``owner``: a tool's class, as
    the tool source says; tools of no class when the case names none; a later class wins a name two
    classes share), neither excluded nor held out."""
    order = {name: i for i, name in enumerate(case.involved_classes)}
    mine = [t for t in tools if case.uses(owner(t))]
    by_name = {t.schema.name: t for t in sorted(mine, key=lambda t: order.get(owner(t) or "", 0))}
    offered = set(case.offered(by_name, turn))
    return [t for name, t in by_name.items() if name in offered]


async def warm_tools(source: ToolSource, case: FsCase, echo_mode: EchoMode, sessions: int) -> None:
    """A call of a tool that takes no arguments per session, each on the case's starting state: a
    sandbox starts its worker processes on first use, before the clock starts. Only where no tool
    belongs to a class (a session of classes loads them: a broken class is a sample's error, never the run's)."""
    no_args = [t.schema.name for t in source.tools if not t.schema.required]
    if not no_args or any(source.owner(t) for t in source.tools):
        return
    setup = replace(session_setup(case, echo_mode), history=())
    opened = [await source.open(setup) for _ in range(sessions)]
    try:
        await asyncio.gather(*(session.call(no_args[0], {}) for session in opened))
    finally:
        for session in opened:
            await session.close()



async def warm_run(engine: RunEngine, families: list[str], source: ToolSource, agents: Sequence[Agent],
                   case: Case | None, echo_mode: EchoMode, sessions: int, sample_timeout_s: float) -> None:
    """A run's warm-up before its clock starts. The engine's (tokenizers, servers) runs in a thread, so
    that Ctrl-C (asyncio cancels the run's task) ends a run still waiting for a server to start.
    Meanwhile, what needs no engine, which a server's start (tens of seconds of imports, mostly on one
    core) leaves room for and the first samples would pay: the tool source's workers (``warm_tools``),
    each agent's payload and, where the engine walks answers through the harness's constraints, each
    lane's constraint compiled (its tokenizer and compiler loaded)."""
    ready = asyncio.ensure_future(asyncio.to_thread(engine.prepare, families))
    try:
        if isinstance(case, NextCallCase | EpisodeCase):  # single-turn cases run no tool
            await warm_tools(source, case, echo_mode, sessions)
        warm_payloads(agents, sample_timeout_s)
        for agent in agents:
            try:
                payload = agent.adapter.build_payload([t.schema for t in agent.tools], agent.constraint)
            except ConstraintError:  # a lane whose every tool is refused: its samples say so
                continue
            if engine.audits_answers and payload.artifact is not None and payload.server_built is None:
                from harness.grammar import compile_artifact

                with contextlib.suppress(ConstraintError):  # the lane's samples report it, each as its error
                    await asyncio.to_thread(compile_artifact, payload.artifact, agent.family, keep=True)
    except BaseException:  # a failed warm-up stops waiting for the engine (the run's aclose stops its servers)
        ready.cancel()
        raise
    await ready


async def run_episode(
    agent: Agent, case: EpisodeCase, client: LLMClient, workspace: Any, max_steps: int | None = None,
    draw: Draw = GREEDY, observers: Sequence[Observer] = (), owner: Owner = NO_OWNER,
) -> SampleOutcome:
    """``kernel.run`` per user turn on one workspace; every step of every turn is recorded.

    Each turn offers the tools the case offers in it (``EpisodeCase.offered``; ``owner``: each tool's
    class, as the tool source says). A turn allows at most
    ``max_steps`` model calls (default: the bundle's ``kernel.max_steps``), the last of which should
    end the turn with a plain answer. When that last one calls tools too, the episode ends there
    (a force quit, scored ``state:force_terminated``). The multi-turn benchmark allows 20 responses with
    calls and one more to answer, which is ``max_steps`` 21 in its shipped bundle."""
    if (refused := refused_gold(agent, agent.tools, case)) is not None:
        return refused
    kernel, recorder = _kernel(agent, client, draw, observers, episode=True)
    history: list[Message] = agent.opening()
    bound = max_steps or agent.config.kernel.max_steps
    outcome = SampleOutcome(steps=recorder.steps, requests=recorder.requests)
    for index, user_messages in enumerate(case.turns):
        tools = episode_tools(case, agent.tools, index, owner)
        history.extend(Message(role=m.role, content=m.content) for m in user_messages)
        seen = len(recorder.responses)
        try:
            result = await kernel.run(history, tools, max_steps=bound, workspace=workspace)
        except ModelCallError as exc:
            outcome.error_kind, outcome.error = exc.kind, exc.detail  # the kind is its own field
            return outcome
        _check_recorded(kernel)
        if _note_rejection(outcome, recorder.responses[seen:]):
            return outcome
        if result.termination_reason == "max_steps":
            outcome.max_steps_turns.append(index)
            return outcome
        history = list(result.history)
    return outcome


def _note_rejection(outcome: SampleOutcome, responses: Sequence[CompletionResponse]) -> bool:
    for response in responses:
        if response.stats is not None and response.stats.grammar_error:
            outcome.error_kind = response.stats.grammar_error
            why = response.stats.grammar_reason if response.stats.grammar_error == ErrorKind.constraint_not_enforced \
                else "the grammar forbade a gold token"
            outcome.error = f"{why}; emitted so far: {response.content!r}"
            return True
    return False


def sample_record(
    key: SampleKey, outcome: SampleOutcome, started: float, attempts: int = 1, seed: int | None = None
) -> SampleRecord:
    """The samples.jsonl line: ids, status, steps, and where the time went."""
    duration_ms = (time.perf_counter() - started) * 1000.0
    model_ms = sum(step.latency_ms or 0.0 for step in outcome.steps)
    tool_ms = sum((r.duration_us or 0.0) / 1000.0 for step in outcome.steps for r in step.tool_results)
    return SampleRecord(
        **key.model_dump(),
        server_constraint=server_label(key.family, key.strategy, outcome.requests),
        status="error" if outcome.error_kind else "ok",
        error_kind=outcome.error_kind,
        error=outcome.error,
        steps=tuple(outcome.steps),
        attempts=attempts,
        max_steps_turns=tuple(outcome.max_steps_turns),
        duration_ms=round(duration_ms, 3),
        workspace_ms=round(outcome.workspace_ms, 3),
        harness_ms=round(max(0.0, duration_ms - model_ms - tool_ms - outcome.workspace_ms), 3),
        seed=seed,
    )


__all__ = [
    "EMPTY_LANGUAGE",
    "GREEDY",
    "NOT_EXECUTED",
    "Draw",
    "SampleOutcome",
    "SchemaOnlyTool",
    "episode_tools",
    "gold_answers",
    "refused_gold",
    "run_episode",
    "run_next_call",
    "run_single_turn",
    "sample_record",
    "schema_only_tools",
    "server_constraints",
    "server_label",
    "warm_run",
    "warm_tools",
]


def server_label(family: str, strategy: Strategy, requests: Sequence[CompletionRequest]) -> str | None:
    """What vLLM builds for a ``required``/``strict`` sample's first request (None otherwise)."""
    if not strategy.server_built or not requests:
        return None
    first = requests[0]
    fields = ToolRequest(first.tool_choice, first.strict_tools, first.parallel_tool_calls)
    try:
        return server_constraint(family, first.tools, fields).label
    except ConstraintError:
        return None


def warm_payloads(agents: Sequence[Agent], sample_timeout_s: float) -> None:
    """Build each agent's payload before the clock starts (a lane whose every tool is refused is left to
    its samples, each ``constraint:refused``), with grammar builds bounded to a sample's time at most
    (``harness.grammar.bounded``: a big grammar compiles first in a child)."""
    # under the sample's own clock, so a build past it is the build's refusal, not a sample timeout
    set_build_bound(replace(BuildBound(), timeout_s=min(BuildBound().timeout_s, 0.8 * sample_timeout_s)))
    for agent in agents:
        with contextlib.suppress(ConstraintError):
            agent.adapter.build_payload([t.schema for t in agent.tools], agent.constraint)


def server_constraints(agents: Sequence[Agent]) -> dict[str, str] | None:
    """run.json's ``server_constraints``: per ``family/strategy`` lane of vLLM's own strategies, what
    vLLM builds for the run's tools (None when the run has none of them)."""
    out = {}
    for agent in agents:
        if agent.constraint.strategy.server_built:
            try:
                payload = agent.adapter.build_payload([t.schema for t in agent.tools], agent.constraint)
            except ConstraintError:  # its samples are constraint:refused, each naming why
                out[f"{agent.family}/{agent.constraint.strategy}"] = "refused"
                continue
            out[f"{agent.family}/{agent.constraint.strategy}"] = payload.server_built or "none"
    return out or None
