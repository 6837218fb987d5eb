"""``.pym`` scripts as a tool source: the bundle's sandboxed tools on a file-system state.

Calls run through the bundle's real ``.pym`` tools (``PymTool.execute``) on a ``Workspace`` over a
``FileSystemState``; nothing here reimplements a tool. A snapshot is a copy of the state, and two are
the same state when their trees (GorillaFileSystem's comparison) and, where asked, their current folders are equal.
The state a next-call point's history leaves is computed once per case and copied per session.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.agents import BundleConfig, BundleError, Tool, ToolCall, ToolContext, ToolResult
from harness.tools.base import EchoMode, SessionSetup, StateKind, ToolUnavailable, tree_lines
from harness.vocabulary import ErrorKind

_ids = itertools.count(1)


class PymSession:
    """One sample's file system (a ``ToolSession``); the kernel's workspace is a sandbox ``Workspace`` on it."""

    def __init__(self, source: PymSource, state: Any, echo_mode: EchoMode) -> None:
        from harness.sandbox import Workspace

        self.source, self.state = source, state
        self.workspace = Workspace.filesystem(state, echo_mode=echo_mode)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        call = ToolCall(id=f"call_{next(_ids)}", name=name, arguments=dict(arguments))
        tool = self.source.by_name.get(name)
        if tool is None:
            return ToolResult(call.id, name, f"unknown tool {name!r}", is_error=True, error_kind=ErrorKind.tool_unknown)
        return await tool.execute(call, ToolContext(call_id=call.id, workspace=self.workspace))

    async def snapshot(self) -> Any:
        return self.state.copy()

    async def close(self) -> None:
        return None


class PymSource:
    """A bundle's ``.pym`` tools (a ``ToolSource``)."""

    state_kind: StateKind = "file_system"
    unwanted_calls_fail = False

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools: tuple[Tool, ...] = tuple(tools)
        self.by_name = {t.schema.name: t for t in self.tools}
        self._after_history: dict[tuple[str, str], Any] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def owner(self, tool: Tool) -> str | None:
        return None  # no .pym tool belongs to a class

    @staticmethod
    def initial(setup: SessionSetup) -> Any:
        from harness.sandbox import FileSystemState

        state = FileSystemState.from_nodes(dict(setup.tree or {"workspace": {"type": "directory", "contents": {}}}))
        if setup.cwd:
            state = FileSystemState(state.root_name, state.tree, [p for p in setup.cwd.split("/") if p])
        return state

    async def open(self, setup: SessionSetup) -> PymSession:
        """A session on the setup's file system, its history replayed; ToolUnavailable for a case that
        names classes (they are another source's tools)."""
        if setup.classes:
            raise ToolUnavailable(ErrorKind.tool_unavailable, f"the case uses classes ({', '.join(setup.classes)}) "
                                  "but the bundle's tools are .pym scripts")
        if not setup.history:
            return PymSession(self, self.initial(setup), setup.echo_mode)
        key = (setup.entry, json.dumps([(c.name, c.arguments) for c in setup.history], sort_keys=True, default=str))
        if key not in self._after_history:
            async with self._locks.setdefault(key, asyncio.Lock()):
                if key not in self._after_history:
                    session = PymSession(self, self.initial(setup), setup.echo_mode)
                    for call in setup.history:
                        await session.call(call.name, call.arguments)
                    self._after_history[key] = session.state
        return PymSession(self, self._after_history[key].copy(), setup.echo_mode)

    def difference(self, gold: Any, model: Any, *, cwd: bool = True) -> str | None:
        if gold != model:  # FileSystemState equality compares the trees (GorillaFileSystem's)
            return ErrorKind.state_tree_differs
        if cwd and tuple(gold.cwd) != tuple(model.cwd):
            return ErrorKind.state_cwd_differs
        return None

    def lines(self, snapshot: Any) -> list[str]:
        """``/root/folder/`` per folder and ``/root/file = "content"`` per file, sorted, then the current folder."""
        return [*tree_lines(snapshot.tree, f"/{snapshot.root_name}/"), f"current folder: /{'/'.join(snapshot.cwd)}"]

    def holds(self, snapshot: Any, expected: Mapping[str, Mapping[str, Any]]) -> bool:
        return not expected  # a file system has no instances to hold attributes

    def close(self) -> None:
        return None




def pym_folder(file: Path, config: BundleConfig) -> Path:
    """The bundle's ``tools_dir``, a folder holding ``.pym`` tools; BundleError naming the field otherwise
    (a bundle without tools cannot run a suite)."""
    folder = file.parent / config.tools_dir
    if not folder.is_dir():
        raise BundleError(file, [f"tools_dir: {str(folder)!r} is not a directory"])
    if not any(folder.glob("*.pym")):
        raise BundleError(file, [f"tools_dir: no .pym tools in {str(folder)!r}"])
    return folder


def load_pym_source(file: Path, config: BundleConfig) -> PymSource:
    """The ``.pym`` tools of ``tools_dir`` with their limits; BundleError naming the field when the folder
    holds none or a script does not load."""
    from harness.sandbox import load_bundle_tools

    pym_folder(file, config)
    return PymSource(load_bundle_tools(file, config))


__all__ = ["PymSession", "PymSource", "load_pym_source", "pym_folder"]
