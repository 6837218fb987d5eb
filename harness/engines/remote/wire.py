"""Reading an OpenAI-compatible server's answer strictly: what breaks the protocol is the server's fault.

A body or stream that does not follow the chat-completions protocol (not JSON, empty, a JSON array, no
choices, a null message, a tool call's ``arguments`` that is neither a string nor an object, a stream
with no events or cut before its ``finish_reason``...) raises ``ModelCallError("model:bad_response",
what was wrong)``: a server error, retried like the other ``model:`` errors and counted among a run's
errors, never read as an empty answer that would be scored as the model's.

What the protocol leaves to the model stays the model's: text of any kind, a tool call whose
``arguments`` string is not a JSON object (OpenAI: "the model does not always generate valid JSON"),
or whose name is empty; those go to ``CompletionResponse.malformed_tool_calls`` and score as
``parse:bad_arguments``. ``usage`` and ``model`` are figures, not the answer: a bad one is dropped and
the answer kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.agents import CompletionResponse, ModelCallError, TokenUsage, ToolCall
from harness.files import MAX_JSON_DEPTH, json_depth

BAD_RESPONSE = "model:bad_response"
"""The error kind of an answer that does not follow the protocol."""
SNIPPET = 200
"""Characters of the offending text quoted in a bad_response message."""


def bad_response(what: str) -> ModelCallError:
    """The ModelCallError of an answer that breaks the protocol; ``what`` says how."""
    return ModelCallError(BAD_RESPONSE, what)


def _show(value: Any) -> str:
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= SNIPPET else text[:SNIPPET] + "..."


def _type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad_response(f"{where} is {_type(value)}, not an object: {_show(value)}")
    return value


def _optional(value: Any, kind: type, where: str) -> Any:
    """``value`` when it is None or of ``kind``; else bad_response naming ``where``."""
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    wanted = "a string" if kind is str else "an array" if kind is list else "an integer"
    raise bad_response(f"{where} is {_type(value)}, not {wanted}: {_show(value)}")


def _error_event(body: dict[str, Any], where: str) -> None:
    """A 200 answer that carries an ``error`` object (a proxy's or a server's) is no answer."""
    if body.get("error") is not None and "choices" not in body:
        raise bad_response(f"{where} is an error, not an answer: {_show(body['error'])}")


def parse_json(text: str, where: str) -> Any:
    """The JSON value of ``text``; bad_response when it is empty, not JSON or nested past Python's stack."""
    if not text.strip():
        raise bad_response(f"{where} is empty")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise bad_response(f"{where} is not JSON: {_show(text)}") from None


def read_completion(text: str, latency_ms: float) -> CompletionResponse:
    """A non-streamed chat-completions body, checked against the protocol."""
    body = _object(parse_json(text, "the body"), "the body")
    _error_event(body, "the body")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise bad_response(f"the body has no choices: {_show(body)}")
    choice = _object(choices[0], "choices[0]")
    if "message" not in choice and isinstance(choice.get("text"), str):  # /completions: the raw text
        choice = {**choice, "message": {"content": choice["text"]}}
    message = _object(choice.get("message"), "choices[0].message")
    content = _optional(message.get("content"), str, "choices[0].message.content")
    raw_calls = _optional(message.get("tool_calls"), list, "choices[0].message.tool_calls") or []
    for i, raw in enumerate(raw_calls):
        where = f"choices[0].message.tool_calls[{i}]"
        fn = _object(_object(raw, where).get("function"), f"{where}.function")
        if not isinstance(fn.get("name"), str):
            raise bad_response(f"{where}.function.name is {_type(fn.get('name'))}, not a string")
        if not isinstance(fn.get("arguments"), (str, dict)):  # an object: some servers send it decoded
            raise bad_response(f"{where}.function.arguments is {_type(fn.get('arguments'))}, not a string")
    finish = choice.get("finish_reason")
    if not isinstance(finish, str):
        raise bad_response(f"choices[0].finish_reason is {_type(finish)}, not a string")
    good, malformed = read_tool_calls(raw_calls)
    return CompletionResponse(
        content=content,
        tool_calls=good,
        usage=read_usage(body.get("usage")),
        finish_reason=finish,
        latency_ms=latency_ms,
        model=model if isinstance(model := body.get("model"), str) else "",
        malformed_tool_calls=malformed,
    )


