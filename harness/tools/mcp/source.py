"""An MCP server's tools as a tool source (``source: mcp``).

Each sample (``McpSession``) gets its own working folder, seeded from the case's tree, and its own
server process over it, started on the session's first call (``{workdir}`` in the command's args, env
and cwd is that folder). A call goes through the MCP client (``Connection``): its text content is the
output the model sees (structured content is the output when a result has no content), ``is_error`` is
``tool:error`` with the result's text, a result over ``limits.max_output`` is ``tool:limit``; a server
that hangs (``limits.wall_clock``), crashes, exits or writes garbage on stdout ends the call with the
connection's kind, and the session's next call starts a fresh process on the same folder. The state is
the folder (``harness.tools.mcp.folder``): two samples match when their trees and file contents do.

A server at a URL is shared by every sample: no folder, no state; only the calls and their results
are scored (``difference`` never finds one). Paths in results: the sample's folder is written ``.``
(``/tmp/x/notes/a.txt`` -> ``./notes/a.txt``), so results compare across samples and still name the
file for the server, which resolves relative paths in its folder.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.agents import Tool, ToolCall, ToolContext, ToolResult, ToolSchema
from harness.tools.base import SessionSetup, StateKind, ToolUnavailable, tree_lines
from harness.tools.mcp import folder
from harness.tools.mcp.connection import Connection, ServerFailure, ServerSpec
from harness.vocabulary import ErrorKind

WORKDIR = "{workdir}"
_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class McpSettings:
    """A source's server and bounds, as ``bundle.yaml`` gives them (``{workdir}`` not yet substituted)."""

    spec: ServerSpec
    start_timeout: float = 30.0
    wall_clock: float = 5.0
    max_output: int = 1 << 20
    prepare: tuple[str, ...] = ()
    """A command run in a fresh folder before its server starts."""
    ignore: frozenset[str] = frozenset()
    """Names left out of the compared tree."""
    state_calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """(name, arguments) of the calls whose results are part of the state."""

    @property
    def shared(self) -> bool:
        return self.spec.url is not None

    def for_folder(self, workdir: Path) -> ServerSpec:
        """The spec with ``{workdir}`` replaced by ``workdir`` in args, env and cwd."""
        def sub(text: str) -> str:
            return text.replace(WORKDIR, str(workdir))

        spec = self.spec
        return replace(spec, args=tuple(map(sub, spec.args)), env={k: sub(v) for k, v in spec.env.items()},
                       cwd=sub(spec.cwd) if spec.cwd else None)


@dataclass(frozen=True, slots=True)
class FolderState:
    """A sample's state: its folder's tree (``folder.snapshot``) and the results of the bundle's
    ``state_calls`` (``"name {arguments}"`` -> what the call answered)."""

    tree: folder.Tree
    calls: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool the server lists; run on the session the kernel passes as the workspace."""

    schema: ToolSchema
    output_schema: Mapping[str, Any] | None = None
    """The tool's ``outputSchema`` as the server lists it (kept; not sent to the model)."""

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        session = context.workspace
        if not isinstance(session, McpSession):
            return ToolResult(call.id, call.name, "no MCP session for this call", is_error=True,
                              error_kind=ErrorKind.tool_internal_error)
        result = await session.call(call.name, call.arguments)
        return ToolResult(call.id, call.name, result.output, result.is_error, result.error_kind, result.duration_us)


