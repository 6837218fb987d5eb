"""``harness fuzz --reference llguidance``: the masks of xgrammar and llguidance compared prefix by prefix
with the real tokenizers, each disagreement classified by continuing the walk and judging it with the
tool's validator; counts per class, keyword and strategy in the report, the table, JSON and JUnit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.agents import ToolSchema
from harness.cli.main import app
from harness.fuzz import FuzzOptions, fuzz
from harness.fuzz.reference import OVER, SPECIAL

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]
pytest.importorskip("llguidance")

MAIL = ToolSchema("mail", "Send mail.", {"type": "object", "properties": {
    "to": {"type": "string", "format": "email"}, "n": {"type": "integer", "minimum": 1, "maximum": 9}},
    "required": ["to", "n"]})
WC = ToolSchema("wc", "Count.", {"type": "object", "properties": {
    "file_name": {"type": "string"}, "mode": {"type": "string", "enum": ["l", "w", "c"]}}, "required": ["file_name"]})


def options(tmp_path: Path, **extra: Any) -> FuzzOptions:
    base: dict[str, Any] = {"families": ("qwen",), "strategies": ("json_schema",), "examples": 20,
                            "database": tmp_path / "db", "jobs": 1, "shrink": False, "reference": "llguidance",
                            "cell_timeout_s": 60.0}
    return FuzzOptions(**{**base, **extra})


def test_every_cell_is_compared_or_says_why_not(tmp_path: Path) -> None:
    report = fuzz([WC], options(tmp_path, families=("function_gemma", "qwen"),
                                strategies=("ebnf", "structural_tag", "json_schema"), examples=4, cell_timeout_s=5.0))
    assert len(report.cells) == 6
    for cell in report.cells:
        ref = cell.reference
        assert ref is not None
        if not ref.comparable:
            assert ref.note, "a cell that is not compared says why"
            continue
        assert ref.instances > 0 and ref.prefixes > 0, cell.key
        assert sum(ref.classes.values()) == ref.classified
        assert set(ref.classes) <= {f"{c}:{e}" for c in (OVER, "under_constraining") for e in ("xgrammar", "llguidance")} | {
            SPECIAL, "unresolved"}


def test_the_command_reports_the_differential_in_the_table_json_and_junit(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "mail", "parameters": MAIL.parameters}}]))
    junit = tmp_path / "fuzz.xml"
    result = CliRunner().invoke(app, [
        "fuzz", "--tools", str(tools), "--family", "qwen", "--strategy", "json_schema", "--examples", "30",
        "--reference", "llguidance", "--out", str(tmp_path / "out"), "--junit", str(junit), "--jobs", "1"])
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    row = summary["reference"]["qwen/json_schema"]
    assert row["engine"] == "llguidance" and row["prefixes"] > 0
    assert "token-level differential" in result.stdout and "over: xgrammar" in result.stdout
    assert "reference.qwen/json_schema." in junit.read_text()
    assert summary["defective"]["qwen/json_schema"] == ["format:email"]
    assert (tmp_path / "out" / "defects" / "format-email-rejects_valid" / "reproduce.py").is_file()
    (cell,) = json.loads((tmp_path / "out" / "report.json").read_text())["cells"]
    ref = cell["reference"]  # xgrammar masks the valid address llguidance lets through
    assert ref["by_keyword"][f"{OVER}:xgrammar"]["format:email"] > 0
    example = next(e for e in ref["examples"] if e["cls"] == f"{OVER}:xgrammar")
    assert example["allowed_by"] == "llguidance" and example["verdict"].startswith("valid")


def test_a_reference_that_lets_an_invalid_value_through_is_classed_under_constraining(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted bug: the reference engine's grammar also allows ``mode: "x"``, outside the enum. Where a
    walk reaches the enum, llguidance allows tokens xgrammar masks, and every completion from them is a
    call the tool's validator rejects: under-constraining by llguidance, at the enum, never blamed on
    xgrammar."""
    import dataclasses

    import harness.grammar.guidance as guidance

    real = guidance.to_llguidance
    enum_rule = '"\\"l\\"" | "\\"w\\"" | "\\"c\\""'

    def planted(artifact: Any, family: str) -> tuple[str, list[str]]:
        assert enum_rule in artifact.value
        return real(dataclasses.replace(artifact, value=artifact.value.replace(enum_rule, enum_rule + ' | "\\"x\\""')), family)

    monkeypatch.setattr(guidance, "to_llguidance", planted)
    report = fuzz([WC], options(tmp_path, strategies=("ebnf",), examples=40))
    (cell,) = report.cells
    ref = cell.reference
    assert ref is not None and ref.comparable
    under = ref.by_keyword.get("under_constraining:llguidance", {})
    assert under.get("enum", 0) > 0, ref.classes
    assert "under_constraining:xgrammar" not in ref.classes
    example = next(e for e in ref.examples if e.cls == "under_constraining:llguidance")
    assert example.allowed_by == "llguidance" and '"x' in example.completion and "enum" in example.verdict
