"""Scoring BFCL single-turn samples: the harness's rules around BFCL's verdict (cut answers, answers
that do not parse, calls of functions the entry lacks, irrelevance), an oracle run end to end, the
grammars of an entry without functions, and payloads of tool sets that share names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
                    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from harness.agents import DecodingConstraint, ToolSchema
from harness.eval.data.cases import SingleTurnCase
from harness.eval.score import Scorer
from harness.eval.store import SampleRecord

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = [{"name": "math.add", "description": "Add.", "parameters": {"type": "dict", "properties": {
    "a": {"type": "integer", "description": "A."}, "b": {"type": "integer", "description": "B."}}, "required": ["a", "b"]}}]
GOLD = [{"math.add": {"a": [1], "b": [2]}}]


def _case(category: str, tags: tuple[str, ...] = ()) -> SingleTurnCase:
    relevant = "irrelevance" not in category
    return SingleTurnCase.model_validate({
        "id": f"{category}_0", "category": category, "messages": [{"role": "user", "content": "1 + 2?"}],
        "functions": FUNCTIONS, "possible_answer": GOLD if relevant else [],
        "expected": [{"name": "math_add", "arguments": {"a": 1, "b": 2}}] if relevant else [], "tags": list(tags),
    })


GOOD = [{"name": "math_add", "arguments": {"a": 1, "b": 2}}]
WRONG = [{"name": "math_add", "arguments": {"a": 1, "b": 3}}]
UNKNOWN = [{"kind": "parse:unknown_tool", "message": "no tool is named 'math.add'"}]
MALFORMED = [{"kind": "parse:bad_arguments", "message": "arguments are not JSON"}]
NO_CALL = [{"kind": "parse:no_call", "message": "the answer holds no tool call"}]

# (category, calls, parse errors, finish reason, bfcl_match value, its error kind)
VERDICTS: list[tuple[str, list[Any], list[Any], str, float, str | None]] = [
    ("simple_python", GOOD, [], "stop", 1.0, None),
    ("simple_python", WRONG, [], "stop", 0.0, "bfcl:value_error:others"),
    ("simple_python", GOOD + GOOD, [], "stop", 0.0, "bfcl:simple_function_checker:wrong_count"),
    ("simple_python", [], UNKNOWN, "stop", 0.0, "bfcl:simple_function_checker:wrong_func_name"),
    ("parallel", GOOD, UNKNOWN, "stop", 0.0, "bfcl:parallel_function_checker_no_order:wrong_count"),
    ("simple_python", GOOD, MALFORMED, "stop", 0.0, "bfcl:ast_decoder:decoder_failed"),
    ("simple_python", [], NO_CALL, "stop", 0.0, "bfcl:ast_decoder:decoder_failed"),
    ("simple_python", GOOD, [], "length", 0.0, "length:max_tokens"),
    ("irrelevance", [], NO_CALL, "stop", 1.0, None),
    ("irrelevance", [], NO_CALL, "length", 1.0, None),  # a long plain answer called nothing
    ("irrelevance", GOOD, [], "stop", 0.0, "bfcl:irrelevance_error:decoder_success"),
    ("irrelevance", [], UNKNOWN, "stop", 0.0, "bfcl:irrelevance_error:decoder_success"),
    ("irrelevance", GOOD, MALFORMED, "stop", 1.0, None),  # does not decode: no call, for BFCL
    ("irrelevance", [], MALFORMED, "length", 0.0, "length:max_tokens"),  # a call cut short
]


def _sample(
    case: SingleTurnCase, calls: list[Any], errors: list[Any], finish: str, status: str = "ok", strategy: str = "ebnf"
) -> SampleRecord:
    step = {"output": "x", "tool_calls": calls, "parse_errors": errors, "tool_results": [], "latency_ms": 1.0,
            "ttft_ms": None, "usage": None, "stats": None, "finish_reason": finish}
    return SampleRecord.model_validate({
        "sample_id": f"{case.id}/1", "case_id": case.id, "family": "qwen", "strategy": strategy, "epoch": 1,
        "kind": "single_turn", "status": status, "error_kind": "model:timeout" if status == "error" else None,
        "error": None, "steps": [step] if status == "ok" else [], "duration_ms": 1.0, "harness_ms": 0.1,
    })


async def _rows(case: SingleTurnCase, sample: SampleRecord) -> dict[str, tuple[float | None, str | None]]:
    rows = await Scorer([case], [], "local", None).score(sample)
    return {r.metric: (r.value, r.error_kind) for r in rows}


@pytest.mark.parametrize(("category", "calls", "errors", "finish", "value", "kind"), VERDICTS)
async def test_bfcl_match(category: str, calls: list[Any], errors: list[Any], finish: str, value: float, kind: str | None) -> None:
    case = _case(category)
    rows = await _rows(case, _sample(case, calls, errors, finish))
    assert rows["bfcl_match"] == (value, kind)
    assert "bfcl_match_bad_entry" not in rows and rows["state_match"] == (None, None)


async def test_bad_entries_get_the_verdict_twice_and_failed_samples_fail_every_metric() -> None:
    case = _case("live_simple", tags=("bad_entry",))
    rows = await _rows(case, _sample(case, GOOD, [], "stop"))
    assert rows["bfcl_match"] == rows["bfcl_match_bad_entry"] == (1.0, None)
    assert rows["exact_match"] == rows["validity"] == (1.0, None)
    rows = await _rows(case, _sample(case, [], [], "stop", status="error"))
    assert {m: rows[m] for m in ("validity", "exact_match", "bfcl_match", "bfcl_match_bad_entry")} == dict.fromkeys(
        ("validity", "exact_match", "bfcl_match", "bfcl_match_bad_entry"), (0.0, "model:timeout"))


async def test_validity_uses_the_entrys_own_tools() -> None:
    case = _case("irrelevance")
    assert (await _rows(case, _sample(case, [], NO_CALL, "stop")))["validity"] == (1.0, None)  # no call is right
    relevant = _case("simple_python")
    bad = [{"name": "math_add", "arguments": {"a": "1", "b": 2}}]
    assert (await _rows(relevant, _sample(relevant, bad, [], "stop", strategy="none")))["validity"] == (
        0.0, "validity:schema")
    # under a constrained strategy the grammar let it through: the constraint's failure
    assert (await _rows(relevant, _sample(relevant, bad, [], "stop")))["validity"] == (0.0, "grammar:let_through")
    assert (await _rows(relevant, _sample(relevant, [], NO_CALL, "stop")))["validity"] == (0.0, "parse:no_call")


@pytest.mark.parametrize("strategy", ["ebnf", "structural_tag", "json_schema"])
@pytest.mark.parametrize("family", ["function_gemma", "qwen"])
def test_an_entry_without_functions_allows_a_plain_answer_only(family: str, strategy: str) -> None:
    """A few live_irrelevance entries offer no function: with a plain answer allowed the grammar is
    that answer alone (compiled and walked here); a grammar that forces a call has nothing to offer."""
    import xgrammar as xgr

    from harness.agents.constraint import ConstraintError
    from harness.grammar.compile import compile_artifact
    from harness.grammar.families import get_adapter

    adapter = get_adapter(family)
    constraint = DecodingConstraint(strategy=strategy, allow_parallel_calls=True, allow_text_answer=True)
    payload = adapter.build_payload([], constraint)
    assert payload.artifact is not None
    compiled = compile_artifact(payload.artifact, family).compiled
    assert xgr.GrammarMatcher(compiled).accept_string(adapter.render_text("There is no function for that.", constraint))
    assert not xgr.GrammarMatcher(compiled).accept_string(adapter.native_call_start)
    with pytest.raises(ConstraintError, match="at least one tool"):
        adapter.build_payload([], DecodingConstraint(strategy=strategy))


def test_payloads_differ_for_tool_sets_that_share_names() -> None:
    """Cases bring their own tools: two ``calc`` tools with different parameters get different grammars."""
    from harness.agents.agent import cached_payloads
    from harness.grammar.families import get_adapter

    adapter = cached_payloads(get_adapter("qwen"))
    one = ToolSchema("calc", "", {"type": "object", "properties": {"a": {"type": "integer"}}})
    two = ToolSchema("calc", "", {"type": "object", "properties": {"z": {"type": "string"}}})
    constraint = DecodingConstraint(strategy="ebnf")
    first = adapter.build_payload([one], constraint)
    assert adapter.build_payload([one], constraint) is first  # the same tool set: built once
    assert adapter.build_payload([two], constraint).artifact != first.artifact


@pytest.mark.slow
async def test_an_oracle_run_scores_bfcl_match(tmp_path: Path) -> None:
    from harness.bfcl.single_import import import_bfcl_single_turn
    from harness.eval.run import RunOptions, RunPlace, run_suite
    from harness.eval.store import read_summary

    suite = tmp_path / "live_parallel"
    import_bfcl_single_turn("live_parallel", None, suite, bundle=str(ROOT / "bundles" / "bfcl"))
    out = tmp_path / "run"
    await run_suite(suite, RunOptions(engine="oracle", families=["function_gemma", "qwen"], limit=4), RunPlace(out=out))
    got = {(r.family, r.strategy, r.metric): (r.value, r.n) for r in read_summary(out)}
    for family in ("function_gemma", "qwen"):
        for strategy in ("none", "ebnf", "structural_tag", "json_schema"):
            assert got[(family, strategy, "bfcl_match")] == (1.0, 4)
            assert got[(family, strategy, "grammar_rejection")] == (0.0, 4)
