"""The oracle replays every BFCL single-turn answer through every family x strategy: every constrained
lane accepts every answer, but for the entries listed here by id, each with its reason.

Three kinds of exception: entries none of whose listed answers fits the schema the model is sent
(tagged ``no_valid_answer`` at import: a grammar that enforces the schema rightly refuses them);
grammar limits (``GRAMMAR_LIMITS``); and tool sets a strategy refuses to build a constraint for
(``REFUSED``, ``constraint:refused``). The test fails on any difference, either way: a fixed limit's
entry must go.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
                    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from harness.bfcl.single_import import (
    AST_CATEGORIES,
    IRRELEVANCE_CATEGORIES,
    NO_VALID_ANSWER,
    default_bundle,
    entry_category,
    import_bfcl_single_turn,
)
from harness.eval.data import load_suite
from harness.eval.run import RunOptions, RunPlace, run_suite

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ["function_gemma", "qwen"]
STRATEGIES = ["none", "ebnf", "structural_tag", "json_schema"]
CONSTRAINED = {(f, s) for f in FAMILIES for s in STRATEGIES if s != "none"}

EBNF = {("function_gemma", "ebnf"), ("function_gemma", "structural_tag"), ("qwen", "ebnf")}
"""The lanes the harness's own EBNF builder makes (Qwen's structural tag is xgrammar's JSON schema)."""
CLOSED = ("every grammar closes a nested object that declares properties (by design: JSON Schema leaves it "
          "open); BFCL's answer gives it other keys")
GRAMMAR_LIMITS: dict[str, tuple[set[tuple[str, str]], str]] = {
    "live_multiple_189-83-0": (CONSTRAINED, CLOSED),  # data declares param1.., the answer sends name, email
}
"""Gold answers a grammar refuses although they fit the converted schema, by id."""
NO_VALUE = "a required array argument whose enum holds strings (BFCL's doc): no value satisfies it"
REFUSED: dict[str, tuple[set[tuple[str, str]], str]] = {
    "live_simple_71-35-0": (CONSTRAINED, NO_VALUE),  # also no_valid_answer
    "live_irrelevance_428-103-0": (CONSTRAINED, NO_VALUE),
}
"""Entries whose tools a strategy refuses to build a constraint for (``constraint:refused``, naming the
keyword): never run unconstrained, counted."""
REJECTED, REFUSED_KIND = "grammar:rejected_gold", "constraint:refused"


def _expected(category: str, unfit: set[str]) -> dict[tuple[str, str, str], str]:
    out = {(cid, f, s): REJECTED for cid in unfit for f, s in CONSTRAINED}
    out |= {(cid, f, s): REJECTED for cid, (lanes, _) in GRAMMAR_LIMITS.items() if entry_category(cid) == category
            for f, s in lanes}
    out |= {(cid, f, s): REFUSED_KIND for cid, (lanes, _) in REFUSED.items() if entry_category(cid) == category
            for f, s in lanes}
    return out


async def _failed(suite: Path, out: Path) -> dict[tuple[str, str, str], str]:
    """(case, family, strategy) -> error kind of every sample that did not end ok."""
    await run_suite(suite, RunOptions(engine="oracle", families=FAMILIES, strategies=STRATEGIES), RunPlace(out=out))
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    return {(r["case_id"], r["family"], r["strategy"]): r["error_kind"] for r in rows if r["status"] != "ok"}


@pytest.mark.slow
@pytest.mark.parametrize("category", AST_CATEGORIES)
async def test_every_constrained_cell_accepts_every_answer_but_the_listed(category: str, tmp_path: Path) -> None:
    suite = tmp_path / category
    import_bfcl_single_turn(category, None, suite, bundle=str(ROOT / "bundles" / default_bundle([category])))
    unfit = {c.id for c in load_suite(suite).single_turn_cases() if NO_VALID_ANSWER in c.tags}
    assert await _failed(suite, tmp_path / "run") == _expected(category, unfit)


@pytest.mark.slow
@pytest.mark.parametrize("text_answer", [True, False])
@pytest.mark.parametrize("category", IRRELEVANCE_CATEGORIES)
async def test_irrelevance_needs_the_plain_answer_branch(category: str, text_answer: bool, tmp_path: Path) -> None:
    """No call is right there: the oracle's plain answer passes every lane when the grammars offer a
    plain answer, and no constrained lane when they force a call (so no model can abstain there; an
    entry without functions has then no valid answer at all: ``constraint:empty_language``)."""
    suite = tmp_path / category
    import_bfcl_single_turn(category, None, suite, bundle=str(ROOT / "bundles" / default_bundle([category])),
                            text_answer=text_answer)
    failed = await _failed(suite, tmp_path / "run")
    if text_answer:
        assert failed == _expected(category, set())
    else:
        n = len(load_suite(suite).cases)
        assert len(failed) == n * len(CONSTRAINED) and not any(s == "none" for _, _, s in failed)
