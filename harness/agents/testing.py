"""Test doubles for unit tests of the kernel and of code built on it.

Nothing here talks to a model, a tokenizer or a sandbox: each class stands in for one seam and is
named as a test double. Real runs use the real clients, adapters and tools.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from harness.agents.adapter import ModelAdapter, ParsedResponse
from harness.agents.client import CompletionRequest, CompletionResponse
from harness.agents.constraint import DecodingConstraint, RequestPayload
from harness.agents.tools import ToolContext
from harness.agents.types import Message, ParseFailure, TokenUsage, ToolCall, ToolResult, ToolSchema
from harness.vocabulary import ErrorKind

ScriptStep = CompletionResponse | BaseException | Callable[[CompletionRequest], CompletionResponse]


class ScriptExhaustedError(AssertionError):
    """The ScriptedClient was asked for more responses than its script holds."""


class ScriptedClient:
    """TEST DOUBLE for ``LLMClient``: answers each request with the next scripted item.

    An item is a CompletionResponse (returned), an exception (raised, e.g. a ModelCallError) or a
    function of the request returning a response. Every request received is kept in ``requests``.
    Running past the end of the script raises ScriptExhaustedError, so a test that loops too long fails.
    """

    def __init__(self, script: Iterable[ScriptStep]) -> None:
        self.script: list[ScriptStep] = list(script)
        self.requests: list[CompletionRequest] = []
        self.closed = False

    async def chat_completion(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if len(self.requests) > len(self.script):
            raise ScriptExhaustedError(
                f"ScriptedClient: request {len(self.requests)} but the script has {len(self.script)} items"
            )
        item = self.script[len(self.requests) - 1]
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, CompletionResponse):
            return item
        return item(request)

    async def aclose(self) -> None:
        self.closed = True

    @staticmethod
    def reply(
        content: str | None = None,
        tool_calls: Sequence[ToolCall] = (),
        usage: TokenUsage | None = None,
        malformed_tool_calls: Sequence[str] = (),
    ) -> CompletionResponse:
        """A response with the given text, native tool calls and usage."""
        return CompletionResponse(
            content=content,
            tool_calls=tuple(tool_calls),
            usage=usage,
            finish_reason="tool_calls" if tool_calls else "stop",
            latency_ms=1.0,
            malformed_tool_calls=tuple(malformed_tool_calls),
        )


# -- a ModelAdapter test double with a trivial text format --------------------------------------

LINE_PREFIX = "CALL "


def _parse_lines(
    content: str | None, api_calls: Sequence[ToolCall], tools: Sequence[ToolSchema]
) -> ParsedResponse:
    """Lines ``CALL name {json-args}`` are calls; every other line is text. Native calls pass through."""
    calls: list[ToolCall] = list(api_calls)
    errors: list[ParseFailure] = []
    text: list[str] = []
    for line in (content or "").splitlines():
        if not line.startswith(LINE_PREFIX):
            text.append(line)
            continue
        name, _, raw = line[len(LINE_PREFIX) :].partition(" ")
        try:
            args = json.loads(raw or "{}")
        except ValueError as exc:
            errors.append(ParseFailure(ErrorKind.parse_bad_json, str(exc), line))
            continue
        if not isinstance(args, dict):
            errors.append(ParseFailure(ErrorKind.parse_bad_arguments, "arguments are not an object", line))
            continue
        calls.append(ToolCall.create(name, args))
    body = "\n".join(text).strip()
    return ParsedResponse(content=body or None, tool_calls=tuple(calls), errors=tuple(errors))


def _line_payload(tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> RequestPayload:
    if not constraint.constrained:
        return RequestPayload()
    names = " | ".join(json.dumps(t.name) for t in tools) or '""'
    grammar = f'root ::= ("CALL " name " " [^\\n]* "\\n")*\nname ::= {names}'
    return RequestPayload(
        extra_body={"structured_outputs": {"grammar": grammar}, "skip_special_tokens": False},
        stop=("<end>",),
    )


def _line_prompt(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
    head = "".join(f"tool {t.name}\n" for t in tools)
    return head + "".join(f"{m.role}: {m.content or ''}\n" for m in messages) + "assistant: "


def _line_output(calls: Sequence[ToolCall], constraint: DecodingConstraint) -> str:
    return "".join(f"{LINE_PREFIX}{c.name} {json.dumps(c.arguments, sort_keys=True)}\n" for c in calls)


def line_adapter(family: str = "test_line_format") -> ModelAdapter:
    """TEST DOUBLE for a family adapter: calls are lines ``CALL name {"arg": ...}``.

    Its payload builder puts a toy grammar under ``structured_outputs`` (and ``skip_special_tokens``)
    with stop ``<end>`` so tests can check that the kernel passes a payload through untouched.
    """
    return ModelAdapter(
        family=family,
        parse_response=_parse_lines,
        build_payload=_line_payload,
        render_prompt=_line_prompt,
        render_output=_line_output,
    )


# -- a Tool test double ------------------------------------------------------------------------

ToolFn = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]


class FunctionTool:
    """TEST DOUBLE for a Tool: wraps an async function ``fn(arguments, context) -> output``.

    Unlike a real tool it lets exceptions escape when ``raise_errors`` is set (to test the kernel's
    guard against tools that break the never-raise protocol); otherwise an exception becomes an error
    result with kind ``tool:error``.
    """

    def __init__(self, name: str, fn: ToolFn, *, description: str = "", raise_errors: bool = False) -> None:
        self._schema = ToolSchema(name=name, description=description or f"test tool {name}")
        self._fn = fn
        self.raise_errors = raise_errors
        self.calls: list[ToolCall] = []

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        self.calls.append(call)
        try:
            output = await self._fn(call.arguments, context)
        except Exception as exc:
            if self.raise_errors:
                raise
            return ToolResult(call.id, call.name, str(exc), is_error=True, error_kind=ErrorKind.tool_error)
        return ToolResult(call_id=call.id, name=call.name, output=output)


__all__ = ["FunctionTool", "ScriptExhaustedError", "ScriptedClient", "line_adapter"]
