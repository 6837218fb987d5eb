"""An ``mcp:`` bundle's server as its tool source: settings read from ``bundle.yaml``, tools listed once.

The tools are listed when the bundle loads, from a server started on an empty folder (or the URL's
server), following ``tools/list``'s cursor to the last page. Loading may happen inside a running event
loop (a run opens its bundle there), so the listing runs on a loop of its own in a short-lived thread.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.agents import BundleConfig, BundleError, ToolSchema
from harness.tools.base import ToolUnavailable
from harness.tools.mcp.connection import Connection, ServerFailure, ServerSpec
from harness.tools.mcp.source import McpSettings, McpSource, McpTool, prepare
from harness.vocabulary import ErrorKind

MAX_PAGES = 1000
"""A server whose cursor never ends is refused after this many pages."""


def load_mcp_source(file: Path, config: BundleConfig) -> McpSource:
    """The server's tools with the bundle's bounds; BundleError naming the field when there is no ``mcp:``
    section, the server does not start or list its tools, or a tool's input schema is not an object schema."""
    from harness.sandbox import bundle_limits

    mcp = config.mcp
    if mcp is None:
        raise BundleError(file, ["mcp: the tool source 'mcp' needs an mcp: section (its server)"])
    limits, _ = bundle_limits(file, config)
    command = mcp.command
    if command is not None and "/" in command and not Path(command).is_absolute():
        command = str((file.parent / command).absolute())  # a path in the bundle, as its other files
    spec = ServerSpec(command=command, args=mcp.args, env=dict(mcp.env), cwd=mcp.cwd, url=mcp.url)
    settings = McpSettings(spec, start_timeout=mcp.start_timeout, wall_clock=limits.wall_clock or 5.0,
                           max_output=limits.max_output or (1 << 20), prepare=mcp.prepare, ignore=frozenset(mcp.ignore),
                           state_calls=tuple((c.name, c.arguments) for c in mcp.state_calls))
    if command is not None and shutil.which(command) is None:
        raise BundleError(file, [f"mcp.command: {mcp.command!r} is not an executable (is the server installed?)"])
    with ThreadPoolExecutor(1, thread_name_prefix="mcp-list") as pool:
        try:
            listed = pool.submit(asyncio.run, list_tools(settings)).result()
        except ServerFailure as exc:
            raise BundleError(file, [f"mcp: cannot list the server's tools: {exc}"]) from None
    tools = []
    for entry in listed:
        try:
            schema = ToolSchema.from_openai({"name": entry.name, "description": entry.description or "",
                                             "parameters": entry.input_schema})
        except ValueError as exc:
            raise BundleError(file, [f"mcp: the server's tool {entry.name!r}: {exc}"]) from None
        tools.append(McpTool(schema, entry.output_schema))
    unknown = [c.name for c in mcp.state_calls if c.name not in {t.schema.name for t in tools}]
    if unknown:
        raise BundleError(file, [f"mcp.state_calls: the server lists no tool {', '.join(map(repr, unknown))}"])
    return McpSource(settings, tools)


async def list_tools(settings: McpSettings) -> list[Any]:
    """Every tool the server lists (``mcp.types.Tool``), page after page; ServerFailure when it cannot."""
    from mcp.types import PaginatedRequestParams

    scratch = Path(tempfile.mkdtemp(prefix="harness-mcp-list-"))
    spec = settings.spec if settings.shared else settings.for_folder(scratch)
    connection = Connection(spec)
    try:
        if not settings.shared:
            try:
                await prepare(settings, scratch)
            except ToolUnavailable as exc:
                raise ServerFailure(exc.kind, str(exc)) from None
        await connection.start(settings.start_timeout)
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None

            async def page_of(session: Any, params: Any = params) -> Any:
                return await session.list_tools(params=params)

            page = await connection.request(page_of, settings.start_timeout)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise ServerFailure(ErrorKind.tool_load_error, f"tools/list still had a next page after {MAX_PAGES} pages")
    finally:
        await connection.close()
        shutil.rmtree(scratch, ignore_errors=True)


__all__ = ["MAX_PAGES", "list_tools", "load_mcp_source"]
