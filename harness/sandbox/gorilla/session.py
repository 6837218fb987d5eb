"""Calls on a Gorilla file-system state through the real tools, one after another, outside a run.

What a script needs that checks calls against the file system (the suite generator checks every call it
writes this way): the bundle's ``.pym`` tools run on a ``Workspace`` over a ``FileSystemState``, each
call on the state the previous one left, exactly as a run executes them. Nothing here reimplements a
tool.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from harness.agents import Tool, ToolCall, ToolContext, ToolResult
from harness.sandbox.gorilla.state import FileSystemState
from harness.sandbox.workspace import EchoMode, Workspace

_ids = itertools.count(1)


class GorillaSession:
    """``tools`` acting on ``state`` in place (``echo_mode`` as a suite sets it); ``call`` runs one call
    and waits for it. Close it (or use it as a context manager) to release its event loop."""

    def __init__(self, tools: Sequence[Tool], state: FileSystemState, *, echo_mode: EchoMode = "overwrite") -> None:
        self.tools = {t.schema.name: t for t in tools}
        self.state = state
        self.workspace = Workspace.filesystem(state, echo_mode=echo_mode)
        self._loop = asyncio.new_event_loop()

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one call; an unknown tool is a ``KeyError`` naming the known ones."""
        if name not in self.tools:
            raise KeyError(f"no tool {name!r}: expected one of {', '.join(sorted(self.tools))}")
        call = ToolCall(id=f"session_{next(_ids)}", name=name, arguments=dict(arguments))
        context = ToolContext(call_id=call.id, workspace=self.workspace)
        return self._loop.run_until_complete(self.tools[name].execute(call, context))

    @staticmethod
    def failed(result: ToolResult) -> str | None:
        """Why a call failed, in the tool's words (a Gorilla ``{"error": ...}`` output or an error
        result), or None."""
        if result.is_error:
            return f"{result.error_kind}: {result.output}"
        if isinstance(result.output, dict) and "error" in result.output:
            return str(result.output["error"])
        return None

    def close(self) -> None:
        self._loop.close()

    def __enter__(self) -> GorillaSession:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["GorillaSession"]