@dataclass
class _CallSlot:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAnswer:
    """The answer assembled from a stream's events (``data:`` JSON values), checked as they come."""

    events: int = 0
    content: list[str] = field(default_factory=list)
    calls: dict[int, _CallSlot] = field(default_factory=dict)
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    model: str = ""

    def feed(self, event: Any) -> bool:
        """Take one event; True when it carried text or a tool call (the first token, for TTFT)."""
        self.events += 1
        where = f"stream event {self.events}"
        chunk = _object(event, where)
        _error_event(chunk, where)
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"] or self.model
        self.usage = read_usage(chunk.get("usage")) or self.usage
        produced = False
        for i, raw in enumerate(_optional(chunk.get("choices"), list, f"{where}: choices") or ()):
            choice = _object(raw, f"{where}: choices[{i}]")
            if "delta" not in choice and "text" in choice:  # /completions streams text, not deltas
                choice = {**choice, "delta": {"content": choice["text"]}}
            delta = _object(choice.get("delta"), f"{where}: choices[{i}].delta")
            text = _optional(delta.get("content"), str, f"{where}: choices[{i}].delta.content")
            if text:
                self.content.append(text)
                produced = True
            calls = _optional(delta.get("tool_calls"), list, f"{where}: choices[{i}].delta.tool_calls")
            for j, call in enumerate(calls or ()):
                self._call(_object(call, f"{where}: tool_calls[{j}]"), f"{where}: tool_calls[{j}]")
                produced = True
            finish = _optional(choice.get("finish_reason"), str, f"{where}: choices[{i}].finish_reason")
            self.finish_reason = finish or self.finish_reason
        return produced

    def _call(self, call: dict[str, Any], where: str) -> None:
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise bad_response(f"{where}.index is {_show(index)}, not a call index")
        slot = self.calls.setdefault(index, _CallSlot())
        slot.id = _optional(call.get("id"), str, f"{where}.id") or slot.id
        fn = call.get("function")
        if fn is None:
            return
        fn = _object(fn, f"{where}.function")
        name = _optional(fn.get("name"), str, f"{where}.function.name")
        if name is not None:
            slot.name = (slot.name or "") + name
        slot.arguments.append(_optional(fn.get("arguments"), str, f"{where}.function.arguments") or "")

    def finish(self, latency_ms: float, ttft_ms: float | None, content_type: str = "") -> CompletionResponse:
        """The whole answer, once the stream ended; bad_response when it never was one."""
        if not self.events:
            kind = content_type.partition(";")[0].strip()
            said = f" (the server answered {kind}, not text/event-stream)" if kind != "text/event-stream" else ""
            raise bad_response(f"the stream ended with no events{said}")
        if self.finish_reason is None:
            raise bad_response(f"the stream ended after {self.events} events with no finish_reason (cut short?)")
        for index, slot in sorted(self.calls.items()):
            if slot.name is None:
                raise bad_response(f"streamed tool call {index} was never given a function name")
        raw_calls = [
            {"id": s.id, "type": "function", "function": {"name": s.name, "arguments": "".join(s.arguments)}}
            for _, s in sorted(self.calls.items())
        ]
        good, malformed = read_tool_calls(raw_calls)
        return CompletionResponse(
            content="".join(self.content) if self.content else None,
            tool_calls=good,
            usage=self.usage,
            finish_reason=self.finish_reason,
            latency_ms=latency_ms,
            ttft_ms=ttft_ms,
            model=self.model,
            malformed_tool_calls=malformed,
        )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_usage(raw: Any) -> TokenUsage | None:
    """The token counts; None when absent or not counts: a bad ``usage`` field never costs the answer."""
    if not isinstance(raw, dict):
        return None
    prompt, completion = _count(raw.get("prompt_tokens")), _count(raw.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    total = _count(raw.get("total_tokens"))
    return TokenUsage(prompt, completion, prompt + completion if total is None else total)


def read_tool_calls(raw_calls: list[Any]) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
    """Calls (already checked against the protocol) decoded; those whose arguments the model did not
    write as a JSON object (or nested deeper than ``MAX_JSON_DEPTH``), or whose name is empty, kept as
    raw JSON text, never as ``{}``."""
    good: list[ToolCall] = []
    bad: list[str] = []
    for raw in raw_calls:
        fn = raw["function"]
        name, arguments = fn["name"], fn["arguments"]
        decoded: Any = arguments if isinstance(arguments, dict) else None
        if isinstance(arguments, str) and arguments.strip():
            try:
                decoded = json.loads(arguments)
            except (ValueError, RecursionError):
                decoded = None
        if name and isinstance(decoded, dict) and json_depth(decoded) <= MAX_JSON_DEPTH:
            call_id = raw.get("id")
            good.append(ToolCall(id=str(call_id), name=name, arguments=decoded) if call_id else ToolCall.create(name, decoded))
        else:
            bad.append(json.dumps(raw, ensure_ascii=False))
    return tuple(good), tuple(bad)


__all__ = ["BAD_RESPONSE", "StreamAnswer", "bad_response", "parse_json", "read_completion", "read_tool_calls", "read_usage"]
