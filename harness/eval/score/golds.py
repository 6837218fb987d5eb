"""The gold side of the state checks, run once per case and shared by every sample of it (``Golds``), and
what details.jsonl keeps of what scoring saw (``harness.eval.store.details``): each case's gold calls
with their tool outputs, and where a failed sample's state parted from gold's.

Scoring runs the gold calls anyway to judge state, on the run's own tools: a next-call point's gold
calls after its history, an episode's ground truth turn by turn on ``.pym`` tools; the outputs it
compared are the ones kept, nothing runs again for the report. An episode of Python classes is judged
in the tool worker (BFCL's checker, or the harness's rules), which answers a verdict only: its ground
truth is run once per case in a session of the case's classes (``class_trace``: each turn's outputs
and the instances' snapshot after it), and a sample whose instances differ from gold's is run in
another session to find the first turn whose snapshot is not gold's.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from harness.agents import PythonClassSource, WorkerFailure
from harness.eval.data import Case, EpisodeCase, FsCase, NextCallCase
from harness.eval.score.verdicts import Call
from harness.eval.store import CallRecord, CaseDetail, GoldOutput, StateDifference
from harness.vocabulary import ErrorKind, bfcl_error_kind

STATE_DIFFERENCES = frozenset({
    ErrorKind.state_tree_differs, ErrorKind.state_cwd_differs, ErrorKind.state_instance_differs,
    bfcl_error_kind("multi_turn:instance_state_mismatch"),
})
"""The state failures whose sample gets a ``StateDifference``: the states compared were not equal (an
empty turn or a missing response shows in the sample's own steps)."""

Trace = list[tuple[list[Any], Any]]
"""Per user turn: the outputs of its calls, and the state after it."""
T = TypeVar("T")


class StateBackend(Protocol):
    """Executes calls on a file-system state (the sandbox does it; see ``harness.eval.score.sandbox_states``)."""

    def initial(self, case: FsCase) -> Any:
        """A fresh state: the case's tree and working directory."""
        ...

    async def apply(self, state: Any, name: str, arguments: Mapping[str, Any]) -> tuple[Any, Any]:
        """Run one call on ``state`` (left untouched); returns the new state and the call's output."""
        ...

    def difference(self, a: Any, b: Any, cwd: bool = True) -> str | None:
        """None when both states are equal, else ``state:tree_differs`` or (when ``cwd``) ``state:cwd_differs``."""
        ...

    def lines(self, state: Any) -> list[str]:
        """The state as text lines, for the diff details.jsonl keeps of a state failure."""
        ...


class Golds:
    """Per case, the states and outputs of its gold calls, each computed once (tools are deterministic)
    under the scorer's bound on concurrent calls (``limit``)."""

    def __init__(self, backend: StateBackend | None, limit: asyncio.Semaphore) -> None:
        self.backend = backend
        self.python: PythonClassSource | None = getattr(backend, "python", None)
        """The worker of Python-class tools (None: ``.pym`` tools, or no sandbox)."""
        self.limit = limit
        self._cache: dict[tuple[str, str], Any] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def apply_all(self, state: Any, calls: Iterable[Call]) -> tuple[Any, list[Any]]:
        """``calls`` run one after the other from ``state``: the state they leave and their outputs."""
        assert self.backend is not None
        outputs = []
        for call in calls:
            async with self.limit:
                state, out = await self.backend.apply(state, call.name, call.arguments)
            outputs.append(out)
        return state, outputs

    async def _once(self, case: Case, key: str, build: Callable[[], Awaitable[T]]) -> T:
        if (case.id, key) not in self._cache:
            async with self._locks.setdefault((case.id, key), asyncio.Lock()):
                if (case.id, key) not in self._cache:
                    self._cache[(case.id, key)] = await build()
        return self._cache[(case.id, key)]  # type: ignore[no-any-return]

    async def history(self, case: NextCallCase) -> Any:
        """The state a next-call point's history leaves."""
        assert self.backend is not None
        backend = self.backend

        async def build() -> Any:
            return (await self.apply_all(backend.initial(case), case.history_calls()))[0]

        return await self._once(case, "history", build)

    async def runs(self, case: NextCallCase) -> list[tuple[Any, list[Any]]]:
        """The state and output of each gold call (the expected one first) from the history's state."""
        async def build() -> list[tuple[Any, list[Any]]]:
            start = await self.history(case)
            return [await self.apply_all(start, [g]) for g in case.gold_calls()]

        return await self._once(case, "golds", build)

    async def trace(self, case: EpisodeCase) -> list[tuple[Any, list[Any]]]:
        """An episode's ground truth on ``.pym`` tools: per user turn, the state after it and its outputs."""
        assert self.backend is not None
        backend = self.backend

        async def build() -> list[tuple[Any, list[Any]]]:
            state, out = backend.initial(case), []
            for gold in case.ground_truth:
                state, outputs = await self.apply_all(state, gold)
                out.append((state, outputs))
            return out

        return await self._once(case, "trace", build)

    async def classes(self, case: EpisodeCase) -> Trace:
        """A Python-class episode's ground truth in a session of its own (``class_trace``). WorkerFailure
        when the session cannot be opened."""
        source = self.python
        if source is None:
            raise WorkerFailure(ErrorKind.tool_unavailable, "the bundle's tools are not Python classes")

        async def build() -> Trace:
            async with self.limit:
                return await class_trace(source, case, case.ground_truth)

        return await self._once(case, "classes", build)

    async def detail(self, case: Case) -> CaseDetail:
        """The case's gold calls with their outputs (details.jsonl): none for a single-turn case (nothing
        runs its tools), without a sandbox, or when the worker cannot open the case's classes."""
        gold: tuple[GoldOutput, ...] = ()
        if isinstance(case, NextCallCase) and self.backend is not None:
            gold = _outputs([[case.expected]], [(await self.runs(case))[0][1]], episode=False)
        elif isinstance(case, EpisodeCase) and case.involved_classes:
            try:
                gold = _outputs(case.ground_truth, [outs for outs, _ in await self.classes(case)], episode=True)
            except WorkerFailure:
                pass
        elif isinstance(case, EpisodeCase) and self.backend is not None:
            gold = _outputs(case.ground_truth, [outs for _, outs in await self.trace(case)], episode=True)
        return CaseDetail(case_id=case.id, gold=gold)


def _outputs(turns: Sequence[Sequence[Call]], outputs: Sequence[Sequence[Any]], episode: bool) -> tuple[GoldOutput, ...]:
    return tuple(
        GoldOutput(turn=turn if episode else None, call=CallRecord(name=call.name, arguments=dict(call.arguments)),
                   output=output)
        for turn, (calls, outs) in enumerate(zip(turns, outputs, strict=True))
        for call, output in zip(calls, outs, strict=True)
    )


def difference(state: Literal["file_system", "instances"], turn: int | None, gold: Sequence[str],
               predicted: Sequence[str]) -> StateDifference:
    """The unified diff of two states' lines (gold -, the sample +)."""
    lines = difflib.unified_diff(list(gold), list(predicted), "gold", "this sample", lineterm="", n=2)
    return StateDifference(state=state, turn=turn, lines=tuple(lines))


def snapshot_lines(snapshot: Any) -> list[str]:
    """The instances' public attributes as indented JSON lines (keys sorted), for a diff."""
    return json.dumps(snapshot, indent=1, sort_keys=True, ensure_ascii=False, default=repr).splitlines()


async def class_trace(source: PythonClassSource, case: EpisodeCase, turns: Sequence[Sequence[Call]]) -> Trace:
    """``turns`` run in a fresh session of the case's classes: each turn's outputs (a refused call:
    ``kind: message``) and the snapshot after it. WorkerFailure when the session cannot be opened or
    snapshotted."""
    session = await source.open(case.involved_classes, case.initial_config, long_context=case.long_context,
                                entry=case.id)
    try:
        trace: Trace = []
        for calls in turns:
            outputs = []
            for call in calls:
                output, kind, message = await session.call(call.name, call.arguments)
                outputs.append(output if kind is None else f"{kind}: {message}")
            trace.append((outputs, await session.snapshot()))
        return trace
    finally:
        await session.close()


def first_class_difference(gold: Trace, model: Trace) -> StateDifference | None:
    """The instances after the first user turn whose snapshots differ (None: every turn's are equal)."""
    for turn, ((_, gold_state), (_, model_state)) in enumerate(zip(gold, model, strict=False)):
        if gold_state != model_state:
            return difference("instances", turn, snapshot_lines(gold_state), snapshot_lines(model_state))
    return None


__all__ = [
    "STATE_DIFFERENCES",
    "Golds",
    "StateBackend",
    "Trace",
    "class_trace",
    "difference",
    "first_class_difference",
    "snapshot_lines",
]
