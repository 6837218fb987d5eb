"""report.html: one self-contained page a reader can drill into, written beside report.md.

Everything is inline, so the page needs no network when viewed: the figures as PNG data URIs, the
style and a small hand-written script from ``harness/templates/report/``, and the data as JSON in a
``<script type="application/json">`` element (``<``, ``>`` and ``&`` escaped, so no text of a sample
can end it). The page renders the report's tables (``tables.Report``, as report.md does): per run,
the engine and its settings, the best strategy per family, the summary table with intervals,
failures by error kind, and the figures; then every sample with
its prompt (the bundle's system prompt and the case's messages), raw output per model call, parsed
calls, parse errors, tool results, timings, gold answer and scores, filterable by run, family,
strategy, error kind and pass/fail. The template is rendered by jinja2 with autoescaping.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness import __version__
from harness.eval.data.cases import CallSpec, ChatMessage, EpisodeCase, NextCallCase, SingleTurnCase
from harness.eval.report.data import ACCURACY, Run
from harness.eval.report.figures import Figure
from harness.eval.report.tables import FAILURE_HEADERS, OVERHEAD_HEADERS, Report
from harness.eval.store.records import METRICS, CallRecord, SampleRecord, StepRecord

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "report"


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


class SampleView(_View):
    """One sample: its key, its verdicts and its transcript."""

    run: int
    """Index into the page's runs."""
    id: str
    case: str
    family: str
    strategy: str
    epoch: int
    status: str
    error: str | None
    """What ended the sample early, in words (with its kind)."""
    passed: bool | None
    """Every applicable accuracy metric is 1 (None: none applies)."""
    kinds: list[str]
    """Every error kind of the sample (its own and its scores')."""
    scores: dict[str, tuple[float | None, str | None]]
    """metric -> (value, error kind)."""
    latency_ms: float | None
    """Sum of its model calls' latencies."""
    tokens: int | None
    """Tokens generated over its model calls."""
    steps: list[StepView]


class CaseView(_View):
    """The prompt and the gold answer of a case, shared by its samples."""

    messages: list[str]
    """``role: text`` lines of the conversation (episodes: each user turn, numbered)."""
    gold: list[str]
    """The gold calls (episodes: per turn); alternatives marked."""


class RunView(_View):
    label: str
    engine: str
    system_prompt: str | None
    """The bundle's system prompt, when the bundle could be read."""


