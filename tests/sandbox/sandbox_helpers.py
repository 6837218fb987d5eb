"""Shared constants and helpers of the sandbox tests (imported by the test modules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.agents.tools import ToolContext
from harness.agents.types import ToolCall, ToolResult

TOOLS_DIR = Path(__file__).resolve().parents[2] / "bundles" / "shellper" / "tools"

# alex/            (the root)
#   notes.txt      "b line\na line\nc line"
#   other.txt      "b line\nz line\nc line"
#   .hidden        "h"
#   docs/
#     x.md         "1\n2\n3"
#     sub/         (empty)
BASE_TREE: dict[str, Any] = {
    "notes.txt": "b line\na line\nc line",
    "other.txt": "b line\nz line\nc line",
    ".hidden": "h",
    "docs": {"x.md": "1\n2\n3", "sub": {}},
}


async def call_tool(tool: Any, args: dict[str, Any], workspace: Any = None, emit: Any = None) -> ToolResult:
    """One call through the Tool protocol, as the kernel makes it."""
    context = ToolContext(call_id="t", emit=emit, workspace=workspace)
    return await tool.execute(ToolCall.create(tool.schema.name, args), context)
