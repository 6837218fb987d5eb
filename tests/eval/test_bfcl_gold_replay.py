"""The oracle replays every BFCL single-turn answer through every family x strategy: every constrained
cell accepts every answer, but for the entries listed here by id, each with its reason.

Two kinds of exception: entries none of whose listed answers fits the schema the model is sent
(tagged ``no_valid_answer`` at import: a grammar that enforces the schema rightly refuses them), and
grammar limits, which are bugs of the constraint (``GRAMMAR_LIMITS``; the fuzz work's to fix). When a
limit is fixed its entry must go: the test fails on any difference, either way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
                    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from harness.eval.data import load_suite
from harness.eval.data.bfcl_single import (
    AST_CATEGORIES,
    IRRELEVANCE_CATEGORIES,
    NO_VALID_ANSWER,
    default_bundle,
    entry_category,
    import_bfcl_single_turn,
)
from harness.eval.run import RunSpec, run_suite
from harness.eval.store import read_summary

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ["function_gemma", "qwen"]
STRATEGIES = ["none", "ebnf", "structural_tag", "json_schema"]
CONSTRAINED = {(f, s) for f in FAMILIES for s in STRATEGIES if s != "none"}
JSON = {("function_gemma", "json_schema"), ("qwen", "json_schema")}

ANY_VALUE = ("xgrammar's JSON-schema grammar for a value the schema leaves open (an object without properties, "
             "an array without items type) takes ', ' between items whatever `separators` says: compact JSON "
             "with two or more keys or items is refused")
CLOSED = ("every grammar closes a nested object that declares properties (JSON Schema leaves it open); BFCL's "
          "answer gives it other keys")
GRAMMAR_LIMITS: dict[str, tuple[set[tuple[str, str]], str]] = {
    "simple_python_337": (JSON, ANY_VALUE),  # cards: {"Alex": ["A of spades", "K of spades"], ...}
    "multiple_9": (JSON, ANY_VALUE),  # gradeDict: {"history": 82, "math": 90, ...}
    "parallel_29": (JSON | {("qwen", "structural_tag")}, ANY_VALUE),  # population: {"adults": 2, "children": 2, ...}
    "parallel_multiple_66": (JSON, ANY_VALUE),  # gradeDict
    "parallel_multiple_135": (JSON, ANY_VALUE),  # cards
    "live_simple_165-98-0": (JSON, ANY_VALUE),  # data: [{"name": ..., "age": 18}, ...], items {"type": "object"}
    "live_multiple_121-46-0": (JSON, ANY_VALUE),  # bounding_boxes: [{"x": 60.2, "y": 12.3}]
    "live_multiple_189-83-0": (CONSTRAINED, CLOSED),  # data declares param1.., the answer sends name, email
}
"""Gold answers a grammar refuses although they fit the converted schema: grammar bugs, by id."""


async def _rejected(suite: Path, out: Path) -> set[tuple[str, str, str]]:
    await run_suite(RunSpec(suite_dir=suite, engine="oracle", families=FAMILIES, strategies=STRATEGIES, out=out))
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["status"] == "ok" or r["error_kind"] == "grammar:rejected_gold" for r in rows)
    return {(r["case_id"], r["family"], r["strategy"]) for r in rows if r["status"] != "ok"}


@pytest.mark.slow
@pytest.mark.parametrize("category", AST_CATEGORIES)
async def test_every_constrained_cell_accepts_every_answer_but_the_listed(category: str, tmp_path: Path) -> None:
    suite = tmp_path / category
    import_bfcl_single_turn(category, None, suite, bundle=str(ROOT / "bundles" / default_bundle([category])))
    unfit = {c.id for c in load_suite(suite).single_turn_cases() if NO_VALID_ANSWER in c.tags}
    expected = {(cid, f, s) for cid in unfit for f, s in CONSTRAINED}
    expected |= {(cid, f, s) for cid, (cells, _) in GRAMMAR_LIMITS.items() if entry_category(cid) == category
                 for f, s in cells}
    assert await _rejected(suite, tmp_path / "run") == expected


@pytest.mark.slow
@pytest.mark.parametrize("text_answer", [True, False])
@pytest.mark.parametrize("category", IRRELEVANCE_CATEGORIES)
async def test_irrelevance_needs_the_plain_answer_branch(category: str, text_answer: bool, tmp_path: Path) -> None:
    """No call is right there: the oracle's plain answer passes every cell when the grammars offer a
    plain answer, and no constrained cell when they force a call (so no model can abstain there; an
    entry without functions has then no valid answer at all: ``constraint:empty_language``)."""
    suite = tmp_path / category
    import_bfcl_single_turn(category, None, suite, bundle=str(ROOT / "bundles" / default_bundle([category])),
                            text_answer=text_answer)
    await run_suite(RunSpec(suite_dir=suite, engine="oracle", families=FAMILIES, strategies=STRATEGIES,
                            out=tmp_path / "run"))
    got = {(r.family, r.strategy): r.value for r in read_summary(tmp_path / "run") if r.metric == "bfcl_match"}
    assert got == {(f, s): 1.0 if text_answer or s == "none" else 0.0 for f in FAMILIES for s in STRATEGIES}
