"""The sharded-run workflow users copy (docs/ci/sharded-run.yml): its steps run as written, with N = 3
shards of the smoke suite on the oracle, and the merged run equals the unsharded run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.eval.store import read_summary
from harness.vocabulary import SAMPLE_METRICS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "ci" / "sharded-run.yml"


def _workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _step(job: dict[str, Any], name: str) -> str:
    return next(str(s["run"]) for s in job["steps"] if s.get("name") == name)


def _bash(command: str, cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def _environment(tmp_path: Path, flow: dict[str, Any]) -> dict[str, str]:
    """The workflow's env block on this checkout: ``harness`` is this worktree's CLI, the suite an absolute
    path, and the answers bounded so that the run stays short (and some are cut: failures to count)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "harness"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m harness.cli.main "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ, **{k: str(v) for k, v in flow["env"].items()})
    env["SUITE"] = str(ROOT / env["SUITE"])
    env["RUN_ARGS"] += " --max-tokens 16"
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT)
    return env


def _answers(run_dir: Path) -> list[tuple[Any, ...]]:
    lines = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return [(s["sample_id"], s["status"], s["error_kind"], [(t["output"], t["tool_calls"]) for t in s["steps"]])
            for s in lines]


def _rates(run_dir: Path) -> dict[tuple[str, str, str], Any]:
    """Every rate with its interval (timings differ from run to run: left out)."""
    return {(r.family, r.strategy, r.metric): (r.value, r.n, r.ci_low, r.ci_high) for r in read_summary(run_dir)
            if r.metric in SAMPLE_METRICS}


def test_the_workflow_matrix_has_as_many_shards_as_it_says() -> None:
    flow = _workflow()
    assert flow["jobs"]["shard"]["strategy"]["matrix"]["shard"] == list(range(1, int(flow["env"]["SHARDS"]) + 1))
    assert flow["jobs"]["merge"]["needs"] == "shard"


def test_the_workflows_steps_merge_into_the_unsharded_run(tmp_path: Path) -> None:
    flow = _workflow()
    env = _environment(tmp_path, flow)
    shard_job, merge_job = flow["jobs"]["shard"], flow["jobs"]["merge"]
    run_step = _step(shard_job, "Run one shard")
    for index in shard_job["strategy"]["matrix"]["shard"]:
        _bash(re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", str(index), run_step), tmp_path, env)
        # download-artifact: each uploaded shard lands in shards/<artifact name>
        shutil.move(tmp_path / "shards" / f"s{index}", tmp_path / "shards" / f"shard-{index}")
    _bash(_step(merge_job, "Merge the shards"), tmp_path, env)
    _bash(_step(merge_job, "Report"), tmp_path, env)
    _bash(run_step.split(" --shard")[0] + " --out whole", tmp_path, env)  # the same run, unsharded
    merged = tmp_path / "merged"
    assert _answers(merged) == _answers(tmp_path / "whole")
    assert _rates(merged) == _rates(tmp_path / "whole")
    assert (merged / "report.md").is_file()
