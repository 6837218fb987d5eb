"""``harness bench grammar --quick``: the files it writes and the last-line JSON users and CI read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app

pytestmark = pytest.mark.slow  # the bench itself, quick mode: ~15 s

SHELLPER_TOOLS = Path(__file__).resolve().parents[2] / "bundles" / "shellper" / "tools"

SUMMARY_KEYS = {
    "bench", "out", "tools", "gold_outputs", "families", "strategies", "engines", "mask_us_p50",
    "mask_us_p99", "mask_us_max", "compile_ms_cold", "compile_ms_cached", "accept_us_p50", "apply_us_p50",
    "apply_np_us_p50", "worst_at", "gold_accepted", "gold_total", "gold_rejected", "goals", "goals_met",
}


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("bench")
    calls = tmp / "calls.jsonl"
    rows = [
        {"id": "a", "calls": [{"name": "ls", "arguments": {"a": True}}]},
        {"id": "b", "name": "cat", "arguments": {"file_name": "notes.txt"}},
        {"id": "c", "expected": {"name": "tail", "arguments": {"file_name": "x.log", "lines": 3}},
         "expected_alternatives": [{"name": "tail", "arguments": {"file_name": "x.log", "lines": 3}}]},
    ]
    calls.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp / "out"
    result = CliRunner().invoke(
        app,
        ["bench", "grammar", "--quick", "--family", "qwen", "--strategy", "json_schema,structural_tag",
         "--calls", str(calls), "--tools", str(SHELLPER_TOOLS), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    return out, result.output.strip().splitlines()


def test_writes_json_markdown_and_plots(bench_run: tuple[Path, list[str]]) -> None:
    out, _ = bench_run
    for name in ("bench.json", "bench.md", "strategies.png", "growth_tools.png", "growth_length.png"):
        assert (out / name).stat().st_size > 0, name
    bench = json.loads((out / "bench.json").read_text())
    assert bench["inputs"]["gold_outputs"] == 3  # the duplicate alternative is dropped
    cells = {(r["strategy"], r["engine"]) for r in bench["main"]}
    assert cells == {(s, e) for s in ("json_schema", "structural_tag") for e in ("xgrammar", "llguidance")}
    for row in bench["main"]:
        assert row["gold_accepted"] == row["gold_total"] == 3, row.get("rejections")
    assert {r["tools"] for r in bench["growth_tools"]} == {1, 18}
    assert {r["series"] for r in bench["growth_length"]} == {"string_chars", "parallel_calls"}
    assert all(r["accepted"] for r in bench["growth_length"] if r["walk_ms"] is not None)
    md = (out / "bench.md").read_text()
    assert "| qwen | json_schema |" in md and "llg mask p50 us" in md


def test_last_line_is_the_summary(bench_run: tuple[Path, list[str]]) -> None:
    out, lines = bench_run
    summary = json.loads(lines[-1])
    assert SUMMARY_KEYS <= summary.keys()
    assert summary["out"] == str(out)
    assert summary["gold_rejected"] == 0 and summary["gold_total"] == 6
    assert set(summary["goals"]) == {"mask_us_p50", "mask_us_p99", "compile_ms_cold", "compile_ms_cached"}
    assert summary["mask_us_p50"] <= summary["mask_us_p99"] <= summary["mask_us_max"]
    assert summary["llguidance"]["not_expressible"] == []


def test_rejects_an_unknown_strategy(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "grammar", "--strategy", "regex", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "regex" in result.output


def test_synthetic_tools_are_deterministic_nested_and_their_calls_valid() -> None:
    import jsonschema

    from harness.bench.synthetic import long_text, synthetic_calls, synthetic_tools

    tools = synthetic_tools(100)
    assert [t.name for t in synthetic_tools(18)] == [t.name for t in tools[:18]]
    assert synthetic_tools(18) == tools[:18]
    shapes = {p.get("type") for t in tools for p in t.parameters["properties"].values()}
    assert {"object", "array", "string", "integer", "boolean"} <= shapes
    assert any("enum" in p for t in tools for p in t.parameters["properties"].values())
    by_name = {t.name: t for t in tools}
    for call in synthetic_calls(tools, 40):
        jsonschema.validate(call.arguments, by_name[call.name].parameters)
    assert len(long_text(5000)) == 5000 and "\n" in long_text(5000)


def test_the_100_tool_compile_is_a_goal_of_its_own(tmp_path: Path) -> None:
    from harness.bench.grammar.output import summarize
    from harness.bench.grammar.results import GrammarBench
    from harness.bench.grammar.run import GOALS

    def row(family: str, strategy: str, **figures: float) -> dict[str, object]:
        return {"family": family, "strategy": strategy, "engine": "xgrammar", "expressible": True,
                "gold_accepted": 1, "gold_total": 1, **figures}

    bench = {
        "goals": GOALS,
        "inputs": {"tools": 18, "tool_names": [], "gold_outputs": 1, "gold_source": "-", "parallel": False},
        "machine": {"platform": "-", "cpus": 1}, "versions": {}, "setup_s": {}, "started_at": "-",
        "config": {"families": ["qwen"], "strategies": ["ebnf", "json_schema"], "engines": ["xgrammar"]},
        "main": [row("qwen", "ebnf", compile_ms_cold=20.0), row("qwen", "json_schema", compile_ms_cold=60.0)],
        "growth_tools": [
            {**row("qwen", "ebnf", compile_ms_cold=80.0), "tools": 100},
            {**row("qwen", "json_schema", compile_ms_cold=120.0), "tools": 100},
            {**row("qwen", "json_schema", compile_ms_cold=30.0), "tools": 18},
        ],
    }
    goals = summarize(GrammarBench.model_validate(bench), tmp_path).dump()["goals"]
    assert goals["compile_ms_cold"] == {"goal": 50.0, "worst": 60.0, "met": False}
    assert goals["compile_ms_cold_100_tools"] == {"goal": 100.0, "worst": 120.0, "met": False}
