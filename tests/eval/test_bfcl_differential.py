"""The harness's BFCL verdict against BFCL's own evaluation, on perturbed answers.

Each answer (the oracle's gold, then values changed, arguments dropped or added, functions renamed,
calls reordered, duplicated or dropped, a plain-text answer) goes through the harness as a model's
answer would: rendered in the family's output format (native call syntax, JSON for json_schema, or
as tool calls a server parsed), through the kernel's step with the case's own tools, into a sample
record, through its JSON line, scored. BFCL's side gets the same calls as BFCL records them for a model
that takes tools in the request (``[{name: JSON arguments}]``, or the text of a plain answer) and
runs its own per-entry evaluation (decode, format check, ``ast_checker`` or the relevance rule).
Verdict and error type must be equal on every answer. A lane whose strategy refuses to build a
constraint for the entry's tools (``constraint:refused``; the gold replay test lists them by id) gets
no answer to judge: counted apart, not compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
                    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from bfcl_single_side import bfcl_entry_verdict, entries, fc_result

from harness.agents.client import CompletionRequest, CompletionResponse
from harness.agents.types import ToolCall
from harness.bfcl.single_import import AST_CATEGORIES, BAD_ENTRY, IRRELEVANCE_CATEGORIES, single_turn_case
from harness.eval.data.cases import SingleTurnCase
from harness.eval.run.sample import run_single_turn, sample_record
from harness.eval.score import Scorer
from harness.eval.store import SampleKey, SampleRecord
from harness.vocabulary import ErrorKind

ROOT = Path(__file__).resolve().parents[2]
Answer = list[tuple[str, dict[str, Any]]] | str
TEXT = "I am sorry, I cannot help with that."


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + " zz"
    if isinstance(value, list):
        return [] if value else ["zz"]
    return "zz" if value is None else {}


def _first_arg(calls: Answer, pick: Callable[[Any], bool]) -> tuple[int, str] | None:
    for i, (_, args) in enumerate(calls):
        for key, value in args.items():
            if pick(value):
                return i, key
    return None


def _with_arg(calls: Answer, where: tuple[int, str] | None, change: Callable[[Any], Any]) -> Answer | None:
    if where is None:
        return None
    i, key = where
    out = [(n, dict(a)) for n, a in calls]
    out[i][1][key] = change(out[i][1][key])
    return out


def _drop_last_arg(calls: Answer) -> Answer | None:
    if not calls or not calls[0][1]:
        return None
    name, args = calls[0]
    return [(name, dict(list(args.items())[:-1])), *calls[1:]]


def _original_name(calls: Answer, case: SingleTurnCase) -> Answer | None:
    """The first call under the function's name in BFCL's docs (with its dots), where it has dots."""
    names = {t.name: str(doc["name"]) for t, doc in zip(case.tool_schemas(), case.functions, strict=True)}
    if not calls or "." not in names[calls[0][0]]:
        return None
    return [(names[calls[0][0]], calls[0][1]), *calls[1:]]


PERTURBATIONS: dict[str, Callable[[Answer, SingleTurnCase], Answer | None]] = {
    "gold": lambda calls, case: calls,
    "value": lambda calls, case: _with_arg(calls, _first_arg(calls, lambda v: True), _changed),
    "upper": lambda calls, case: _with_arg(calls, _first_arg(calls, lambda v: isinstance(v, str)), str.upper),
    "int_as_float": lambda calls, case: _with_arg(
        calls, _first_arg(calls, lambda v: isinstance(v, int) and not isinstance(v, bool)), float),
    "float_as_int": lambda calls, case: _with_arg(
        calls, _first_arg(calls, lambda v: isinstance(v, float) and v.is_integer()), int),
    "drop_arg": lambda calls, case: _drop_last_arg(calls),
    "extra_arg": lambda calls, case: [(calls[0][0], {**calls[0][1], "zz_extra": 1}), *calls[1:]] if calls else None,
    "renamed": lambda calls, case: [(calls[0][0] + "_zz", calls[0][1]), *calls[1:]] if calls else None,
    "dotted_name": lambda calls, case: _original_name(calls, case),
    "reordered": lambda calls, case: calls[::-1] if len(calls) > 1 else None,
    "duplicated": lambda calls, case: [*calls, calls[0]] if calls else None,
    "call_dropped": lambda calls, case: calls[:-1] if len(calls) > 1 else None,
    "plain_text": lambda calls, case: TEXT,
    "first_tool_no_args": lambda calls, case: [(case.tool_schemas()[0].name, {})] if case.tool_schemas() else None,
    "unknown_tool": lambda calls, case: [("zz_tool", {"q": 1})],
}
"""Answers made from the gold (irrelevance: gold is the plain answer): right, wrong, and right in BFCL's eyes."""

LANES = [("function_gemma", "ebnf", False), ("function_gemma", "json_schema", False), ("qwen", "ebnf", False),
         ("qwen", "json_schema", False), ("qwen", "none", True)]
"""(family, strategy, as tool calls a server parsed): every way an answer reaches the parser."""


