"""The gold side of the state checks, run once per case and shared by every sample of it (``Golds``), and
what details.jsonl keeps of what scoring saw (``harness.eval.store.details``): each case's gold calls
with their tool outputs, and where a failed sample's state parted from gold's.

Everything runs on the run's own tool source (``harness.tools.ToolSource``): a session per run of
calls, opened from the case (``session_setup``), its state snapshotted after each turn and compared by
the source's own verdict. A next-call point's gold calls run after its history, an episode's ground
truth turn by turn; the outputs compared are the ones kept, nothing runs again for the report.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.agents import ToolResult
from harness.eval.data import Case, EchoMode, EpisodeCase, FsCase, NextCallCase, session_setup
from harness.eval.score.verdicts import Call
from harness.eval.store import CallRecord, CaseDetail, GoldOutput, StateDifference
from harness.tools import StateKind, ToolSource, ToolUnavailable
from harness.vocabulary import BENCHMARK_STATE_DIFFERENCES, ErrorKind

STATE_DIFFERENCES = frozenset({
    ErrorKind.state_tree_differs, ErrorKind.state_cwd_differs, ErrorKind.state_instance_differs,
    *BENCHMARK_STATE_DIFFERENCES,
})
"""The state failures whose sample gets a ``StateDifference``: the states compared were not equal (an
empty turn or a missing response shows in the sample's own steps)."""

# A bound the worker enforced, or a worker that died, says how this machine ran the call (which bound
# was hit first, an exit status), not what the tool answered: two runs of the same call may word it
# differently (one allocation loop ends out of memory on a quiet machine, past the wall clock on a busy
# one). Such results are compared by their kind alone.
_KIND_ONLY = frozenset({ErrorKind.tool_limit, ErrorKind.tool_internal_error})
T = TypeVar("T")


def shown(result: ToolResult) -> Any:
    """What a call answered, as details.jsonl keeps it: its output, or ``kind: message`` for a refusal."""
    return result.output if not result.is_error else f"{result.error_kind}: {result.output}"


def compared(result: ToolResult) -> Any:
    """What a call answered, as the state checks compare it (a bound hit or a dead worker: its kind alone)."""
    return str(result.error_kind) if result.is_error and result.error_kind in _KIND_ONLY else shown(result)


@dataclass(frozen=True, slots=True)
class TurnRun:
    """One turn's calls run in a session: their results and the state after them."""

    results: tuple[ToolResult, ...]
    snapshot: Any


Trace = list[TurnRun]


async def run_turns(source: ToolSource, case: FsCase, turns: Sequence[Sequence[Call]], limit: asyncio.Semaphore,
                    echo_mode: EchoMode = "overwrite") -> Trace:
    """``turns`` run one after the other in a fresh session of the case (a next-call point's history
    replayed first): each turn's results and the snapshot after it. ToolUnavailable when the session
    cannot be opened."""
    session = await source.open(session_setup(case, echo_mode))
    try:
        trace: Trace = []
        for calls in turns:
            results = []
            for call in calls:
                async with limit:
                    results.append(await session.call(call.name, call.arguments))
            trace.append(TurnRun(tuple(results), await session.snapshot()))
        return trace
    finally:
        await session.close()


class Golds:
    """Per case, the states and outputs of its gold calls, each computed once (tools are deterministic)
    under the scorer's bound on concurrent calls (``limit``)."""

    def __init__(self, source: ToolSource | None, limit: asyncio.Semaphore, echo_mode: EchoMode = "overwrite") -> None:
        self.source = source
        self.limit = limit
        self.echo_mode: EchoMode = echo_mode
        self._cache: dict[tuple[str, str], Any] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def run(self, case: FsCase, turns: Sequence[Sequence[Call]]) -> Trace:
        """``turns`` run on the case's state (``run_turns``)."""
        assert self.source is not None
        return await run_turns(self.source, case, turns, self.limit, self.echo_mode)

    async def _once(self, case: Case, key: str, build: Callable[[], Awaitable[T]]) -> T:
        if (case.id, key) not in self._cache:
            async with self._locks.setdefault((case.id, key), asyncio.Lock()):
                if (case.id, key) not in self._cache:
                    self._cache[(case.id, key)] = await build()
        return self._cache[(case.id, key)]  # type: ignore[no-any-return]

    async def runs(self, case: NextCallCase) -> list[TurnRun]:
        """Each gold call (the expected one first) run after the history: its result and the state after."""
        async def build() -> list[TurnRun]:
            return [(await self.run(case, [[g]]))[0] for g in case.gold_calls()]

        return await self._once(case, "golds", build)

    async def trace(self, case: EpisodeCase) -> Trace:
        """An episode's ground truth: per user turn, its results and the state after it."""
        async def build() -> Trace:
            return await self.run(case, case.ground_truth)

        return await self._once(case, "trace", build)

    async def detail(self, case: Case) -> CaseDetail:
        """The case's gold calls with their outputs (details.jsonl): none for a single-turn case (nothing
        runs its tools), without a tool source, or when the source cannot open the case's state."""
        gold: tuple[GoldOutput, ...] = ()
        try:
            if isinstance(case, NextCallCase) and self.source is not None:
                gold = _outputs([[case.expected]], [(await self.runs(case))[0]], episode=False)
            elif isinstance(case, EpisodeCase) and self.source is not None:
                gold = _outputs(case.ground_truth, await self.trace(case), episode=True)
        except ToolUnavailable:
            pass
        return CaseDetail(case_id=case.id, gold=gold)


def _outputs(turns: Sequence[Sequence[Call]], runs: Sequence[TurnRun], episode: bool) -> tuple[GoldOutput, ...]:
    return tuple(
        GoldOutput(turn=turn if episode else None, call=CallRecord(name=call.name, arguments=dict(call.arguments)),
                   output=shown(result))
        for turn, (calls, run) in enumerate(zip(turns, runs, strict=True))
        for call, result in zip(calls, run.results, strict=True)
    )


def difference(state: StateKind, turn: int | None, gold: Sequence[str], predicted: Sequence[str]) -> StateDifference:
    """The unified diff of two states' lines (gold -, the sample +)."""
    lines = difflib.unified_diff(list(gold), list(predicted), "gold", "this sample", lineterm="", n=2)
    return StateDifference(state=state, turn=turn, lines=tuple(lines))


def state_difference(source: ToolSource, turn: int | None, gold: Any, model: Any) -> StateDifference:
    """Where two snapshots differ, as details.jsonl keeps it."""
    return difference(source.state_kind, turn, source.lines(gold), source.lines(model))


def first_difference(source: ToolSource, gold: Iterable[TurnRun], model: Iterable[TurnRun]) -> StateDifference | None:
    """The state after the first user turn whose snapshots differ (None: every turn's are the same)."""
    for turn, (gold_run, model_run) in enumerate(zip(gold, model, strict=False)):
        if source.difference(gold_run.snapshot, model_run.snapshot):
            return state_difference(source, turn, gold_run.snapshot, model_run.snapshot)
    return None


__all__ = [
    "STATE_DIFFERENCES",
    "Golds",
    "Trace",
    "TurnRun",
    "compared",
    "difference",
    "first_difference",
    "run_turns",
    "shown",
    "state_difference",
]
