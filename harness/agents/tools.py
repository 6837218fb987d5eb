"""The Tool protocol: a schema, and an async ``execute`` that never raises. Where a bundle's tools and
their state come from is a tool source (``harness.tools``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness.agents.events import Event
from harness.agents.types import ToolCall, ToolResult, ToolSchema


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool gets besides its arguments."""

    call_id: str
    step: int = 0
    """The kernel step (model call) that made this call, from 1 (0 outside the kernel)."""
    agent_id: str = "agent"
    emit: Callable[[Event], Awaitable[None]] | None = None
    """Sends an event to the kernel's observers (the sandbox's script events use it)."""
    workspace: Any = None
    """The per-run state tools act on (for sandboxed tools, a ``harness.sandbox.Workspace``).
    The kernel passes it through untouched."""


@runtime_checkable
class Tool(Protocol):
    """A callable tool. ``execute`` must not raise: failures come back as an error ToolResult
    whose ``error_kind`` is a ``checker:reason`` string (``tool:bad_arguments``, ``tool:limit``...)."""

    @property
    def schema(self) -> ToolSchema: ...

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult: ...
