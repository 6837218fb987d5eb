"""What report.html shows when a sample is opened, written beside the page in ``report-data/`` and
loaded only then, so the page stays small however many samples the runs hold.

The samples are grouped by case (every run, family, strategy and epoch of ``CASES_PER_CHUNK`` cases in
one chunk), so a sample and the same case under the other strategies arrive together. A chunk is a
script, ``report-data/chunk-NNNN.js``, calling ``reportChunk(N, {...})``: the page loads it with a
``<script>`` element, which works from a file as from a server, with nothing fetched from elsewhere.

Per sample a chunk holds its scores, its transcript (raw output, parsed calls, tool results, timings
and the exact prompt each call sent, from prompts.jsonl), the gold calls with their tool outputs (run
in the sandbox with the run's own copy of the bundle's tools), and for a state failure the file-system
tree it left against the tree gold leaves, as a unified diff.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import difflib
import json
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from harness.eval.data import CallSpec, ChatMessage, EpisodeCase, NextCallCase, SingleTurnCase
from harness.eval.report.data import Run
from harness.eval.store import METRICS, CallRecord, SampleRecord, StepRecord
from harness.vocabulary import ErrorKind

DATA_DIR = "report-data"
CASES_PER_CHUNK = 8
STATE_FAILURES = frozenset({ErrorKind.state_tree_differs, ErrorKind.state_cwd_differs})
T = TypeVar("T")


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolResultView(_View):
    name: str
    """The tool that ran."""
    output: str
    """Its output as JSON text."""
    error_kind: str | None
    """``tool:reason`` when it failed."""
    duration_us: float | None
    """Host-side time of the call."""


class StepView(_View):
    """One model call as the page shows it."""

    turn: int | None
    """Episodes: the user turn it answered."""
    output: str | None
    """The raw answer."""
    calls: list[str]
    """The parsed calls, as ``name {arguments}``."""
    parse_errors: list[str]
    """``kind: message``."""
    tool_results: list[ToolResultView]
    """One per call."""
    latency_ms: float | None
    ttft_ms: float | None
    tokens: int | None
    """Tokens generated (usage, else what the engine counted)."""
    finish_reason: str | None
    """``stop``, ``length`` (cut by the token bound)..."""
    prompt: str | None
    """The id of the exact prompt sent (in the chunk's ``prompts``; None: the run kept no prompts)."""


class GoldView(_View):
    """A gold call and what it returns in the sandbox."""

    turn: int | None
    """Episodes: the user turn it belongs to."""
    call: str
    """``name {arguments}``."""
    output: str | None
    """Its tool output as JSON text (None: the bundle's tools could not run it here)."""


class CaseView(_View):
    """The prompt and the gold answer of a case, shared by its samples."""

    messages: list[str]
    """``role: text`` lines of the conversation (episodes: each user turn, numbered)."""
    gold: list[str]
    """The gold calls (episodes: per turn); alternatives marked."""
    gold_outputs: list[GoldView]
    """The gold calls (next-call: the expected one) run in the sandbox, in order."""


class SampleDetail(_View):
    """What the page shows of one opened sample beside its row."""

    scores: dict[str, tuple[float | None, str | None]]
    """metric -> (value, error kind)."""
    error: str | None
    """What ended the sample early, in words (with its kind)."""
    steps: list[StepView]
    diff: list[str]
    """A state failure: the unified diff of the gold tree (-) against the tree the sample left (+)."""
    diff_title: str | None
    """What the diff compares (which turn, the current folder)."""


class Chunk(_View):
    """One ``report-data`` file."""

    samples: dict[str, SampleDetail]
    """``<run index>/<sample id>`` -> its detail."""
    cases: dict[str, CaseView]
    """``<run index>/<case id>`` -> its prompt and gold."""
    prompts: dict[str, str]
    """Prompt id -> the exact text sent."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _call(call: CallRecord | CallSpec) -> str:
    return f"{call.name} {_json(call.arguments)}"


def _message(m: ChatMessage) -> str:
    calls = "; ".join(_call(c) for c in m.tool_calls)
    return f"{m.role}: " + " ".join(part for part in (m.content or "", calls) if part)


def tokens_of(step: StepRecord) -> int | None:
    if step.usage is not None:
        return step.usage.completion_tokens
    return step.stats.generated_tokens if step.stats is not None else None


def _step_view(step: StepRecord) -> StepView:
    return StepView(
        turn=step.turn, output=step.output, calls=[_call(c) for c in step.tool_calls],
        parse_errors=[f"{e.kind}: {e.message}" for e in step.parse_errors],
        tool_results=[ToolResultView(name=r.name, output=_json(r.output), error_kind=r.error_kind,
                                     duration_us=r.duration_us) for r in step.tool_results],
        latency_ms=step.latency_ms, ttft_ms=step.ttft_ms, tokens=tokens_of(step), finish_reason=step.finish_reason,
        prompt=step.prompt_id,
    )


def tree_lines(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """A file-system tree as sorted lines: ``path/`` for a folder, ``path = "content"`` for a file."""
    lines = []
    for name in sorted(tree):
        node, path = tree[name], f"{prefix}{name}"
        if isinstance(node, dict):
            lines.append(f"{path}/")
            lines.extend(tree_lines(node, f"{path}/"))
        else:
            lines.append(f"{path} = {json.dumps(node, ensure_ascii=False)}")
    return lines


def tree_diff(gold: Any, predicted: Any) -> list[str]:
    """Unified diff lines of two file-system states (gold -, the sample's +), the current folders too."""
    root = f"/{gold.root_name}/"
    lines = list(difflib.unified_diff(tree_lines(gold.tree, root), tree_lines(predicted.tree, root), "gold",
                                      "this sample", lineterm="", n=2))
    if tuple(gold.cwd) != tuple(predicted.cwd):
        lines += [f"- current folder: /{'/'.join(gold.cwd)}", f"+ current folder: /{'/'.join(predicted.cwd)}"]
    return lines


class CaseRunner:
    """Runs a case's gold calls and a sample's calls with the run's own tools (``SandboxStates``)."""

    def __init__(self, run: Run) -> None:
        from harness.bundles import load_tools
        from harness.eval.score import SandboxStates

        assert run.suite is not None
        _, tools = load_tools(run.suite.bundle_dir)
        self.states = SandboxStates(tools, echo_mode=run.suite.spec.echo_mode)

    async def _apply(self, state: Any, calls: Sequence[CallSpec | CallRecord]) -> tuple[Any, list[Any]]:
        outputs = []
        for call in calls:
            state, output = await self.states.apply(state, call.name, call.arguments)
            outputs.append(output)
        return state, outputs

    async def gold(self, case: NextCallCase | EpisodeCase | SingleTurnCase) -> list[GoldView]:
        if isinstance(case, SingleTurnCase):
            return []  # BFCL's single-turn tools are schemas: nothing runs them
        if isinstance(case, NextCallCase):
            start = await self.states.state_after_history(case)
            _, outputs = await self._apply(start, [case.expected])
            return [GoldView(turn=None, call=_call(case.expected), output=_json(outputs[0]))]
        views, state = [], self.states.initial(case)
        for turn, calls in enumerate(case.ground_truth):
            state, outputs = await self._apply(state, calls)
            views += [GoldView(turn=turn, call=_call(c), output=_json(o)) for c, o in zip(calls, outputs, strict=True)]
        return views

    async def diff(self, case: NextCallCase | EpisodeCase | SingleTurnCase,
                   sample: SampleRecord) -> tuple[list[str], str | None]:
        """The first tree where the sample and gold part ways (next-call: after the call; episodes: after
        the first user turn whose trees differ; single-turn: none, nothing executes)."""
        if isinstance(case, SingleTurnCase):
            return [], None
        if isinstance(case, NextCallCase):
            start = await self.states.state_after_history(case)
            predicted, _ = await self._apply(start, sample.steps[0].tool_calls if sample.steps else [])
            gold, _ = await self._apply(start, [case.expected])
            return tree_diff(gold, predicted), "after the call (gold -, this sample +)"
        predicted = gold = self.states.initial(case)
        for turn, calls in enumerate(case.ground_truth):
            made = [c for step in sample.steps if (step.turn or 0) == turn for c in step.tool_calls]
            predicted, _ = await self._apply(predicted, made)
            gold, _ = await self._apply(gold, calls)
            if predicted != gold:
                return tree_diff(gold, predicted), f"after user turn {turn} (gold -, this sample +)"
        return tree_diff(gold, predicted), "at the end (gold -, this sample +)"


def case_view(case: NextCallCase | EpisodeCase | SingleTurnCase, gold: list[GoldView]) -> CaseView:
    if isinstance(case, SingleTurnCase):  # BFCL's: the replayed answer; BFCL accepts every listed value
        calls = ["; ".join(_call(c) for c in case.expected) or "(no call: a plain answer)"]
        calls += [f"(BFCL accepts) {_json(a)}" for a in case.possible_answer] + [case.note] * bool(case.note)
        return CaseView(messages=[_message(m) for m in case.messages], gold=calls, gold_outputs=gold)
    if isinstance(case, NextCallCase):
        calls = [_call(case.expected), *(f"(also accepted) {_call(c)}" for c in case.expected_alternatives)]
        return CaseView(messages=[_message(m) for m in case.messages], gold=calls, gold_outputs=gold)
    messages = [f"[turn {i}] {_message(m)}" for i, turn in enumerate(case.turns) for m in turn]
    calls = [f"[turn {i}] " + ("; ".join(_call(c) for c in turn) or "(no call: a plain answer)")
             for i, turn in enumerate(case.ground_truth)]
    return CaseView(messages=messages, gold=calls, gold_outputs=gold)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end from sync code, also when an event loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _scores(run: Run) -> dict[str, dict[str, tuple[float | None, str | None]]]:
    scores: dict[str, dict[str, tuple[float | None, str | None]]] = {}
    for row in run.data.scores or ():
        if row.metric in METRICS:
            scores.setdefault(row.sample_id, {})[row.metric] = (row.value, row.error_kind)
    return scores


def _runner(run: Run) -> CaseRunner | None:
    from harness.agents import BundleError

    if run.suite is None:
        return None
    try:
        return CaseRunner(run)
    except (BundleError, OSError):
        return None  # the page then shows no gold outputs and no tree diffs for this run


async def _run_chunks(index: int, run: Run, chunk_of: dict[str, int], chunks: list[Chunk]) -> None:
    from harness.eval.store import read_prompts

    prompts, scores, runner = read_prompts(run.data.path), _scores(run), _runner(run)
    cases = {c.id: c for c in run.suite.cases} if run.suite is not None else {}
    for sample in run.samples:
        chunk, case = chunks[chunk_of[sample.case_id]], cases.get(sample.case_id)
        if case is not None and f"{index}/{case.id}" not in chunk.cases:
            gold = await runner.gold(case) if runner is not None else []
            chunk.cases[f"{index}/{case.id}"] = case_view(case, gold)
        mine = scores.get(sample.sample_id, {})
        diff: tuple[list[str], str | None] = ([], None)
        if runner is not None and case is not None and any(kind in STATE_FAILURES for _, kind in mine.values()):
            diff = await runner.diff(case, sample)
        chunk.samples[f"{index}/{sample.sample_id}"] = SampleDetail(
            scores=mine, error=f"{sample.error_kind}: {sample.error}" if sample.error else None,
            steps=[_step_view(s) for s in sample.steps], diff=diff[0], diff_title=diff[1])
        for step in sample.steps:
            if step.prompt_id and step.prompt_id in prompts:
                chunk.prompts[step.prompt_id] = prompts[step.prompt_id].text


def build_chunks(runs: Sequence[Run]) -> tuple[dict[str, int], list[Chunk]]:
    """Case id -> its chunk number, and the chunks (see the module doc)."""
    order = list(dict.fromkeys(s.case_id for run in runs for s in run.samples))
    chunk_of = {case: i // CASES_PER_CHUNK for i, case in enumerate(order)}
    chunks = [Chunk(samples={}, cases={}, prompts={}) for _ in range((len(order) + CASES_PER_CHUNK - 1) // CASES_PER_CHUNK)]

    async def fill() -> None:
        for index, run in enumerate(runs):
            await _run_chunks(index, run, chunk_of, chunks)

    run_sync(fill())
    return chunk_of, chunks


def chunk_file(number: int) -> str:
    """The chunk's path below the page's folder."""
    return f"{DATA_DIR}/chunk-{number:04d}.js"


def write_chunks(out: Path, chunks: Sequence[Chunk]) -> None:
    """``out/report-data/chunk-NNNN.js``, an older report's chunks removed first."""
    import shutil

    shutil.rmtree(out / DATA_DIR, ignore_errors=True)
    (out / DATA_DIR).mkdir(parents=True)
    for number, chunk in enumerate(chunks):
        (out / chunk_file(number)).write_text(f"reportChunk({number}, {chunk.model_dump_json()});\n", encoding="utf-8")


__all__ = [
    "CASES_PER_CHUNK",
    "DATA_DIR",
    "STATE_FAILURES",
    "CaseRunner",
    "CaseView",
    "Chunk",
    "GoldView",
    "SampleDetail",
    "StepView",
    "ToolResultView",
    "build_chunks",
    "case_view",
    "chunk_file",
    "run_sync",
    "tokens_of",
    "tree_diff",
    "tree_lines",
    "write_chunks",
]

