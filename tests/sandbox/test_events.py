"""Script events reach the kernel's observers: start, print, complete, error, in order."""

from __future__ import annotations

import pytest
from sandbox_helpers import call_tool

from harness.agents import (
    AgentKernel,
    Message,
    RecordingObserver,
    ScriptCompleteEvent,
    ScriptErrorEvent,
    ScriptPrintEvent,
    ScriptStartEvent,
    ToolCall,
    ToolResultEvent,
)
from harness.agents.testing import ScriptedClient, line_adapter
from harness.sandbox import PymTool, Workspace, load_script

PRINTS = '''
"""Prints, then maybe fails."""
from harness.sandbox import Input

fail: bool = Input("fail", default=False)

print("working on it")
if fail:
    raise ValueError("asked to fail")
"done"
'''


async def test_events_of_a_successful_call(write_script) -> None:
    tool = PymTool(load_script(write_script(PRINTS, name="chatty.pym")))
    seen: list = []

    async def emit(event) -> None:
        seen.append(event)

    result = await call_tool(tool, {}, emit=emit)
    assert result.output == "done"
    assert [type(e) for e in seen] == [ScriptStartEvent, ScriptPrintEvent, ScriptCompleteEvent]
    start, printed, done = seen
    assert (start.tool_name, start.script, start.input_count) == ("chatty", "chatty.pym", 0)
    assert (printed.stream, printed.text) == ("stdout", "working on it\n")
    assert done.duration_ms > 0


async def test_events_of_a_failing_call(write_script) -> None:
    tool = PymTool(load_script(write_script(PRINTS, name="chatty.pym")))
    seen: list = []
    result = await call_tool(tool, {"fail": True}, emit=seen.append)  # a sync emit works too
    assert result.error_kind == "tool:script_error"
    assert [type(e) for e in seen] == [ScriptStartEvent, ScriptPrintEvent, ScriptErrorEvent]
    error = seen[-1]
    assert error.kind == "ExecutionError"
    assert "chatty.pym line 8: ValueError: asked to fail" in error.error


@pytest.mark.parametrize("fail", [False, True])
async def test_events_reach_kernel_observers(fs_tools, state, fail: bool) -> None:
    """Through the real kernel: the script events sit between ToolCall and ToolResult events."""
    observer = RecordingObserver()
    args = {"file_name": "nope.txt" if fail else "notes.txt"}
    client = ScriptedClient(
        [ScriptedClient.reply(tool_calls=[ToolCall.create("cat", args)]), ScriptedClient.reply("done")]
    )
    kernel = AgentKernel(
        client, line_adapter(), model="m", observers=[observer], workspace=Workspace.filesystem(state)
    )
    result = await kernel.run(
        [Message(role="user", content="show notes")], list(fs_tools.values()), max_steps=3
    )
    assert result.termination_reason == "no_tool_calls"
    kinds = [type(e).__name__ for e in observer.events]
    start = kinds.index("ScriptStartEvent")
    assert kinds[start - 1] == "ToolCallEvent"
    assert kinds[start + 1] == "ScriptCompleteEvent"  # a BFCL error dict is still a completed script
    assert kinds[start + 2] == "ToolResultEvent"
    tool_result = next(e for e in observer.events if isinstance(e, ToolResultEvent)).result
    assert tool_result.output == (
        {"error": "cat: 'nope.txt': No such file or directory"}
        if fail
        else {"file_content": "b line\na line\nc line"}
    )