class OneAnswer:
    """A client that answers with one text, or with tool calls as a server parsed them."""

    def __init__(self, text: str, calls: tuple[ToolCall, ...] = ()) -> None:
        self.text, self.calls = text, calls

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        return CompletionResponse(content=self.text, tool_calls=self.calls, finish_reason="stop", latency_ms=1.0)

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def agent() -> Any:
    from harness.bundles import load_agent

    return load_agent(ROOT / "bundles" / "bfcl")


_LANE_AGENTS: dict[tuple[int, str, str], Any] = {}
"""One agent per loaded bundle and lane: building it per answer kept its payload cache from ever hitting."""
_SCORERS: dict[str, Any] = {}
"""One scorer per case (its BFCL validators built once for the case's answers and lanes)."""


async def harness_verdict(agent: Any, case: SingleTurnCase, answer: Answer, lane: tuple[str, str, bool]) -> tuple[bool, str | None]:
    family, strategy, api = lane
    key = (id(agent), family, strategy)
    if key not in _LANE_AGENTS:
        _LANE_AGENTS[key] = agent.variant(family=family, strategy=strategy, allow_text_answer=True)
    lane_agent = _LANE_AGENTS[key]
    calls = () if isinstance(answer, str) else tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(answer))
    if api:
        client = OneAnswer("" if calls else str(answer), calls)
    elif calls:
        client = OneAnswer(lane_agent.adapter.render_output(calls, lane_agent.constraint))
    else:
        client = OneAnswer(lane_agent.adapter.render_text(str(answer), lane_agent.constraint))
    outcome = await run_single_turn(lane_agent, case, client)
    key = SampleKey(sample_id=f"{case.id}/x", case_id=case.id, family=family, strategy=strategy, epoch=1, kind="single_turn")
    record = SampleRecord.model_validate_json(sample_record(key, outcome, 0.0).model_dump_json())  # samples.jsonl
    if case.id not in _SCORERS:
        _SCORERS[case.id] = Scorer([case], [], "local", None)
    rows = await _SCORERS[case.id].score(record)
    row = next(r for r in rows if r.metric == "bfcl_match")
    return row.value == 1.0, row.error_kind


def _cases(category: str, limit: int | None) -> list[tuple[dict[str, Any], SingleTurnCase]]:
    """The category's first ``limit`` entries and as many of its bad entries (all: None)."""
    from bfcl_single_side import answers

    truth = answers(category)
    cases = [(e, single_turn_case(e, truth.get(e["id"]))) for e in entries(category)]
    if limit is None:
        return cases
    return cases[:limit] + [c for c in cases[limit:] if BAD_ENTRY in c[1].tags][:limit]


async def _differential(agent: Any, categories: tuple[str, ...], limit: int | None) -> Counter[str]:
    disagree: list[str] = []
    counts: Counter[str] = Counter()
    for entry, case in (c for category in categories for c in _cases(category, limit)):
        calls = [(c.name, dict(c.arguments)) for c in case.expected]
        for name, make in PERTURBATIONS.items():
            answer = make(calls, case) if calls or name != "gold" else TEXT
            if answer is None or (name == "plain_text" and not calls):
                continue
            valid, kind = bfcl_entry_verdict(entry, fc_result(answer))  # BFCL's verdict: the same in every lane
            theirs = (valid, None if valid else f"bfcl:{kind}")
            for lane in LANES:
                await _compare(agent, case, name, answer, lane, theirs, counts, disagree)
    assert not disagree, f"{len(disagree)} of {counts['agree'] + counts['disagree']} verdicts differ:\n" + "\n".join(disagree[:15])
    return counts


async def _compare(agent: Any, case: SingleTurnCase, name: str, answer: Answer, lane: tuple[str, str, bool],
                   theirs: tuple[bool, str | None], counts: Counter[str], disagree: list[str]) -> None:
    valid = theirs[0]
    ours = await harness_verdict(agent, case, answer, lane)
    if ours[1] == ErrorKind.constraint_refused:
        counts["refused"] += 1  # the strategy builds no constraint for these tools: no answer to judge
        return
    counts["agree" if ours == theirs else "disagree"] += 1
    counts["bfcl_valid" if valid else "bfcl_invalid"] += 1
    if ours != theirs:
        disagree.append(f"{case.id} {name} {lane}: here {ours}, BFCL {theirs}")


async def test_verdicts_equal_bfcls_on_perturbed_answers(agent: Any) -> None:
    """A few entries of every category (their bad entries among them), every perturbation, every lane."""
    counts = await _differential(agent, (*AST_CATEGORIES, *IRRELEVANCE_CATEGORIES), limit=4)
    assert counts["bfcl_valid"] > 100 and counts["bfcl_invalid"] > 500  # both verdicts are exercised


@pytest.mark.slow
@pytest.mark.parametrize("category", [*AST_CATEGORIES, *IRRELEVANCE_CATEGORIES])
async def test_verdicts_equal_bfcls_on_every_entry(agent: Any, category: str) -> None:
    counts = await _differential(agent, (category,), limit=None)
    print(category, dict(counts))  # the README's figures: pytest -m slow -s
