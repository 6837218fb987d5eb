"""BFCL's single-turn categories imported from its package: tools converted as BFCL converts them,
the oracle's answers accepted by BFCL's own evaluation, bad entries kept and tagged, the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
                    reason="BFCL's reference package is not installed: pip install --no-deps bfcl-eval==2026.3.23")

from bfcl_single_side import bfcl_entry_verdict, entries, fc_result
from typer.testing import CliRunner

from harness.agents.types import json_schema_types
from harness.bfcl.data import bfcl_convert, tool_schemas
from harness.bfcl.single_import import (
    AST_CATEGORIES,
    BAD_ENTRY,
    IRRELEVANCE_CATEGORIES,
    NO_VALID_ANSWER,
    SINGLE_TURN,
    UNPASSABLE,
    default_bundle,
    import_bfcl_single_turn,
)
from harness.cli.main import app
from harness.eval.data import Suite, load_suite, validate_suite
from harness.eval.data.cases import SingleTurnCase
from harness.sandbox.validation import argument_check

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "live_simple": 258,
         "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24, "irrelevance": 240,
         "live_irrelevance": 884}
"""Entries per category in bfcl-eval 2026.3.23."""


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Suite]:
    out = tmp_path_factory.mktemp("bfcl-single")
    for category in SINGLE_TURN:
        import_bfcl_single_turn(category, None, out / category, bundle=str(ROOT / "bundles" / default_bundle([category])))
    return {c: load_suite(out / c) for c in SINGLE_TURN}


def _cases(suites: dict[str, Suite]) -> list[SingleTurnCase]:
    return [c for s in suites.values() for c in s.single_turn_cases()]


# (BFCL doc, converted function): BFCL's conversion rules, one each
CONVERSIONS = [
    ({"name": "a.b.c", "description": "d", "parameters": {"type": "dict", "properties": {}, "required": []}},
     {"name": "a_b_c", "description": "d", "parameters": {"type": "object", "properties": {}, "required": []}}),
    ({"name": "f", "description": "", "parameters": {"type": "dict", "properties": {
        "x": {"type": "float", "description": "X."}, "t": {"type": "tuple", "items": {"type": "integer"}},
        "n": {"description": "no type"}, "w": {"type": "weird"}, "a": {"type": "any"}}}},
     {"name": "f", "description": "", "parameters": {"type": "object", "properties": {
         "x": {"type": "number", "format": "float", "description": "X. This is a float type value."},
         "t": {"type": "array", "items": {"type": "integer"}}, "n": {"description": "no type", "type": "string"},
         "w": {"type": "string"}, "a": {"type": "string"}}}}),
    ({"name": "g", "description": "", "parameters": {"type": "dict", "properties": {
        "l": {"type": "array", "items": {"type": "array", "items": {"type": "float"}}},
        "o": {"type": "array", "items": {"type": "dict", "properties": {"k": {"type": "bool"}}}}}}},
     {"name": "g", "description": "", "parameters": {"type": "object", "properties": {
         "l": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
         "o": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "boolean"}}}}}}}),
]


@pytest.mark.parametrize(("doc", "expected"), CONVERSIONS)
def test_tools_are_converted_as_bfcl_converts_them(doc: dict, expected: dict) -> None:
    assert bfcl_convert()([doc]) == [{"type": "function", "function": expected}]
    (schema,) = tool_schemas([doc])
    assert (schema.name, schema.parameters) == (expected["name"], expected["parameters"])


def test_every_function_doc_converts_to_json_schema_types() -> None:
    """All ~8,500 function docs of the ten categories: BFCL's conversion leaves no BFCL type name a
    grammar would have to guess at, and no two tools of an entry share a converted name."""
    for category in SINGLE_TURN:
        for entry in entries(category):
            converted = [t["function"]["parameters"] for t in bfcl_convert()(entry["function"])]
            assert all(json_schema_types(p) is p for p in converted), entry["id"]
            schemas = tool_schemas(entry["function"])
            assert len({s.name for s in schemas}) == len(schemas), entry["id"]


def test_a_doc_bfcl_cannot_convert_is_an_error_naming_the_function() -> None:
    doc = {"name": "f", "description": "", "parameters": {"type": "dict", "properties": {
        "l": {"type": "array", "items": {"type": "mystery"}}}}}
    with pytest.raises(ValueError, match=r"functions \('f'\): BFCL's conversion fails"):
        tool_schemas([doc])


def test_every_entry_is_imported(suites: dict[str, Suite]) -> None:
    assert {c: len(s.cases) for c, s in suites.items()} == SIZES
    assert all(s.spec.kind == "single_turn" and s.spec.allow_text_answer for s in suites.values())
    assert all(not c.expected and not c.possible_answer for k in IRRELEVANCE_CATEGORIES for c in suites[k].single_turn_cases())


def test_the_oracles_answer_passes_bfcls_own_evaluation_unless_bfcl_passes_none(suites: dict[str, Suite]) -> None:
    """Every AST entry's replayed answer is one BFCL accepts, except the entries tagged unpassable,
    where BFCL's own checker accepts none of its listed answers (and rejects ours)."""
    by_id = {e["id"]: e for c in AST_CATEGORIES for e in entries(c)}
    wrong = []
    for case in (c for k in AST_CATEGORIES for c in suites[k].single_turn_cases()):
        valid, kind = bfcl_entry_verdict(by_id[case.id], fc_result([(c.name, c.arguments) for c in case.expected]))
        if valid == (UNPASSABLE in case.tags):
            wrong.append(f"{case.id} {case.tags}: BFCL valid={valid} ({kind})")
    assert not wrong, wrong[:10]