class McpSession:
    """One sample's working folder and server (a ``ToolSession``; the kernel's workspace is the session)."""

    def __init__(self, source: McpSource, workdir: Path | None) -> None:
        self.source, self.workdir = source, workdir
        self._connection: Connection | None = None
        self._stopping: list[asyncio.Task[None]] = []
        """Failed servers being stopped (awaited by ``close``; the next call need not wait for them)."""

    @property
    def workspace(self) -> McpSession:
        return self

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        started = time.perf_counter()
        output, kind = await self._answer(name, arguments)
        duration = (time.perf_counter() - started) * 1e6
        return ToolResult(name, name, output, is_error=kind is not None, error_kind=kind, duration_us=duration)

    async def _answer(self, name: str, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        settings = self.source.settings
        if name not in self.source.by_name:
            return f"unknown tool {name!r}", ErrorKind.tool_unknown
        try:
            connection = await self._connected()
            result = await connection.request(lambda s: s.call_tool(name, dict(arguments)), settings.wall_clock)
        except ServerFailure as exc:
            return str(exc), exc.kind
        output = self._relative(result_output(result))
        size = len(output.encode() if isinstance(output, str) else json.dumps(output).encode())
        if size > settings.max_output:
            return f"the result is {size} bytes, over limits.max_output ({settings.max_output})", ErrorKind.tool_limit
        if result.is_error:
            return output, ErrorKind.tool_error
        return output, None

    async def _connected(self) -> Connection:
        if self._connection is not None and self._connection.alive:
            return self._connection
        if self._connection is not None:  # a failed server: stopped, and a fresh one on the same folder
            self._stopping.append(asyncio.create_task(self._connection.close()))
        settings = self.source.settings
        spec = settings.spec if self.workdir is None else settings.for_folder(self.workdir)
        self._connection = Connection(spec)
        await self._connection.start(settings.start_timeout)
        return self._connection

    def _relative(self, output: Any) -> Any:
        if self.workdir is None:
            return output
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        for path in sorted({str(self.workdir.resolve()), str(self.workdir)}, key=len, reverse=True):
            text = text.replace(path, ".")
        return text if isinstance(output, str) else json.loads(text)

    async def snapshot(self) -> Any:
        """The folder now and the state calls' results (None for a shared server: no state)."""
        if self.workdir is None:
            return None
        settings = self.source.settings
        calls = []
        for name, arguments in settings.state_calls:
            result = await self.call(name, arguments)
            calls.append((f"{name} {json.dumps(arguments, sort_keys=True)}",
                          result.output if not result.is_error else f"{result.error_kind}: {result.output}"))
        return FolderState(folder.snapshot(self.workdir, settings.ignore), tuple(calls))

    async def prepare(self) -> None:
        """Run the bundle's ``prepare`` command in the fresh folder; ToolUnavailable when it fails."""
        if self.workdir is not None:
            await prepare(self.source.settings, self.workdir)

    async def close(self) -> None:
        if self._connection is not None:
            self._stopping.append(asyncio.create_task(self._connection.close()))
            self._connection = None
        await asyncio.gather(*self._stopping)
        self._stopping.clear()
        if self.workdir is not None:
            shutil.rmtree(self.workdir.parent, ignore_errors=True)


async def prepare(settings: McpSettings, workdir: Path) -> None:
    """Run ``settings.prepare`` in ``workdir`` (its own process group, bounded by ``start_timeout``);
    ToolUnavailable naming what it said when it fails."""
    if not settings.prepare:
        return
    argv = [part.replace(WORKDIR, str(workdir)) for part in settings.prepare]
    env = {**os.environ, **settings.for_folder(workdir).env}
    try:
        process = await asyncio.create_subprocess_exec(*argv, cwd=workdir, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                       stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                                                       start_new_session=True)
    except OSError as exc:
        raise ToolUnavailable(ErrorKind.tool_unavailable, f"mcp.prepare: {exc}") from None
    try:
        output, _ = await asyncio.wait_for(process.communicate(), settings.start_timeout)
    except TimeoutError:
        os.killpg(process.pid, signal.SIGKILL)  # its own group (start_new_session): only what it started
        await process.wait()
        raise ToolUnavailable(ErrorKind.tool_unavailable, f"mcp.prepare: no end within {settings.start_timeout:g} s") from None
    if process.returncode:
        tail = output.decode(errors="replace")[-500:]
        raise ToolUnavailable(ErrorKind.tool_unavailable, f"mcp.prepare exited {process.returncode}: {tail}")


def result_output(result: Any) -> Any:
    """A ``CallToolResult`` as a tool output: its content items' text joined by lines (an image, audio or
    a resource without text: a ``[kind ...]`` line), or its structured content when it has no content."""
    parts = []
    for item in result.content or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and getattr(item.resource, "text", None) is not None:
            parts.append(item.resource.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {item.mime_type}, {len(item.data) * 3 // 4} bytes]")
        else:
            parts.append(f"[{kind} {getattr(item, 'uri', '') or getattr(getattr(item, 'resource', None), 'uri', '')}]")
    if not parts and result.structured_content is not None:
        return result.structured_content
    return "\n".join(parts)


class McpSource:
    """A server's tools, a session (folder and process) per sample (a ``ToolSource``; see the module doc)."""

    state_kind: StateKind = "file_system"
    unwanted_calls_fail = True

    def __init__(self, settings: McpSettings, tools: Sequence[McpTool]) -> None:
        self.settings = settings
        self.tools: tuple[McpTool, ...] = tuple(tools)
        self.by_name = {t.schema.name: t for t in self.tools}

    def owner(self, tool: Tool) -> str | None:
        return None  # an MCP tool belongs to no class

    async def open(self, setup: SessionSetup) -> McpSession:
        """A fresh folder seeded from the setup's tree (none for a shared server), its history replayed."""
        workdir = None
        if not self.settings.shared:
            name, contents = folder.top_folder(setup.tree)
            workdir = Path(tempfile.mkdtemp(prefix="harness-mcp-")) / name
            folder.seed(workdir, contents)
        session = McpSession(self, workdir)
        try:
            await session.prepare()
            for call in setup.history:
                await session.call(call.name, call.arguments)
        except BaseException:
            await session.close()
            raise
        return session

    def difference(self, gold: Any, model: Any, *, cwd: bool = True) -> str | None:
        return None if gold == model else ErrorKind.state_tree_differs

    def lines(self, snapshot: Any) -> list[str]:
        """The tree's lines (``tree_lines``), then each state call and its result's lines, indented."""
        if not isinstance(snapshot, FolderState):
            return []
        out = tree_lines(snapshot.tree)
        for call, output in snapshot.calls:
            text = output if isinstance(output, str) else json.dumps(output, sort_keys=True, ensure_ascii=False)
            out += [f"{call}:", *(f"  {line}" for line in text.splitlines())]
        return out

    def holds(self, snapshot: Any, expected: Mapping[str, Mapping[str, Any]]) -> bool:
        """``expected_state: {files: {path: text or null}}``: each file has that text (null: is absent)."""
        if set(expected) - {"files"} or not isinstance(snapshot, FolderState):
            return False
        return all(folder.lookup(snapshot.tree, path) == text for path, text in expected.get("files", {}).items())

    def close(self) -> None:
        return None  # every process belongs to a session, stopped when the session closes


__all__ = ["WORKDIR", "FolderState", "McpSession", "McpSettings", "McpSource", "McpTool", "prepare", "result_output"]
