"""``harness fuzz`` end to end with the real tokenizers and compiled grammars: a planted builder bug is
caught and shrunk, kept failures are replayed, bad input is named, the command's interface holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.agents import ToolSchema
from harness.cli.main import app
from harness.fuzz import FuzzOptions, Outcome, fuzz, write_calls_files
from harness.grammar.formats._ebnf import EbnfBuilder

pytestmark = pytest.mark.fuzz

WC = ToolSchema("wc", "Count.", {"type": "object", "properties": {
    "file_name": {"type": "string"}, "mode": {"type": "string", "enum": ["l", "w", "c"]}}, "required": ["file_name"]})
LS = ToolSchema("ls", "List.", {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": []})


def options(tmp_path: Path, **extra: Any) -> FuzzOptions:
    base: dict[str, Any] = {"families": ("function_gemma",), "strategies": ("ebnf",), "examples": 60,
                            "database": tmp_path / "db", "jobs": 1}
    return FuzzOptions(**{**base, **extra})


@pytest.fixture
def planted_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A builder that drops the last value of every enum."""
    literal = EbnfBuilder.literal

    def dropping(self: EbnfBuilder, values: list[Any], hint: str) -> str:
        return literal(self, values[:-1] if len(values) > 1 else values, hint)

    monkeypatch.setattr(EbnfBuilder, "literal", dropping)


def test_a_dropped_enum_value_is_caught_and_shrunk_to_one_line(tmp_path: Path, planted_bug: None) -> None:
    report = fuzz([WC, LS], options(tmp_path))
    cells = {c.tool: c for c in report.cells}
    assert cells["ls"].outcome is Outcome.passing
    wc = cells["wc"]
    assert wc.outcome is Outcome.validation_error and wc.valid_rejected > 0
    (found,) = [c for c in wc.counterexamples if c.outcome is Outcome.validation_error]
    assert found.shrunk and found.expect == "accepted"
    assert found.calls == [{"name": "wc", "arguments": {"file_name": "", "mode": "c"}}]
    (path,) = write_calls_files(report, tmp_path / "ce")
    assert len(path.read_text().splitlines()) == 1


def test_a_rerun_starts_from_the_kept_failure(tmp_path: Path, planted_bug: None) -> None:
    fuzz([WC], options(tmp_path))
    again = fuzz([WC], options(tmp_path, examples=1, walks=0))
    (cell,) = again.cells
    assert cell.examples <= 1 and cell.outcome is Outcome.validation_error
    assert cell.counterexamples[0].calls == [{"name": "wc", "arguments": {"file_name": "", "mode": "c"}}]


def test_without_the_bug_the_same_tools_pass(tmp_path: Path) -> None:
    report = fuzz([WC, LS], options(tmp_path, families=("function_gemma", "qwen"),
                                    strategies=("ebnf", "structural_tag", "json_schema"), examples=40))
    assert {c.outcome for c in report.cells} == {Outcome.passing}
    assert all(c.compile_ms and c.mask_us_p50 is not None and c.mutants > 0 for c in report.cells)


BAD_INPUT = [
    ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}, "required": ["n"]},
     Outcome.schema_unsatisfiable),
    ({"type": "object", "properties": {"n": {"type": "intger"}}}, Outcome.schema_invalid),
    ({"type": "object", "properties": {"r": {"$ref": "#/$defs/x"}}, "required": ["r"],  # a cycle, no base case
      "$defs": {"x": {"type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "required": ["x"]}}},
     Outcome.schema_unsatisfiable),  # no finite value: none is drawn (every strategy refuses it by name too)
]


@pytest.mark.parametrize(("schema", "outcome"), BAD_INPUT)
def test_bad_input_is_a_named_outcome(tmp_path: Path, schema: dict[str, Any], outcome: Outcome) -> None:
    report = fuzz([ToolSchema("t", "T.", schema), LS], options(tmp_path, examples=10))
    cells = {c.tool: c for c in report.cells}
    assert cells["t"].outcome is outcome and cells["t"].message
    assert cells["ls"].outcome is Outcome.passing


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["fuzz", *args])


def test_the_command_keeps_what_it_found(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([WC.to_openai(), LS.to_openai(), {"function": {"name": "bad", "parameters": {"type": "object", "properties": []}}}]))
    args = ["--tools", str(tools), "--family", "qwen", "--strategy", "ebnf", "--examples", "10", "--jobs", "1"]
    result = run(*args, "--out", str(tmp_path / "out"), "--junit", str(tmp_path / "fuzz.xml"))
    assert result.exit_code == 1, result.output  # the unreadable tool is a failing cell
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["outcomes"] == {"passing": 2, "schema_invalid": 1} and summary["failing"] == ["bad/qwen/ebnf"]
    assert (tmp_path / "out" / "report.json").is_file() and (tmp_path / "fuzz.xml").is_file()
    baseline = tmp_path / "expected.json"
    assert run(*args, "--out", str(tmp_path / "o2"), "--expected", str(baseline), "--update").exit_code == 0
    again = run(*args, "--out", str(tmp_path / "o3"), "--expected", str(baseline))
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize(("args", "message"), [
    (["--tools", "no/such/tools.json"], "no/such/tools.json"),
    (["--tools", "{tools}", "--update"], "--update needs --expected"),
    (["--tools", "{tools}", "--expected", "no/such/baseline.json"], "no/such/baseline.json"),
    (["--tools", "{tools}", "--examples", "0"], "--examples"),
])
def test_bad_usage_exits_2_naming_it(tmp_path: Path, args: list[str], message: str) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([LS.to_openai()]))
    result = run(*[a.replace("{tools}", str(tools)) for a in args])
    assert result.exit_code == 2 and message in result.output, result.output


@pytest.mark.slow
def test_keyword_tools_show_only_what_the_keyword_table_predicts(tmp_path: Path) -> None:
    """Enums, nested arrays of objects, formats, oneOf and bounds: every cell's classes are those the
    README's keyword table predicts (refused keywords: build errors; defective ones: errors the fuzz
    finds), and none passes a keyword by ignoring it."""
    from harness.fuzz.inputs import load_fuzz_tools

    tools = load_fuzz_tools(Path(__file__).parent / "data" / "keyword_tools.json").tools
    report = fuzz(tools, options(tmp_path, families=("function_gemma", "qwen"),
                                 strategies=("ebnf", "structural_tag", "json_schema"), examples=60, jobs=2))
    assert [c.key for c in report.cells if c.unpredicted] == []
    assert not any(c.not_enforced for c in report.cells)
    assert {c.outcome for c in report.cells} >= {Outcome.build_error}


@pytest.mark.slow
def test_target_vllm_judges_every_text_too(tmp_path: Path) -> None:
    """vLLM's own grammar backend (in process) walks the same texts and agrees on the SHELLper-like
    tools; a disagreement would be its own outcome class, with the text kept."""
    pytest.importorskip("vllm")
    from harness.fuzz.run import build_grammar

    opts = options(tmp_path, families=("function_gemma", "qwen"), examples=10, target="vllm")
    assert build_grammar("qwen", "ebnf", [WC, LS], opts).target is not None
    report = fuzz([WC, LS], opts)
    assert {c.outcome for c in report.cells} == {Outcome.passing}
    assert all(c.target_disagreements == 0 for c in report.cells)
