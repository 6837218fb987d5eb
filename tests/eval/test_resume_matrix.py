"""``--resume`` never mixes two runs in one directory (issue 14, item 6): a command asking for another
matrix than run.json records is refused with every difference named; options left out take the
recorded values, so the run resumes exactly as it was started. ``harness score`` refuses a directory
whose samples fall outside the run it records."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.eval.run import RunError, RunOptions, RunPlace, run_suite
from harness.eval.store import load_samples, read_run, read_summary

SMOKE = Path(__file__).resolve().parents[2] / "suites" / "smoke"
STARTED = {"strategies": ["ebnf"], "limit": 3}
"""The interrupted run: ebnf only, the first 3 cases, both families (6 samples)."""


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose last two samples were never saved (as a kill leaves it)."""
    out = tmp_path_factory.mktemp("resume") / "run"
    asyncio.run(run_suite(SMOKE, RunOptions(engine="oracle", **STARTED), RunPlace(out=out)))  # type: ignore[arg-type]
    samples = out / "samples.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    samples.write_text("".join(lines[:-2]), encoding="utf-8")
    return out


def copy_of(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


OTHER_MATRIX: list[tuple[dict[str, Any], str]] = [
    ({"strategies": ["json_schema"]}, "strategies ['json_schema'] (recorded: ['ebnf'])"),
    ({"strategies": ["ebnf", "json_schema"]}, "strategies ['ebnf', 'json_schema'] (recorded: ['ebnf'])"),
    ({"families": ["qwen"]}, "families ['qwen'] (recorded: ['function_gemma', 'qwen'])"),
    ({"epochs": 2}, "epochs 2 (recorded: 1)"),
    ({"limit": 4}, "limit 4 (recorded: 3)"),
    ({"max_tokens": 7}, "max_tokens 7 (recorded: "),
    ({"engine": "openai"}, "engine 'openai' (recorded: 'oracle')"),
    ({"target": "vllm"}, "target 'vllm' (recorded: None)"),
    ({"temperature": 1.0}, "temperature 1.0 (recorded: 0.0)"),
    ({"seed": 123456789012}, "seed 123456789012 (recorded: "),
]


@pytest.mark.parametrize(("given", "difference"), OTHER_MATRIX, ids=[str(g) for g, _ in OTHER_MATRIX])
async def test_another_matrix_is_refused_naming_the_difference(interrupted: Path, tmp_path: Path,
                                                              given: dict[str, Any], difference: str) -> None:
    out = copy_of(interrupted, tmp_path)
    before = (out / "samples.jsonl").read_bytes(), (out / "run.json").read_bytes()
    with pytest.raises(RunError, match="cannot resume") as info:
        await run_suite(SMOKE, RunOptions(engine=given.pop("engine", "oracle"), **given), RunPlace(out=out, resume=True))
    assert difference in str(info.value)
    assert ((out / "samples.jsonl").read_bytes(), (out / "run.json").read_bytes()) == before  # nothing touched


async def test_several_differences_are_all_named(interrupted: Path, tmp_path: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    with pytest.raises(RunError) as info:
        await run_suite(SMOKE, RunOptions(engine="oracle", strategies=["none"], epochs=3), RunPlace(out=out, resume=True))
    assert "strategies ['none']" in str(info.value) and "epochs 3" in str(info.value)


@pytest.mark.parametrize("given", [{}, STARTED], ids=["options left out", "the same options"])
async def test_a_resume_continues_exactly_the_recorded_run(interrupted: Path, tmp_path: Path,
                                                           given: dict[str, Any]) -> None:
    out = copy_of(interrupted, tmp_path)
    outcome = await run_suite(SMOKE, RunOptions(engine="oracle", **given), RunPlace(out=out, resume=True))
    assert (outcome.skipped, outcome.ran, outcome.total) == (4, 2, 6)
    run = read_run(out)
    assert (run.options.strategies, run.options.limit, run.options.epochs) == (("ebnf",), 3, 1) and len(run.resumed_at) == 1
    samples = load_samples(out / "samples.jsonl").samples.values()
    assert {(s.family, s.strategy) for s in samples} == {("function_gemma", "ebnf"), ("qwen", "ebnf")}
    assert {row.strategy for row in read_summary(out)} == {"ebnf"}
    assert all(row.n == 3 for row in read_summary(out) if row.metric == "validity")


def test_the_cli_says_what_differs(interrupted: Path, tmp_path: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    result = CliRunner().invoke(app, ["run", str(SMOKE), "--engine", "oracle", "--strategy", "json_schema",
                                      "--out", str(out), "--resume"])
    assert result.exit_code == 2
    assert "strategies ['json_schema'] (recorded: ['ebnf'])" in result.stderr
    assert "Leave these options out to continue the recorded run" in result.stderr


def test_score_refuses_samples_of_another_run(interrupted: Path, tmp_path: Path) -> None:
    """A directory mixed before this check existed: run.json says json_schema, the samples are ebnf."""
    out = copy_of(interrupted, tmp_path)
    run_json = out / "run.json"
    run_json.write_text(run_json.read_text(encoding="utf-8").replace('"ebnf"', '"json_schema"'), encoding="utf-8")
    result = CliRunner().invoke(app, ["score", str(out)])
    assert result.exit_code == 2
    assert "is not part of the run run.json records" in result.stderr
    assert "samples of two runs are mixed here" in result.stderr
