"""Re-scoring every kept run gives summary.json and errors.json byte for byte as scoring did before the
run configuration and the recorder were reshaped (issue 29): the refactor changed no figure.

The expected bytes (``tests/data/rescored/<run>/``) are what ``harness score`` wrote for each run of
``tests/data/runs`` at the commit named in ``tests/data/rescored/README.md``. The kept baseline
``results/baselines/smoke`` holds no samples.jsonl, so it cannot be re-scored: its run.json is loaded
(old run.json files still load) and checked against the options it records.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from harness.eval.score import score_run
from harness.eval.store import read_run

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "runs"
RESCORED = ROOT / "tests" / "data" / "rescored"
KEPT = sorted(p.name for p in RUNS.iterdir() if (p / "samples.jsonl").exists())


def test_every_kept_run_has_its_expected_bytes() -> None:
    assert KEPT and KEPT == sorted(p.name for p in RESCORED.iterdir() if p.is_dir())


@pytest.mark.parametrize("run", KEPT)
@pytest.mark.parametrize("name", ["summary.json", "errors.json"])
def test_rescoring_a_kept_run_gives_the_same_bytes(run: str, name: str, tmp_path: Path) -> None:
    copy = tmp_path / run
    shutil.copytree(RUNS / run, copy)
    asyncio.run(score_run(copy, suite_dir=ROOT / read_run(copy).suite.path))
    assert (copy / name).read_bytes() == (RESCORED / run / name).read_bytes()


def test_the_kept_baseline_still_loads_with_its_options() -> None:
    run = read_run(ROOT / "results" / "baselines" / "smoke")
    options = run.options
    assert (options.engine, options.families, options.epochs, options.max_tokens) == (
        "oracle", ("function_gemma", "qwen"), 1, 64)
    assert options.strategies == ("none", "ebnf", "structural_tag", "json_schema")
