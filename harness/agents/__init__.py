"""The agent kernel the harness measures: value types, events, tools, constraints, adapters, clients.

Public names are re-exported here; the modules behind them are private.
"""

from harness.agents.adapter import ModelAdapter, ParsedResponse
from harness.agents.client import (
    CompletionRequest,
    CompletionResponse,
    EngineStats,
    LLMClient,
    ModelCallError,
)
from harness.agents.constraint import (
    CONSTRAINED_STRATEGIES,
    STRATEGIES,
    ConstraintArtifact,
    ConstraintError,
    DecodingConstraint,
    RequestPayload,
    Strategy,
)
from harness.agents.events import (
    Event,
    KernelEndEvent,
    KernelStartEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    NullObserver,
    Observer,
    ObserverErrorEvent,
    RecordingObserver,
    ScriptCompleteEvent,
    ScriptErrorEvent,
    ScriptPrintEvent,
    ScriptStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnCompleteEvent,
)
from harness.agents.tools import Tool, ToolContext
from harness.agents.types import (
    Message,
    ParseFailure,
    RunResult,
    StepResult,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSchema,
)

__all__ = [
    "CONSTRAINED_STRATEGIES",
    "STRATEGIES",
    "CompletionRequest",
    "CompletionResponse",
    "ConstraintArtifact",
    "ConstraintError",
    "DecodingConstraint",
    "EngineStats",
    "Event",
    "KernelEndEvent",
    "KernelStartEvent",
    "LLMClient",
    "Message",
    "ModelAdapter",
    "ModelCallError",
    "ModelRequestEvent",
    "ModelResponseEvent",
    "NullObserver",
    "Observer",
    "ObserverErrorEvent",
    "ParseFailure",
    "ParsedResponse",
    "RecordingObserver",
    "RequestPayload",
    "RunResult",
    "ScriptCompleteEvent",
    "ScriptErrorEvent",
    "ScriptPrintEvent",
    "ScriptStartEvent",
    "StepResult",
    "Strategy",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolContext",
    "ToolResult",
    "ToolResultEvent",
    "ToolSchema",
    "TurnCompleteEvent",
]
