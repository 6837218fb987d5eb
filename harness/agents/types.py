"""Value types shared by the kernel, the adapters, the tools and the harness.

All are frozen, slotted dataclasses: safe to pass between layers and threads, cheap to build.
Mappings inside them (tool arguments, JSON-schema parameters) are plain dicts by necessity: they
hold JSON values whose shape is defined by the tool's schema, not by this module.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.files import check_depth

Role = Literal["system", "developer", "user", "assistant", "tool"]
JSONValue = Any  # a JSON value (dict, list, str, int, float, bool, None); kept loose on purpose

_call_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call a model asked for: a tool name and its decoded arguments."""

    id: str
    name: str
    arguments: dict[str, JSONValue]

    @classmethod
    def create(cls, name: str, arguments: dict[str, JSONValue] | None = None) -> ToolCall:
        """A call with a fresh process-unique id (``call_1``, ``call_2``, ...)."""
        return cls(id=f"call_{next(_call_ids)}", name=name, arguments=dict(arguments or {}))

    def to_openai(self) -> dict[str, Any]:
        """The call as an OpenAI ``tool_calls`` entry (arguments JSON-encoded, as the API sends them)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned. ``execute`` never raises: failures arrive here with ``is_error``."""

    call_id: str
    name: str
    output: JSONValue
    is_error: bool = False
    error_kind: str | None = None
    """A ``checker:reason`` kind such as ``tool:unknown``, ``tool:bad_arguments``, ``tool:limit``."""
    duration_us: float | None = None
    """Host-side execution time of the tool, when measured."""

    def content(self) -> str:
        """The output as the text a model sees in a tool turn."""
        if isinstance(self.output, str):
            return self.output
        return json.dumps(self.output, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message in OpenAI's roles. Tool calls ride on assistant messages."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat-completions message dict."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        """The tool turn that carries ``result`` back to the model."""
        return cls(role="tool", content=result.content(), tool_call_id=result.call_id, name=result.name)


GORILLA_TYPES: dict[str, str] = {
    "dict": "object", "float": "number", "double": "number", "tuple": "array", "list": "array",
    "bool": "boolean", "any": "string", "Any": "string", "String": "string", "char": "string",
    "byte": "integer", "short": "integer", "long": "integer", "Bigint": "integer",
    "ArrayList": "array", "Array": "array", "Queue": "array", "Stack": "array",
    "HashMap": "object", "Hashtable": "object",
}
"""Type names of Gorilla function docs that JSON Schema lacks -> the JSON-schema type their benchmark sends for them."""

_NESTED_ONE = ("items", "additionalProperties", "not")
_NESTED_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")


def json_schema_types(schema: Any) -> Any:
    """``schema`` with Gorilla's type names (``GORILLA_TYPES``) replaced everywhere they can occur; a new
    object when anything changed, JSON-schema type names and unknown names left as they are."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = GORILLA_TYPES.get(kind, kind)
    elif isinstance(kind, list):
        out["type"] = [GORILLA_TYPES.get(k, k) if isinstance(k, str) else k for k in kind]
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: json_schema_types(v) for k, v in out["properties"].items()}
    for key in _NESTED_ONE:
        if isinstance(out.get(key), dict):
            out[key] = json_schema_types(out[key])
    for key in (*_NESTED_MANY, "items"):
        if isinstance(out.get(key), list):
            out[key] = [json_schema_types(v) for v in out[key]]
    return out if out != schema else schema


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as the model sees it: name, description and a JSON-schema object of parameters."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this schema."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @classmethod
    def from_openai(cls, tool: dict[str, Any]) -> ToolSchema:
        """Read an OpenAI-style tool (``{"type": "function", "function": {...}}`` or the bare function).

        Gorilla function docs (``{"name", "description", "parameters": {"type": "dict", ...}}``)
        are read too: their type names become JSON-schema ones (``GORILLA_TYPES``), as their benchmark converts
        them before it sends tools to a model."""
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError(f"not an OpenAI tool: missing function.name in {str(tool)[:120]}")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        _check_parameters(params, fn["name"])
        return cls(name=fn["name"], description=str(fn.get("description") or ""), parameters=json_schema_types(params))

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the required parameters, in schema order."""
        return tuple(self.parameters.get("required", ()))


def _check_parameters(params: Any, name: str) -> None:
    """A tool's ``parameters`` is a JSON schema object whose ``properties`` (when given) map names to
    schema objects and whose ``required`` lists names; ValueError naming the field otherwise."""
    where = f"tool {name!r}: function.parameters"
    if not isinstance(params, dict):
        raise ValueError(f"{where} must be a JSON schema object, got {type(params).__name__}")
    check_depth(params, where)
    props = params.get("properties", {})
    if not isinstance(props, dict):
        raise ValueError(f"{where}.properties must be an object, got {type(props).__name__}")
    for key, schema in props.items():
        if not isinstance(schema, dict):
            raise ValueError(f"{where}.properties.{key} must be a JSON schema object, got {type(schema).__name__}")
    required = params.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError(f"{where}.required must be a list of parameter names")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts of one request, or totals over a run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    counted_by: str | None = None
    """None: the engine's own counts. ``harness``: the server sent no usage (llama-cpp-python's streams),
    so the harness counted the answer's text with the family's tokenizer (``completion_tokens`` only:
    the prompt is not counted, 0)."""

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.counted_by or other.counted_by,
        )


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """Why a model's answer did not yield clean calls. ``kind`` is ``parse:reason``."""

    kind: str
    message: str
    text: str = ""
    """The offending part of the output, for the report."""


@dataclass(frozen=True, slots=True)
class StepResult:
    """One kernel step (one model call): the assistant message, the calls it made and their results."""

    response_message: Message
    tool_calls: tuple[ToolCall, ...]
    tool_results: tuple[ToolResult, ...]
    usage: TokenUsage | None = None
    parse_errors: tuple[ParseFailure, ...] = ()
    """Failures the parser reported; a step with errors still returns what parsed cleanly."""


TerminationReason = Literal["no_tool_calls", "max_steps", "model_error"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """A whole run of the kernel loop (one user turn: as many steps as the model keeps calling tools)."""

    final_message: Message
    history: tuple[Message, ...]
    step_count: int
    termination_reason: TerminationReason
    total_usage: TokenUsage = TokenUsage()
    steps: tuple[StepResult, ...] = ()
    error: str | None = None
    """Set when ``termination_reason`` is ``model_error``: what the client raised."""