class PageData(_View):
    """Everything the page's script works on."""

    runs: list[RunView]
    samples: list[SampleView]
    cases: dict[str, CaseView]
    """``<run index>/<case id>`` -> its prompt and gold."""
    families: list[str]
    strategies: list[str]
    kinds: list[str]
    """Every error kind present, for the filter."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _call(call: CallRecord | CallSpec) -> str:
    return f"{call.name} {_json(call.arguments)}"


def _message(m: ChatMessage) -> str:
    calls = "; ".join(_call(c) for c in m.tool_calls)
    return f"{m.role}: " + " ".join(part for part in (m.content or "", calls) if part)


def _case_view(case: NextCallCase | EpisodeCase | SingleTurnCase) -> CaseView:
    if isinstance(case, SingleTurnCase):  # BFCL's: the replayed answer; BFCL accepts every listed value
        gold = ["; ".join(_call(c) for c in case.expected) or "(no call: a plain answer)"]
        gold += [f"(BFCL accepts) {_json(a)}" for a in case.possible_answer] + [case.note] * bool(case.note)
        return CaseView(messages=[_message(m) for m in case.messages], gold=gold)
    if isinstance(case, NextCallCase):
        gold = [_call(case.expected), *(f"(also accepted) {_call(c)}" for c in case.expected_alternatives)]
        return CaseView(messages=[_message(m) for m in case.messages], gold=gold)
    messages = [f"[turn {i}] {_message(m)}" for i, turn in enumerate(case.turns) for m in turn]
    gold = [f"[turn {i}] " + ("; ".join(_call(c) for c in calls) or "(no call: a plain answer)")
            for i, calls in enumerate(case.ground_truth)]
    return CaseView(messages=messages, gold=gold)


def _tokens(step: StepRecord) -> int | None:
    if step.usage is not None:
        return step.usage.completion_tokens
    return step.stats.generated_tokens if step.stats is not None else None


def _step_view(step: StepRecord) -> StepView:
    return StepView(
        turn=step.turn, output=step.output, calls=[_call(c) for c in step.tool_calls],
        parse_errors=[f"{e.kind}: {e.message}" for e in step.parse_errors],
        tool_results=[ToolResultView(name=r.name, output=_json(r.output), error_kind=r.error_kind,
                                     duration_us=r.duration_us) for r in step.tool_results],
        latency_ms=step.latency_ms, ttft_ms=step.ttft_ms, tokens=_tokens(step), finish_reason=step.finish_reason,
    )


def _sample_view(index: int, sample: SampleRecord, scores: dict[str, tuple[float | None, str | None]]) -> SampleView:
    applicable = [scores[m][0] for m in ACCURACY if m in scores and scores[m][0] is not None]
    kinds = {kind for _, kind in scores.values() if kind}
    if sample.error_kind:
        kinds.add(sample.error_kind)
    latencies = [s.latency_ms for s in sample.steps if s.latency_ms is not None]
    tokens = [t for t in (_tokens(s) for s in sample.steps) if t is not None]
    return SampleView(
        run=index, id=sample.sample_id, case=sample.case_id, family=sample.family, strategy=sample.strategy,
        epoch=sample.epoch, status=sample.status, error=sample.error, kinds=sorted(kinds), scores=scores,
        passed=all(v == 1.0 for v in applicable) if applicable else None,
        latency_ms=round(sum(latencies), 3) if latencies else None, tokens=sum(tokens) if tokens else None,
        steps=[_step_view(s) for s in sample.steps],
    )


def _system_prompt(run: Run) -> str | None:
    from harness.agents.bundle import BundleError, bundle_file
    from harness.bundles import load_bundle

    if run.data.run.bundle is None:
        return None
    try:
        return load_bundle(bundle_file(Path(run.data.run.bundle))).system_prompt
    except (BundleError, OSError, ValueError):
        return None


def page_data(runs: Sequence[Run], families: list[str], strategies: list[str]) -> PageData:
    """The JSON the page's script filters and shows."""
    samples: list[SampleView] = []
    cases: dict[str, CaseView] = {}
    for index, run in enumerate(runs):
        scores: dict[str, dict[str, tuple[float | None, str | None]]] = {}
        for row in run.data.scores or ():
            scores.setdefault(row.sample_id, {})[row.metric] = (row.value, row.error_kind)
        for sample in run.samples:
            samples.append(_sample_view(index, sample, {m: v for m, v in scores.get(sample.sample_id, {}).items()
                                                         if m in METRICS}))
        if run.suite is not None:
            wanted = {s.case_id for s in run.samples}
            cases.update({f"{index}/{c.id}": _case_view(c) for c in run.suite.cases if c.id in wanted})
    return PageData(
        runs=[RunView(label=r.label, engine=r.engine, system_prompt=_system_prompt(r)) for r in runs],
        samples=samples, cases=cases, families=families, strategies=strategies,
        kinds=sorted({k for s in samples for k in s.kinds}),
    )


def script_json(data: PageData) -> str:
    """The data as JSON that cannot end its ``<script>`` element."""
    return data.model_dump_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _image(figure: Figure) -> str | None:
    if figure.path is None:
        return None
    return "data:image/png;base64," + base64.b64encode(figure.path.read_bytes()).decode("ascii")


def render(report: Report) -> str:
    """The page's HTML, from the report's tables."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html.jinja").render(
        version=__version__, now=report.written_at, runs=report.runs, sections=report.sections,
        verdicts=report.verdicts, side_by_side=report.side_by_side,
        figures=[(f, _image(f)) for f in report.figures],
        overhead_headers=OVERHEAD_HEADERS, overhead_rows=report.overhead, failure_headers=FAILURE_HEADERS,
        data=script_json(page_data(report.runs, report.families, report.strategies)),
        style=(TEMPLATES / "report.css").read_text(encoding="utf-8"),
        script=(TEMPLATES / "report.js").read_text(encoding="utf-8"),
    )


def write_html(path: Path, report: Report) -> Path:
    path.write_text(render(report), encoding="utf-8")
    return path


__all__ = [
    "CaseView",
    "PageData",
    "RunView",
    "SampleView",
    "StepView",
    "ToolResultView",
    "page_data",
    "render",
    "script_json",
    "write_html",
]
