"""pytest-benchmark: one sandboxed file-system tool call, end to end.

What a runner pays per model call: ``PymTool.execute`` with a 20-file workspace (arguments checked,
fresh sandbox session, the tree handed over as inputs, mutations applied). The project's goal, for every
tool: p50 <= 0.35 ms, p99 <= 1.5 ms (``harness bench sandbox`` reports each tool).
Run with ``tox -e bench`` (or ``pytest tests/bench --benchmark-enable``); in the plain test run each
benchmark executes once, as a smoke test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.agents.tools import ToolContext
from harness.agents.types import ToolCall

SHELLPER_TOOLS = Path(__file__).resolve().parents[2] / "bundles" / "shellper" / "tools"


@pytest.fixture(scope="module")
def setup() -> Any:
    from harness.bench.sandbox import bench_state
    from harness.sandbox import Workspace, discover_tools

    tools = {t.name: t for t in discover_tools(SHELLPER_TOOLS)}
    state = bench_state()
    return tools, Workspace.filesystem(state), state


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("cat", {"file_name": "notes.txt"}),  # one file's content
        ("ls", {"a": True}),  # one listing
        ("cd", {"folder": "docs"}),  # a lookup and a mutation (the cwd), undone below
    ],
)
def test_bench_tool_call(benchmark, setup, tool: str, args: dict[str, Any]) -> None:
    tools, workspace, state = setup
    loop = asyncio.new_event_loop()
    context = ToolContext(call_id="bench", workspace=workspace)

    def one_call() -> Any:
        result = loop.run_until_complete(tools[tool].execute(ToolCall("bench", tool, args), context))
        state.cwd = ()  # keep every round on the same state
        return result

    try:
        result = benchmark(one_call)
    finally:
        loop.close()
    assert not result.is_error, result.output
    assert "error" not in (result.output or {})
