"""A suite run through ``harness serve`` (the OpenAI client path) scores the same as in-process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.eval.store import METRICS, load_samples, read_summary

ROOT = Path(__file__).resolve().parents[2]


def _run(out: Path, *engine_args: str) -> tuple[dict, dict]:
    """(scores by family/strategy/metric, per-sample calls and parse-error kinds) of one run."""
    cmd = [
        sys.executable, "-m", "harness.cli.main", "run", str(ROOT / "suites" / "smoke"),
        "--family", "function_gemma", "--strategy", "none,ebnf,json_schema", "--limit", "3",
        "--max-tokens", "48", "--out", str(out), *engine_args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    scores = {(r.family, r.strategy, r.metric): (r.value, r.n) for r in read_summary(out) if r.metric in METRICS}
    samples = {
        sample.sample_id: [
            ([(c.name, c.arguments) for c in step.tool_calls], [e.kind for e in step.parse_errors])
            for step in sample.steps
        ]
        for sample in load_samples(out / "samples.jsonl").samples.values()
    }
    return scores, samples


@pytest.mark.slow
def test_smoke_suite_scores_the_same_in_process_and_through_the_server(local_server, tmp_path):
    from harness.engines.local import LOCAL_MODEL_ID

    in_process = _run(tmp_path / "local", "--engine", "local")
    served = _run(tmp_path / "served", "--engine", "openai", "--base-url", local_server.url, "--model", LOCAL_MODEL_ID)
    scores, samples = in_process
    assert scores and len(samples) == 9
    assert served[0] == scores
    assert served[1] == samples  # greedy and bit-identical: the same calls and errors, sample by sample
