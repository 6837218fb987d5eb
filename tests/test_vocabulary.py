"""The vocabulary (``harness.vocabulary``): every error kind the code produces is one of its members,
the registries and the lists other layers keep are its lists, and a member is written as its string."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.vocabulary import (
    ACCURACY_METRICS,
    CONSTRAINED_STRATEGIES,
    FAMILIES,
    HTTP_ERROR_PREFIX,
    SAMPLE_METRICS,
    STRATEGIES,
    TIMING_METRICS,
    ErrorKind,
    Family,
    Metric,
    Strategy,
    http_error_kind,
)

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
CHECKERS = sorted({k.checker for k in ErrorKind})
KIND_LITERAL = re.compile(rf"^({'|'.join(CHECKERS)}):[a-z0-9_]+$")


def kind_literals() -> dict[str, list[str]]:
    """Every string constant of ``harness/`` that reads as ``checker:reason`` -> where it is."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and KIND_LITERAL.match(node.value):
                found.setdefault(node.value, []).append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_every_error_kind_in_the_source_is_in_the_vocabulary() -> None:
    found = kind_literals()
    assert "parse:no_call" in found  # the scan sees the source (some literals are still spelt out)
    unknown = {k: v for k, v in found.items() if k not in set(ErrorKind) and not k.startswith(HTTP_ERROR_PREFIX)}
    assert unknown == {}


def test_the_scan_would_find_an_unknown_kind() -> None:
    assert KIND_LITERAL.match("parse:brand_new") and "parse:brand_new" not in set(ErrorKind)


def test_kinds_are_checker_colon_reason() -> None:
    for kind in ErrorKind:
        checker, _, reason = kind.value.partition(":")
        assert kind.name == f"{checker}_{reason}" and kind.checker == checker
    assert http_error_kind(503) == "model:http_503"


def test_the_family_registries_are_the_vocabulary() -> None:
    from harness.grammar.families import FAMILIES as REGISTERED
    from harness.grammar.families import REGISTRY
    from harness.grammar.tokenizers import TOKENIZER_FAMILIES

    assert tuple(REGISTRY) == REGISTERED == FAMILIES == tuple(Family)
    assert set(TOKENIZER_FAMILIES) == set(FAMILIES)


def test_the_strategy_lists_are_the_vocabulary() -> None:
    from harness.agents.constraint import CONSTRAINED_STRATEGIES as CONSTRAINED
    from harness.agents.constraint import STRATEGIES as ALL

    assert ALL == STRATEGIES == tuple(Strategy)
    assert CONSTRAINED == CONSTRAINED_STRATEGIES == tuple(s for s in Strategy if s is not Strategy.none)


def test_the_metric_lists_of_the_run_files_are_the_vocabulary() -> None:
    """eval's names for these lists (library users import them) are the vocabulary's."""
    from harness.eval.score import TARGET_METRIC
    from harness.eval.score import TIMING_METRICS as SUMMARY_TIMINGS
    from harness.eval.store import METRICS

    assert METRICS == SAMPLE_METRICS
    assert SUMMARY_TIMINGS == TIMING_METRICS
    assert TARGET_METRIC == Metric.target_mask_diff
    assert set(Metric) == {*SAMPLE_METRICS, *TIMING_METRICS, Metric.target_mask_diff}
    assert set(ACCURACY_METRICS) < set(SAMPLE_METRICS)


class _Row(BaseModel):
    family: str
    strategy: str
    metric: str
    error_kind: str


@pytest.mark.parametrize(
    ("member", "text"),
    [(Family.function_gemma, "function_gemma"), (Strategy.json_schema, "json_schema"),
     (Metric.exact_match, "exact_match"), (ErrorKind.parse_no_call, "parse:no_call")],
)
def test_a_member_is_written_as_its_string(member: str, text: str) -> None:
    assert member == text and hash(member) == hash(text) and {text: 1}[member] == 1
    assert f"{member}" == str(member) == text and f"{member:>20}" == f"{text:>20}"
    assert json.dumps({member: [member]}) == json.dumps({text: [text]})


def test_a_record_stores_a_member_as_plain_text() -> None:
    row = _Row(family=Family.qwen, strategy=Strategy.ebnf, metric=Metric.validity, error_kind=ErrorKind.tool_limit)
    assert row.model_dump_json() == '{"family":"qwen","strategy":"ebnf","metric":"validity","error_kind":"tool:limit"}'
    assert all(type(v) is str for v in row.model_dump().values())
