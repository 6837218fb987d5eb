"""Drawn calls sent to an MCP server (``harness fuzz --call-server``): which calls the schema (and so
every grammar built from it) allows that the server itself rejects.

A schema says what a call may look like; the server decides what it takes. The calls of each tool go
to one fresh session (its own empty folder and server process, as a sample's), one after another; a
call the server answers with ``is_error``, a protocol error (the SDK's own argument check) or a named
failure is a rejection, with the server's text. Calls of one tool share that folder, so a call may
meet what an earlier one left (a file written, a folder made): that is what a model's calls meet too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.tools.base import SessionSetup
from harness.tools.mcp.source import McpSource


@dataclass(frozen=True, slots=True)
class ServerAnswer:
    """One drawn call and what the server made of it."""

    tool: str
    arguments: Mapping[str, Any]
    error_kind: str | None
    """None: the server took the call; else the result's kind (``tool:error``: ``is_error``)."""
    output: str
    """The result's text (cut to 300 characters)."""


async def _send(source: McpSource, tool: str, calls: Sequence[Mapping[str, Any]]) -> list[ServerAnswer]:
    session = await source.open(SessionSetup(entry=f"fuzz-{tool}"))
    answers = []
    try:
        for arguments in calls:
            result = await session.call(tool, arguments)
            text = result.output if isinstance(result.output, str) else repr(result.output)
            answers.append(ServerAnswer(tool, arguments, result.error_kind if result.is_error else None, text[:300]))
    finally:
        await session.close()
    return answers


def send_calls(source: McpSource, calls: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[ServerAnswer]:
    """Each tool's ``calls`` sent to a fresh session of ``source`` (see the module doc), in order."""

    async def every() -> list[ServerAnswer]:
        out: list[ServerAnswer] = []
        for tool, arguments in calls.items():
            out += await _send(source, tool, arguments)
        return out

    return asyncio.run(every())


__all__ = ["ServerAnswer", "send_calls"]
