"""Kernel events and the Observer protocol.

A *step* is one model call (and the tool calls it makes); ``run`` makes steps until the model answers
without calling a tool, which ends the user's *turn*. ``Event`` is a union of frozen dataclasses; an observer has one method, ``emit``, and matches on the
type it cares about. New event kinds (the sandbox's script events) are added to the union without
changing any observer: one that does not know a kind simply ignores it.

The events carry what a caller needs to record a run without wrapping the client: the request as
sent (``ModelRequestEvent.request``), the response with its timings and engine figures
(``ModelResponseEvent.response``) and each step's parsed calls, parse failures and tool results
(``StepCompleteEvent.result``). The harness's runner records its samples from them
(``harness.eval.run.recorder``), and a user's own observer gets the same events
(``harness run --observer module:Class``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.agents.client import CompletionRequest, CompletionResponse
from harness.agents.types import Message, StepResult, TokenUsage, ToolCall, ToolResult


def _now() -> float:
    return time.perf_counter()


@dataclass(frozen=True, slots=True)
class KernelStartEvent:
    """``run`` started."""

    max_steps: int
    initial_messages: int
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class KernelEndEvent:
    """``run`` ended, for any reason, including a model call that raised."""

    step_count: int
    termination_reason: str
    error: str | None = None
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ModelRequestEvent:
    """One request is about to be sent to the model (exactly one per request)."""

    step: int
    messages_count: int
    tools_count: int
    model: str
    extra_body: dict[str, Any] | None = None
    request: CompletionRequest | None = None
    """The request as the client receives it (messages, tools, constraint payload, sampling)."""
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ModelResponseEvent:
    """The model answered."""

    step: int
    content: str | None
    tool_calls_count: int
    usage: TokenUsage | None
    latency_ms: float | None = None
    ttft_ms: float | None = None
    parse_errors: tuple[str, ...] = ()
    response: CompletionResponse | None = None
    """The response as the client returned it: raw text, finish reason, usage, timings and the
    figures of an engine that runs the grammar itself (``stats``)."""
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A tool call is about to run."""

    step: int
    call: ToolCall
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """A tool call finished (with a result or an error result)."""

    step: int
    result: ToolResult
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class StepCompleteEvent:
    """A step finished: its response was parsed and every call it made ran (``step`` emits it, for a
    lone step as for each step of ``run``)."""

    step: int
    tool_calls_count: int
    errors_count: int
    message: Message | None = None
    result: StepResult | None = None
    """The step: its parsed calls, parse failures and tool results, in call order."""
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ObserverErrorEvent:
    """An observer raised while handling an event. Reported to the other observers, never fatal."""

    observer: str
    event_type: str
    error: str
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ScriptStartEvent:
    """A sandboxed ``.pym`` script started."""

    tool_name: str
    script: str
    input_count: int
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ScriptCompleteEvent:
    """A sandboxed script finished with a value."""

    tool_name: str
    script: str
    duration_ms: float
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ScriptErrorEvent:
    """A sandboxed script failed; ``kind`` is one of the sandbox's error kinds."""

    tool_name: str
    script: str
    duration_ms: float
    kind: str
    error: str
    at: float = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class ScriptPrintEvent:
    """A sandboxed script printed."""

    tool_name: str
    script: str
    stream: str
    text: str
    at: float = field(default_factory=_now)


Event = (
    KernelStartEvent
    | KernelEndEvent
    | ModelRequestEvent
    | ModelResponseEvent
    | ToolCallEvent
    | ToolResultEvent
    | StepCompleteEvent
    | ObserverErrorEvent
    | ScriptStartEvent
    | ScriptCompleteEvent
    | ScriptErrorEvent
    | ScriptPrintEvent
)


@runtime_checkable
class Observer(Protocol):
    """Receives every event. ``emit`` may be sync or async; the kernel awaits what it returns."""

    def emit(self, event: Event) -> Any: ...


class RecordingObserver:
    """Keeps every event in order; handy for tests and for the runner's per-sample timings."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, kind: type) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]
