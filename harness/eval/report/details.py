"""What report.html shows when a sample is opened, written beside the page in ``report-data/`` and
loaded only then, so the page stays small however many samples the runs hold.

The samples are grouped by case (every run, family, strategy and epoch of ``CASES_PER_CHUNK`` cases in
one chunk), so a sample and the same case under the other strategies arrive together. A chunk is a
script, ``report-data/chunk-NNNN.js``, calling ``reportChunk(N, {...})``: the page loads it with a
``<script>`` element, which works from a file as from a server, with nothing fetched from elsewhere.

Per sample a chunk holds its scores, its transcript (raw output, parsed calls, tool results, timings
and the exact prompt each call sent, from prompts.jsonl), the gold calls with their tool outputs, and
for a state failure where its state parts from gold's (the file-system tree, or the instances of its
Python classes), as a unified diff. Those two come from details.jsonl, which scoring writes from the
calls it executed: nothing here runs a tool, so the page shows what the run's own tools answered, and
a run directory renders wherever it is. A run scored before details.jsonl existed renders without
them, and says so (``harness score RUN`` writes the file).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.eval.data import CallSpec, ChatMessage, EpisodeCase, NextCallCase, SingleTurnCase
from harness.eval.report.data import Run
from harness.eval.store import METRICS, CallRecord, CaseDetail, StateDifference, StepRecord

DATA_DIR = "report-data"
CASES_PER_CHUNK = 8
DETAILS_MISSING = ("no gold outputs or state diffs: this run was scored before scoring wrote details.jsonl "
                   "(harness score RUN_DIR writes it)")


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
    """A gold call and what the run's tools returned for it (details.jsonl)."""

    turn: int | None
    """Episodes: the user turn it belongs to."""
    call: str
    """``name {arguments}``."""
    output: str | None
    """Its tool output as JSON text."""


class CaseView(_View):
    """The prompt and the gold answer of a case, shared by its samples."""

    messages: list[str]
    """``role: text`` lines of the conversation (episodes: each user turn, numbered)."""
    gold: list[str]
    """The gold calls (episodes: per turn); alternatives marked."""
    gold_outputs: list[GoldView]
    """The gold calls (next-call: the expected one) with their outputs, in order."""


class SampleDetail(_View):
    """What the page shows of one opened sample beside its row."""

    scores: dict[str, tuple[float | None, str | None]]
    """metric -> (value, error kind)."""
    error: str | None
    """What ended the sample early, in words (with its kind)."""
    steps: list[StepView]
    diff: list[str]
    """A state failure: the unified diff of gold's state (-) against the state the sample left (+)."""
    diff_title: str | None
    """What the diff compares (the tree or the instances, after which turn)."""


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


def case_view(case: NextCallCase | EpisodeCase | SingleTurnCase, gold: list[GoldView]) -> CaseView:
    if isinstance(case, SingleTurnCase):  # the replayed answer; the case's benchmark accepts every listed value
        calls = ["; ".join(_call(c) for c in case.expected) or "(no call: a plain answer)"]
        calls += [f"({case.ACCEPTED_BY} accepts) {_json(a)}" for a in case.possible_answer] + [case.note] * bool(case.note)
        return CaseView(messages=[_message(m) for m in case.messages], gold=calls, gold_outputs=gold)
    if isinstance(case, NextCallCase):
        calls = [_call(case.expected), *(f"(also accepted) {_call(c)}" for c in case.expected_alternatives)]
        return CaseView(messages=[_message(m) for m in case.messages], gold=calls, gold_outputs=gold)
    messages = [f"[turn {i}] {_message(m)}" for i, turn in enumerate(case.turns) for m in turn]
    calls = [f"[turn {i}] " + ("; ".join(_call(c) for c in turn) or "(no call: a plain answer)")
             for i, turn in enumerate(case.ground_truth)]
    return CaseView(messages=messages, gold=calls, gold_outputs=gold)


def _scores(run: Run) -> dict[str, dict[str, tuple[float | None, str | None]]]:
    scores: dict[str, dict[str, tuple[float | None, str | None]]] = {}
    for row in run.data.scores or ():
        if row.metric in METRICS:
            scores.setdefault(row.sample_id, {})[row.metric] = (row.value, row.error_kind)
    return scores


def _gold_views(detail: CaseDetail | None) -> list[GoldView]:
    return [GoldView(turn=g.turn, call=_call(g.call), output=_json(g.output)) for g in detail.gold] if detail else []


def diff_title(difference: StateDifference) -> str:
    """What a state diff compares: ``File-system tree after user turn 1 (gold -, this sample +)``."""
    what = "File-system tree" if difference.state == "file_system" else "Python instances"
    when = "after the call" if difference.turn is None else f"after user turn {difference.turn}"
    return f"{what} {when} (gold -, this sample +)"


def _run_chunks(index: int, run: Run, chunk_of: dict[str, int], chunks: list[Chunk]) -> None:
    from harness.eval.store import read_prompts

    prompts, scores = read_prompts(run.data.path), _scores(run)
    cases = {c.id: c for c in run.suite.cases} if run.suite is not None else {}
    gold = run.details.cases if run.details is not None else {}
    differences = run.details.samples if run.details is not None else {}
    for sample in run.samples:
        chunk, case = chunks[chunk_of[sample.case_id]], cases.get(sample.case_id)
        key = f"{index}/{sample.case_id}"
        if key not in chunk.cases and (case is not None or sample.case_id in gold):
            views = _gold_views(gold.get(sample.case_id))
            chunk.cases[key] = case_view(case, views) if case else CaseView(
                messages=[], gold=[v.call for v in views], gold_outputs=views)  # the suite is gone: what scoring kept
        found = differences.get(sample.sample_id)
        chunk.samples[f"{index}/{sample.sample_id}"] = SampleDetail(
            scores=scores.get(sample.sample_id, {}), error=f"{sample.error_kind}: {sample.error}" if sample.error else None,
            steps=[_step_view(s) for s in sample.steps], diff=list(found.difference.lines) if found else [],
            diff_title=diff_title(found.difference) if found else None)
        for step in sample.steps:
            if step.prompt_id and step.prompt_id in prompts:
                chunk.prompts[step.prompt_id] = prompts[step.prompt_id].text


def build_chunks(runs: Sequence[Run]) -> tuple[dict[str, int], list[Chunk]]:
    """Case id -> its chunk number, and the chunks (see the module doc)."""
    order = list(dict.fromkeys(s.case_id for run in runs for s in run.samples))
    chunk_of = {case: i // CASES_PER_CHUNK for i, case in enumerate(order)}
    chunks = [Chunk(samples={}, cases={}, prompts={}) for _ in range((len(order) + CASES_PER_CHUNK - 1) // CASES_PER_CHUNK)]
    for index, run in enumerate(runs):
        _run_chunks(index, run, chunk_of, chunks)
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
    "DETAILS_MISSING",
    "CaseView",
    "Chunk",
    "GoldView",
    "SampleDetail",
    "StepView",
    "ToolResultView",
    "build_chunks",
    "case_view",
    "chunk_file",
    "diff_title",
    "tokens_of",
    "write_chunks",
]

