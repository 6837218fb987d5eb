"""ModelAdapter: what adapts the kernel to one model family.

A frozen dataclass of functions: message and tool formatting (with defaults that suit any
OpenAI-compatible server), the response parser, the hook that builds a constraint's request payload,
and, for engines that run the model in-process, the native prompt and output renderers.
Each family module (``harness.grammar.families``) builds one; the kernel gets it from whoever builds
the agent and imports no family.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.agents.constraint import DecodingConstraint, RequestPayload
from harness.agents.types import Message, ParseFailure, ToolCall, ToolSchema
from harness.vocabulary import Strategy


@dataclass(frozen=True, slots=True)
class ParsedResponse:
    """A model answer read into calls. Never a silent ``{}``: what did not parse is in ``errors``."""

    content: str | None
    """Text outside the calls, kept as the model wrote it (None when there was none)."""
    tool_calls: tuple[ToolCall, ...] = ()
    errors: tuple[ParseFailure, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


ResponseParser = Callable[[str | None, Sequence[ToolCall], Sequence[ToolSchema]], ParsedResponse]
"""(content, tool calls the server already parsed, the tools offered) -> ParsedResponse."""
PayloadBuilder = Callable[[Sequence[ToolSchema], DecodingConstraint], RequestPayload]
PromptRenderer = Callable[[Sequence[Message], Sequence[ToolSchema]], str]
"""Messages + tools -> the prompt text exactly as the family's chat template would render it,
ending with the open assistant turn."""
OutputRenderer = Callable[[Sequence[ToolCall], DecodingConstraint], str]
"""Calls -> the text the model emits for them under a strategy (the gold answer for replay)."""
TextRenderer = Callable[[str, DecodingConstraint], str]
"""A plain-text answer -> the text the model emits for it under a strategy (gold replay of a closing
message; only meaningful when the constraint has ``allow_text_answer``)."""
MessageFormatter = Callable[[Sequence[Message]], tuple[Message, ...]]
ToolFormatter = Callable[[Sequence[ToolSchema]], list[dict[str, Any]]]
RequestTool = Callable[[ToolSchema], ToolSchema]
"""A tool -> the tool as a request's ``tools`` declares it (the families: its properties in the
canonical order their grammars force, so a server's template lists arguments in the order the model
must write them)."""


def default_format_messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    """OpenAI-compatible servers take the messages as they are."""
    return tuple(messages)


def default_render_text(text: str, constraint: DecodingConstraint) -> str:
    """Plain text as is; under ``json_schema`` the answer is a JSON document, so a JSON string."""
    if constraint.strategy == Strategy.json_schema:
        return json.dumps(text, ensure_ascii=False)
    return text


def default_request_tool(tool: ToolSchema) -> ToolSchema:
    """The tool as it is."""
    return tool


def default_format_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """OpenAI-style ``tools`` entries."""
    return [t.to_openai() for t in tools]


@dataclass(frozen=True, slots=True)
class ModelAdapter:
    """Adapts the kernel to a model family."""

    family: str
    """``function_gemma`` or ``qwen``; never sent as the model id."""
    parse_response: ResponseParser
    build_payload: PayloadBuilder
    render_prompt: PromptRenderer
    render_output: OutputRenderer
    format_messages: MessageFormatter = default_format_messages
    format_tools: ToolFormatter = default_format_tools
    render_text: TextRenderer = default_render_text
    request_tool: RequestTool = default_request_tool
    native_call_start: str = ""
    """The text that opens a call in the family's native format (``<start_function_call>``,
    ``<tool_call>``): where a server's tool parser looks for calls."""
