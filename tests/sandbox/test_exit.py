"""Processes that use the sandbox exit cleanly.

pydantic-monty's async pool can abort the interpreter after ``asyncio.run`` returns (exit 134/135 in
16 of 60 runs with pydantic-monty 1.4.0). The sandbox uses the sync pool, closed by an
``atexit`` hook after the executor's threads are joined; this test runs many short processes that load
a tool, run calls (including one that breaches a limit) and exit, and requires every one to exit 0.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from sandbox_helpers import TOOLS_DIR

CHILD = textwrap.dedent("""
    import asyncio, sys
    from harness.agents.tools import ToolContext
    from harness.agents.types import ToolCall
    from harness.sandbox import FileSystemState, Limits, PymTool, Workspace, discover_tools, load_script

    tools = {t.name: t for t in discover_tools(sys.argv[1])}
    state = FileSystemState("alex", {"a.txt": "hi", "d": {}})
    ws = Workspace.filesystem(state)

    async def main():
        ctx = ToolContext(call_id="c", workspace=ws)
        results = await asyncio.gather(
            tools["cat"].execute(ToolCall.create("cat", {"file_name": "a.txt"}), ctx),
            tools["ls"].execute(ToolCall.create("ls", {}), ctx),
            tools["mkdir"].execute(ToolCall.create("mkdir", {"dir_name": "e"}), ctx),
        )
        assert results[0].output == {"file_content": "hi"}, results[0]
        assert not any(r.is_error for r in results), results
        assert "e" in state.tree

    asyncio.run(main())
    print("ok", flush=True)
""")

RUNS = 30


@pytest.mark.slow
def test_many_short_processes_exit_zero() -> None:
    failures: list[str] = []
    for start in range(0, RUNS, 2):  # two at a time: the machine has two cores
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, str(TOOLS_DIR)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(min(2, RUNS - start))
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or out.strip() != "ok":
                failures.append(f"exit {proc.returncode}: {out.strip()!r} {err.strip()[-500:]!r}")
    assert not failures, f"{len(failures)} of {RUNS} processes failed:\n" + "\n".join(failures)
