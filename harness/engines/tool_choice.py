"""``tool_choice`` and ``parallel_tool_calls`` as vLLM's OpenAI server applies them (read in vLLM 0.32's
``tool_parsers/utils.py`` and its chat serving code, and checked against a real server).

- ``"none"``: the raw text comes back as ``content``; the tools are still rendered into the prompt.
- ``"auto"`` (the default with tools): the family's tool parser reads the answer; only calls in the
  family's native format count (a JSON answer under a json_schema constraint stays ``content`` with
  ``finish_reason: "stop"``). Parsed calls come back as ``tool_calls`` with ``finish_reason:
  "tool_calls"``; with ``parallel_tool_calls: false`` only the first one is kept.
- ``"required"`` and a named function (``{"type": "function", "function": {"name": ...}}``): vLLM builds
  the constraint from the tools with the family's tool parser (``harness.grammar.formats.vllm_tools``). Qwen's
  ``hermes`` parser has a structural tag: the answer is ``<tool_call>`` blocks (any JSON arguments
  unless the tool is strict), read by the parser as under ``auto``. FunctionGemma's parser has none:
  ``required`` is a JSON array of ``{"name": ..., "parameters": {...}}`` (``anyOf`` over the tools,
  ``minItems`` 1, ``maxItems`` 1 when ``parallel_tool_calls`` is false) and comes back as
  ``tool_calls`` with ``finish_reason: "tool_calls"`` and empty ``content``; a named function is its
  parameters' schema and comes back as one call, ``finish_reason: "stop"``, empty ``content``.
- tools marked ``"strict": true`` under ``auto``: Qwen's tag lets text through until ``<tool_call>``,
  then pins the arguments to the schema; FunctionGemma's parser builds nothing.

``required`` and named choices are a constraint of their own, so they cannot be combined with a
``structured_outputs`` or ``response_format`` constraint (the harness answers 400 rather than pick one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.agents import ToolCall, ToolSchema
from harness.grammar.formats import (
    ServerConstraint,
    ToolRequest,
    json_array_schema,
    server_constraint,
)

ToolMode = Literal["none", "auto", "required", "named"]


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """How a request wants tool calls: its mode, the named function, and whether several may come."""

    mode: ToolMode
    name: str | None = None
    """The function a named choice forces."""
    parallel: bool = True
    """``parallel_tool_calls`` (vLLM's default: true)."""

    def server_constraint(
        self, family: str, tools: Sequence[ToolSchema], strict_names: frozenset[str] = frozenset()
    ) -> ServerConstraint:
        """What vLLM builds for this choice, the tools and the tools marked strict (``built`` is
        ``none`` where it builds nothing: ``auto`` without strict tools, ``none``)."""
        raw: Any = {"type": "function", "function": {"name": self.name}} if self.mode == "named" else self.mode
        request = ToolRequest(raw, False, False if not self.parallel else None, strict_names)
        return server_constraint(family, tools, request)


def required_schema(tools: Sequence[ToolSchema], *, parallel: bool) -> dict[str, Any]:
    """vLLM's schema for ``tool_choice: "required"`` where the parser has no structural tag."""
    return json_array_schema(tools, parallel=parallel)


def read_tool_choice(raw: Any, parallel_tool_calls: bool | None, tools: Sequence[ToolSchema]) -> ToolChoice:
    """The request's ``tool_choice`` checked against its tools; ValueError says what is wrong."""
    parallel = parallel_tool_calls is not False
    if raw is None:
        return ToolChoice("auto" if tools else "none", parallel=parallel)
    if raw in ("none", "auto", "required"):
        if raw == "required" and not tools:
            raise ValueError('tool_choice "required" needs tools')
        return ToolChoice(raw, parallel=parallel)
    if isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict):
        name = raw["function"].get("name")
        if not isinstance(name, str) or name not in {t.name for t in tools}:
            raise ValueError(f"tool_choice names the function {name!r}, which is not among the tools")
        return ToolChoice("named", name=name, parallel=parallel)
    raise ValueError(
        'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}'
    )


def calls_from_json(text: str | None, choice: ToolChoice) -> list[ToolCall] | None:
    """The calls of a ``required`` or named answer (None when the text is not the JSON it must be, e.g.
    cut at max_tokens: the raw text then comes back as content)."""
    try:
        doc = json.loads(text or "")
    except ValueError:
        return None
    if choice.mode == "named":
        return [ToolCall.create(str(choice.name), doc)] if isinstance(doc, dict) else None
    if not isinstance(doc, list):
        return None
    calls = []
    for item in doc:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("parameters"), dict):
            return None
        calls.append(ToolCall.create(item["name"], item["parameters"]))
    return calls


__all__ = ["ToolChoice", "ToolMode", "calls_from_json", "read_tool_choice", "required_schema"]
