"""The agent kernel the harness measures: value types, events, tools, constraints, adapters, clients,
bundles and the Agent. It imports neither the sandbox nor an engine (``harness.bundles`` wires those in).

Public names are re-exported here; the modules behind them are private. Bundle loading (pydantic,
PyYAML) is imported on first use of its names, so importing this package stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    REJECTED_GOLD,
    STRATEGIES,
    STRATEGY_OF_ARTIFACT,
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
    Observer,
    ObserverErrorEvent,
    RecordingObserver,
    ScriptCompleteEvent,
    ScriptErrorEvent,
    ScriptPrintEvent,
    ScriptStartEvent,
    StepCompleteEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.agents.kernel import AgentKernel, trim_history
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
from harness.lazy import lazy_exports

if TYPE_CHECKING:
    from harness.agents.agent import Agent, AgentOptions, ToolLoader
    from harness.agents.bundle import (
        BundleConfig,
        BundleError,
        ModelConfig,
        bundle_file,
        field_path,
        load_bundle_config,
        validation_problems,
    )

__getattr__, __dir__ = lazy_exports(__name__, {
    "AgentOptions": "agent",
    "ModelConfig": "bundle",
    "bundle_file": "bundle",
    "field_path": "bundle",
    "validation_problems": "bundle",
    "Agent": "agent",
    "ToolLoader": "agent",
    "BundleConfig": "bundle",
    "BundleError": "bundle",
    "load_bundle_config": "bundle",
})


__all__ = [
    "CONSTRAINED_STRATEGIES",
    "REJECTED_GOLD",
    "STRATEGIES",
    "STRATEGY_OF_ARTIFACT",
    "Agent",
    "AgentKernel",
    "AgentOptions",
    "BundleConfig",
    "BundleError",
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
    "ModelConfig",
    "ModelRequestEvent",
    "ModelResponseEvent",
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
    "StepCompleteEvent",
    "StepResult",
    "Strategy",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolContext",
    "ToolLoader",
    "ToolResult",
    "ToolResultEvent",
    "ToolSchema",
    "bundle_file",
    "field_path",
    "load_bundle_config",
    "trim_history",
    "validation_problems",
]