def test_bad_entries_are_kept_tagged_and_replay_an_answer_that_fits(suites: dict[str, Suite]) -> None:
    cases = _cases(suites)
    bad = [c for c in cases if BAD_ENTRY in c.tags]
    assert 180 <= len(bad) <= 200  # ~8% of the 2,351 AST entries, mostly live_multiple and live_simple
    assert sum(c.category == "live_multiple" for c in bad) > 100
    for case in cases:
        tools = {t.name: argument_check(t.parameters) for t in case.tool_schemas()}
        fits = all(c.name in tools and tools[c.name].is_valid(c.arguments) for c in case.expected)
        assert fits == (NO_VALID_ANSWER not in case.tags), case.id
        assert (NO_VALID_ANSWER not in case.tags or BAD_ENTRY in case.tags) and (BAD_ENTRY in case.tags) == bool(case.note)


def test_the_written_suites_validate(suites: dict[str, Suite]) -> None:
    for suite in suites.values():
        assert validate_suite(suite.path) == []


def test_cli_imports_every_category_in_one_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "bfcl"
    result = CliRunner().invoke(app, ["import", "bfcl", "single_turn", "--out", str(out), "--no-text-answer"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(SINGLE_TURN)
    assert "wrote 1053 cases" in result.output and "bad entries tagged bad_entry" in result.output
    assert load_suite(out / "irrelevance").spec.allow_text_answer is False
    assert {c: load_suite(out / c).bundle_dir.name for c in ("parallel", "live_parallel_multiple", "multiple")} == {
        "parallel": "bfcl", "live_parallel_multiple": "bfcl", "multiple": "bfcl-one-call"}
    checked = CliRunner().invoke(app, ["validate", str(out / "live_simple")])
    assert checked.exit_code == 0 and "each case's own tools" in checked.output, checked.output


def test_a_broken_entry_file_is_one_error_line_naming_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(entries("irrelevance")[0])
    path = tmp_path / "BFCL_v4_irrelevance.json"
    path.write_text(good + "\n" + good.replace('"question"', '"questions"') + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["import", "bfcl", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert f"{path}:2:" in result.output and "Traceback" not in result.output
