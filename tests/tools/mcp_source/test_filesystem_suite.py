"""The shipped mcp-filesystem suite on the real official filesystem server (npm): the oracle's gold
replay matches the state the ground truth leaves and each case's expected files, and a wrong answer
fails with the folder's own diff. Needs Node and the server installed beside the bundle (the README's
test command does it: ``npm ci --prefix bundles/mcp-filesystem``)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.vocabulary import ErrorKind

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "mcp-filesystem"
SERVER = ROOT / "bundles" / "mcp-filesystem" / "node_modules" / ".bin" / "mcp-server-filesystem"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (the filesystem server is a Node package)"),
    pytest.mark.skipif(not SERVER.exists(), reason="the filesystem server is not installed: "
                       "npm ci --prefix bundles/mcp-filesystem"),
]
pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra: pip install -e '.[mcp]'")


@pytest.mark.slow
def test_the_oracle_replays_every_case_at_state_match_one(tmp_path: Path) -> None:
    """One lane (every lane: ``harness run suites/mcp-filesystem --engine oracle``, about 80 s here)."""
    from harness.eval.run import RunOptions, RunPlace, run_suite
    from harness.eval.store import read_summary

    options = RunOptions(engine="oracle", families=("qwen",), strategies=("json_schema",))
    outcome = asyncio.run(run_suite(SUITE, options, RunPlace(out=tmp_path / "run")))
    assert outcome.errors == 0
    rows = {r.metric: (r.value, r.n) for r in read_summary(tmp_path / "run")}
    assert rows["state_match"] == (1.0, 25) and rows["exact_match"] == (1.0, 25)


def write(text: str) -> list[list[dict[str, Any]]]:
    return [[{"name": "write_file", "arguments": {"path": "hello.txt", "content": text}}]]


@pytest.mark.parametrize(("calls", "kind", "diff"), [
    (write("hi there"), None, None),
    (write("hi"), ErrorKind.state_tree_differs, ['-/hello.txt = "hi there"', '+/hello.txt = "hi"']),
    ([[]], ErrorKind.state_empty_turn, None),
])
async def test_a_wrong_answer_fails_with_the_folders_diff(
    calls: list[list[dict[str, Any]]], kind: str | None, diff: list[str] | None,
) -> None:
    from harness.bundles import bundle_source
    from harness.eval.data import load_suite
    from harness.eval.score import Scorer
    from harness.eval.store import SampleRecord

    suite = load_suite(SUITE)
    _, source = bundle_source(suite.bundle_dir)
    scorer = Scorer([c for c in suite.cases if c.id == "write-new"], [t.schema for t in source.tools], "oracle", source)
    steps = [{"output": "x", "tool_calls": turn, "parse_errors": [], "tool_results": [], "latency_ms": 1.0,
              "ttft_ms": None, "usage": None, "stats": None, "turn": n} for n, turn in enumerate(calls)]
    sample = SampleRecord.model_validate({
        "sample_id": "write-new/qwen/ebnf/1", "case_id": "write-new", "family": "qwen", "strategy": "ebnf",
        "epoch": 1, "kind": "episode", "status": "ok", "error_kind": None, "error": None, "steps": steps,
        "duration_ms": 1.0, "harness_ms": 0.1,
    })
    rows = {row.metric: row for row in await scorer.score(sample)}
    assert rows["state_match"].error_kind == kind
    found = scorer.differences.get(sample.sample_id)
    assert (found and [line for line in found.lines if line[:1] in "+-" and line[:2] not in ("++", "--")]) == diff


def test_bench_times_the_servers_calls_beside_the_sandboxs() -> None:
    """``harness bench sandbox --mcp``: the filesystem server's calls over the same tree, every one taken
    (the cycle leaves the tree as it found it), its start timed apart, in the printed line and the JSON."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "harness.cli.main", "bench", "sandbox", "--n", "24", "--mcp",
                           str(SUITE.parents[1] / "bundles" / "mcp-filesystem")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    server = figures["mcp"]
    assert server["n"] == figures["n"] and server["error_results"] == 0 and server["first_call_ms"] > 0
    assert set(server["per_tool_us_p50"]) >= {"read_text_file", "write_file", "edit_file", "move_file"}
    assert server["tool_call_us_p50"] <= server["tool_call_us_p99"]
    assert "MCP server tool call" in done.stdout and "sandbox tool call" in done.stdout
