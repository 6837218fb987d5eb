"""Tool schemas the libraries write, in every strategy: pydantic 2's own ``model_json_schema()``
(``tests/grammar/library_schemas.py``) and zod 4's ``z.toJSONSchema`` run through Node
(``tests/families/data/zod_tools.js``; skipped, saying why, where Node or zod is not installed).

Each schema builds in every lane of both families, or is refused for the documented reason asserted
here per schema (``EXPECTED``, docs/schemas.md), and ``harness fuzz`` passes on it: no class the
keyword table does not predict, every cell of the harness's own grammars passing, and every failure
of an xgrammar-built cell explained by an xgrammar defect that names the keyword."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.agents import ToolSchema
from harness.agents.constraint import ConstraintError, DecodingConstraint
from harness.fuzz import FuzzOptions, Outcome, fuzz
from harness.grammar.families import get_adapter
from tests.grammar.library_schemas import all_tools

pytestmark = pytest.mark.fuzz

ZOD_SCRIPT = Path(__file__).resolve().parents[1] / "families" / "data" / "zod_tools.js"
FAMILIES = ("function_gemma", "qwen")
STRATEGIES = ("ebnf", "structural_tag", "json_schema", "required", "strict")

KINDS: dict[str, str] = {
    "vllm": r"vLLM \(backend xgrammar\) answers 400: The provided JSON schema contains features not supported",
    "intersection_budget": r"format 'uri', minLength 1 and maxLength 2083 together: their intersection takes [\d,]+ grammar rules",
    "uniqueItems": r"uniqueItems is not enforced by",
    "propertyNames": r"propertyNames is not enforced by",
    "oneOf": r"oneOf \(branches a value can match together\) is not enforced by",
}
"""Each documented refusal, as its message says it (docs/schemas.md)."""

GROUPS: dict[str, tuple[tuple[str, str], ...]] = {
    "own": tuple((f, s) for f in FAMILIES for s in ("ebnf", "structural_tag")),
    "json_schema": tuple((f, "json_schema") for f in FAMILIES),
    "fg_required": (("function_gemma", "required"),),
}
"""Lanes that refuse alike: the harness's own builder, xgrammar's json_schema (after vLLM's check),
and FunctionGemma's required (vLLM's JSON array). Qwen's required/strict and FunctionGemma's strict
refuse nothing."""

_VLLM = {"json_schema": "vllm", "fg_required": "vllm"}
EXPECTED: dict[str, dict[str, str]] = {
    "t_any_url": _VLLM,
    "t_http_url": {"own": "intersection_budget", **_VLLM},
    "t_constr_pattern_lengths": _VLLM,
    "t_conint_multiple_of": _VLLM, "t_bytes": _VLLM, "t_secret_str": _VLLM, "t_path": _VLLM,
    "t_set_str": {"own": "uniqueItems", **_VLLM},
}
"""Per schema, the refusal kind of each lane group that refuses it; every other lane builds it."""

ZOD_NAMES = ("z_record", "z_union", "z_optional", "z_nullable", "z_enum", "z_literal", "z_email", "z_url", "z_uuid",
             "z_datetime", "z_date", "z_ipv4", "z_lengths", "z_bounds", "z_array", "z_tuple", "z_nested",
             "z_discriminated")


@functools.cache
def zod_tools() -> dict[str, ToolSchema] | str:
    """The zod corpus, or why it cannot be made here."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "Node is not installed"
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=60).stdout.strip()
    done = subprocess.run([node, str(ZOD_SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={"NODE_PATH": root, "PATH": str(Path(node).parent)})
    if done.returncode != 0:
        return f"zod 4 is not installed for Node (npm install -g zod@4): {done.stderr.strip()[:200]}"
    return {name: ToolSchema(name, f"zod {name}", schema) for name, schema in json.loads(done.stdout).items()}


def corpus_tool(name: str) -> ToolSchema:
    if not name.startswith("z_"):
        return all_tools()[name]
    zod = zod_tools()
    if isinstance(zod, str):
        pytest.skip(zod)
    return zod[name]


def expected(name: str, family: str, strategy: str) -> str | None:
    return next((kind for group, kind in EXPECTED.get(name, {}).items() if (family, strategy) in GROUPS[group]), None)


PLAIN = ToolSchema("plain", "A plain tool.", {"type": "object", "properties": {"a": {"type": "string"}}})


def refusal(tool: ToolSchema, family: str, strategy: str) -> str | None:
    """The lane's refusal of ``tool`` beside a plain tool (None: it builds)."""
    try:
        payload = get_adapter(family).build_payload([tool, PLAIN], DecodingConstraint(strategy=strategy))
    except ConstraintError as exc:
        return str(exc)
    return dict(payload.artifact.refused).get(tool.name) if payload.artifact is not None else None


def test_the_zod_corpus_is_the_table_s() -> None:
    zod = zod_tools()
    if isinstance(zod, str):
        pytest.skip(zod)
    assert tuple(zod) == ZOD_NAMES


@pytest.mark.parametrize("name", [*all_tools(), *ZOD_NAMES])
def test_every_schema_builds_or_is_refused_for_its_documented_reason(name: str) -> None:
    tool = corpus_tool(name)
    for family in FAMILIES:
        for strategy in STRATEGIES:
            found, kind = refusal(tool, family, strategy), expected(name, family, strategy)
            if kind is None:
                assert found is None, (family, strategy, found)
            else:
                assert found is not None and re.search(KINDS[kind], found), (family, strategy, kind, found)
                assert found.startswith(f"tool {name!r}"), found  # named with the tool


def _check_cells(report: Any) -> None:
    """Every cell: refused where the table says, passing in the harness's own lanes, and a failure of
    an xgrammar-built lane explained by a defect of xgrammar's that names the keyword."""
    for cell in report.cells:
        kind = expected(cell.tool, cell.family, cell.strategy)
        where = f"{cell.tool}/{cell.family}/{cell.strategy}: {cell.outcome} {cell.classes} {cell.message}"
        if kind is not None:  # vLLM's own 400 is its gap (vllm_gap), the harness's refusals build errors
            refused = Outcome.vllm_gap if kind == "vllm" else Outcome.build_error
            assert cell.outcome is refused and re.search(KINDS[kind], cell.message or ""), where
            assert cell.unpredicted == [], where
            continue
        assert cell.unpredicted == [], where
        if (cell.family, cell.strategy) in GROUPS["own"]:
            assert cell.outcome is Outcome.passing, where
        elif cell.outcome in (Outcome.validation_error, Outcome.invalidation_error):
            assert cell.defects and all(d.label for d in cell.defects), where
        else:
            assert cell.outcome in (Outcome.passing, Outcome.not_enforced, Outcome.vllm_gap), where


def _corpus(with_zod: bool) -> list[ToolSchema]:
    tools = list(all_tools().values())
    zod = zod_tools() if with_zod else {}
    return tools + (list(zod.values()) if isinstance(zod, dict) else [])


def test_fuzz_passes_on_the_corpus_in_the_harness_grammars_and_json_schema(tmp_path: Path) -> None:
    """The quick check: ebnf and json_schema, both families, a few values per tool."""
    report = fuzz(_corpus(with_zod=True), FuzzOptions(families=FAMILIES, strategies=("ebnf", "json_schema"),
                                                     examples=2, walks=1, hypothesis_home=tmp_path))
    assert len(report.cells) >= 2 * 2 * len(all_tools())
    _check_cells(report)


@pytest.mark.slow
def test_fuzz_passes_on_the_corpus_in_every_strategy(tmp_path: Path) -> None:
    report = fuzz(_corpus(with_zod=True), FuzzOptions(families=FAMILIES, strategies=STRATEGIES, examples=4, walks=1,
                                                     hypothesis_home=tmp_path))
    assert len(report.cells) == 2 * len(STRATEGIES) * len(_corpus(with_zod=True))
    _check_cells(report)
