"""The shipped mcp-git suite on the real mcp-server-git (PyPI, the ``mcp`` extra): the oracle's gold
replay matches the repository state the ground truth leaves (work tree, and what git_status, git_branch
and git_log say), and a commit with the wrong message fails with the log's diff."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from harness.vocabulary import ErrorKind

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "mcp-git"

pytestmark = pytest.mark.skipif(shutil.which("mcp-server-git") is None or shutil.which("git") is None,
                                reason="mcp-server-git or git is not installed: pip install -e '.[mcp]'")


@pytest.mark.slow
def test_the_oracle_replays_the_first_cases_at_state_match_one(tmp_path: Path) -> None:
    """Five cases on one lane (a Python server starts in 1-2 s, three times a sample; every case and
    lane: ``harness run suites/mcp-git --engine oracle``)."""
    from harness.eval.run import RunOptions, RunPlace, run_suite
    from harness.eval.store import read_summary

    options = RunOptions(engine="oracle", families=("qwen",), strategies=("ebnf",), limit=5)
    outcome = asyncio.run(run_suite(SUITE, options, RunPlace(out=tmp_path / "run")))
    assert outcome.errors == 0
    rows = {r.metric: (r.value, r.n) for r in read_summary(tmp_path / "run")}
    assert rows["state_match"] == (1.0, 5) and rows["exact_match"] == (1.0, 5)


async def test_a_wrong_commit_message_fails_with_the_logs_diff() -> None:
    from harness.bundles import bundle_source
    from harness.eval.data import load_suite
    from harness.eval.score import Scorer
    from harness.eval.store import SampleRecord

    suite = load_suite(SUITE)
    _, source = bundle_source(suite.bundle_dir)
    scorer = Scorer([c for c in suite.cases if c.id == "commit-staged"], [t.schema for t in source.tools], "oracle",
                    source)
    calls = [{"name": "git_commit", "arguments": {"repo_path": ".", "message": "wrong"}}]
    sample = SampleRecord.model_validate({
        "sample_id": "commit-staged/qwen/ebnf/1", "case_id": "commit-staged", "family": "qwen", "strategy": "ebnf",
        "epoch": 1, "kind": "episode", "status": "ok", "error_kind": None, "error": None, "duration_ms": 1.0,
        "harness_ms": 0.1, "steps": [{"output": "x", "tool_calls": calls, "parse_errors": [], "tool_results": [],
                                      "latency_ms": 1.0, "ttft_ms": None, "usage": None, "stats": None, "turn": 0}],
    })
    rows = {row.metric: row for row in await scorer.score(sample)}
    assert rows["state_match"].error_kind == ErrorKind.state_tree_differs
    found = scorer.differences[sample.sample_id]
    changed = [line for line in found.lines if line[:1] in "+-" and line[:2] not in ("++", "--")]
    assert "-  Message: seconds as float" in changed and "+  Message: wrong" in changed
