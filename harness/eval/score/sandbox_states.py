"""The sandbox as the runner and scoring use it: file-system states and workspaces for the bundle's tools.

Calls run through the bundle's real ``.pym`` tools (``PymTool.execute``) on a ``Workspace`` over a
``FileSystemState``; nothing here reimplements a tool. States that every sample of a case shares (the
state a next-call point's history leaves) are computed once per case and copied per use.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from harness.agents import Tool, ToolCall, ToolContext
from harness.eval.data import EchoMode, EpisodeCase, FsCase, NextCallCase
from harness.vocabulary import ErrorKind

_ids = itertools.count(1)


class SandboxStates:
    """File-system states for a suite's cases, and calls executed on them with the real tools.

    Implements scoring's ``StateBackend`` (``initial``, ``apply``, ``difference``) and gives the runner
    its workspaces (``workspace``, ``workspace_after_history``)."""

    def __init__(self, tools: Sequence[Tool], echo_mode: EchoMode = "overwrite") -> None:
        from harness.agents import python_source

        self.tools = {t.schema.name: t for t in tools}
        self.python = python_source(tools)
        """The worker of Python-class tools (None: ``.pym`` tools)."""
        self.owners = {t.schema.name: owner for t in tools if isinstance(owner := getattr(t, "owner", None), str)}
        """Tool name -> class, for Python-class tools."""
        self.echo_mode: EchoMode = echo_mode
        """The suite's ``echo`` semantics, for every workspace built here (runs and scoring alike)."""
        self._after_history: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def initial(self, case: FsCase) -> Any:
        from harness.sandbox import FileSystemState

        state = FileSystemState.from_bfcl(case.initial_fs.to_bfcl())
        if case.cwd:
            state = FileSystemState(state.root_name, state.tree, [p for p in case.cwd.split("/") if p])
        return state

    async def run_call(self, state: Any, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run one call on ``state`` in place; returns the ToolResult (an unknown tool is an error)."""
        from harness.agents import ToolResult

        call = ToolCall(id=f"score_{next(_ids)}", name=name, arguments=dict(arguments))
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(call.id, name, f"unknown tool {name!r}", is_error=True, error_kind=ErrorKind.tool_unknown)
        return await tool.execute(call, ToolContext(call_id=call.id, workspace=self._workspace(state)))

    async def apply(self, state: Any, name: str, arguments: Mapping[str, Any]) -> tuple[Any, Any]:
        """Run one call on a copy of ``state``; the new state and the call's output."""
        new = state.copy()
        result = await self.run_call(new, name, arguments)
        return new, result.output

    def difference(self, a: Any, b: Any, cwd: bool = True) -> str | None:
        if a != b:  # FileSystemState equality compares the trees (BFCL's)
            return ErrorKind.state_tree_differs
        if cwd and tuple(a.cwd) != tuple(b.cwd):
            return ErrorKind.state_cwd_differs
        return None

    def lines(self, state: Any) -> list[str]:
        """A state as text for a diff (details.jsonl): ``/root/folder/`` per folder and ``/root/file =
        "content"`` per file, sorted, then the current folder."""
        return [*_tree_lines(state.tree, f"/{state.root_name}/"), f"current folder: /{'/'.join(state.cwd)}"]

    async def state_after_history(self, case: NextCallCase) -> Any:
        """The state a next-call point's history leaves (computed once per case; do not mutate)."""
        if case.id not in self._after_history:
            async with self._locks.setdefault(case.id, asyncio.Lock()):
                if case.id not in self._after_history:
                    state = self.initial(case)
                    for call in case.history_calls():
                        await self.run_call(state, call.name, call.arguments)
                    self._after_history[case.id] = state
        return self._after_history[case.id]

    def _workspace(self, state: Any) -> Any:
        from harness.sandbox import Workspace

        return Workspace.filesystem(state, echo_mode=self.echo_mode)

    @asynccontextmanager
    async def episode_workspace(self, case: EpisodeCase) -> AsyncIterator[Any]:
        """The workspace of one episode: a session of the case's Python classes in the tool worker
        (closed when the episode ends), or a fresh file system for ``.pym`` tools. WorkerFailure when a
        session cannot be opened (a class the bundle lacks, a config its loader refuses)."""
        if not case.involved_classes:
            yield self.workspace(case)
            return
        if self.python is None:
            from harness.agents import WorkerFailure

            raise WorkerFailure(ErrorKind.tool_unavailable, f"the case uses classes ({', '.join(case.involved_classes)}) "
                                "but the bundle's tools are .pym scripts")
        session = await self.python.open(case.involved_classes, case.initial_config,
                                         long_context=case.long_context, entry=case.id)
        try:
            yield session
        finally:
            await session.close()

    def workspace(self, case: FsCase) -> Any:
        """A fresh workspace on the case's initial state (episodes)."""
        return self._workspace(self.initial(case))

    async def workspace_after_history(self, case: NextCallCase) -> Any:
        """A fresh workspace on a copy of the state after the point's history (next-call samples)."""
        return self._workspace((await self.state_after_history(case)).copy())


def _tree_lines(tree: Mapping[str, Any], prefix: str) -> list[str]:
    lines = []
    for name in sorted(tree):
        node, path = tree[name], f"{prefix}{name}"
        if isinstance(node, Mapping):
            lines += [f"{path}/", *_tree_lines(node, f"{path}/")]
        else:
            lines.append(f"{path} = {json.dumps(node, ensure_ascii=False)}")
    return lines


__all__ = ["SandboxStates"]
