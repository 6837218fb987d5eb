"""What every family's parser shares: reading JSON calls (the json_schema strategy's output, vLLM's
JSON array), vetting calls a server already parsed, and the loop that finds a family's native call
blocks in an answer.

- ``read_json_calls`` reads JSON output (any ``{"name", "arguments"}`` JSON) into calls or typed
  errors; ``check_api_calls`` vets calls a server already parsed; ``finish`` assembles the
  ``ParsedResponse`` (text outside the calls is kept; an answer with no call is ``parse:no_call``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from harness.agents import ParsedResponse, ParseFailure, ToolCall, ToolSchema
from harness.vocabulary import ErrorKind

MAX_ERROR_TEXT = 400
"""Longest excerpt of the offending output kept in a ParseFailure."""


def failure(kind: str, message: str, text: str = "") -> ParseFailure:
    return ParseFailure(kind=kind, message=message, text=text[:MAX_ERROR_TEXT])



def call_from_json(obj: Any, known: Mapping[str, ToolSchema], text: str) -> ToolCall | ParseFailure:
    """``{"name": ..., "arguments": {...}}`` as a call; ``arguments`` may also be a JSON string."""
    if not isinstance(obj, dict):
        return failure(ErrorKind.parse_bad_arguments, f"a call must be a JSON object, not {type(obj).__name__}", text)
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return failure(ErrorKind.parse_bad_arguments, "the call has no tool name", text)
    if known and name not in known:
        return failure(ErrorKind.parse_unknown_tool, f"no tool is named {name!r}", text)
    args = obj.get("arguments", obj.get("parameters"))  # ``parameters``: vLLM's JSON array for tool_choice required
    if "arguments" not in obj and "parameters" not in obj:
        return failure(ErrorKind.parse_bad_arguments, f"the call to {name!r} has no arguments field", text)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError) as exc:
            return failure(ErrorKind.parse_bad_arguments, f"arguments of {name!r} are not JSON: {exc}", text)
    if not isinstance(args, dict):
        return failure(
            ErrorKind.parse_bad_arguments, f"arguments of {name!r} must be an object, not {type(args).__name__}", text
        )
    return ToolCall.create(name, args)


def json_text_answer(text: str) -> str | None:
    """The text of a plain answer given as a JSON string (json_schema with ``allow_text_answer``)."""
    if not text.strip().startswith('"'):
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, str) else None


def read_json_calls(
    text: str, known: Mapping[str, ToolSchema], *, native_marker: str
) -> tuple[list[ToolCall], list[ParseFailure]] | None:
    """Calls from a JSON document (json_schema output): one call object or an array of them.

    None when ``text`` is not JSON-looking, or is invalid JSON that holds the family's native call
    marker (then the native parser reads it); invalid JSON otherwise is ``parse:bad_json``.
    """
    if text.strip()[:1] not in ("{", "["):
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        if native_marker in text:
            return None
        return [], [failure(ErrorKind.parse_bad_json, f"not valid JSON: {exc}", text)]
    items = doc if isinstance(doc, list) else [doc]
    if not items:
        return [], [failure(ErrorKind.parse_no_call, "an empty list of calls", text)]
    calls: list[ToolCall] = []
    errors: list[ParseFailure] = []
    for item in items:
        got = call_from_json(item, known, json.dumps(item, ensure_ascii=False) if len(items) > 1 else text)
        if isinstance(got, ParseFailure):
            errors.append(got)
        else:
            calls.append(got)
    return calls, errors


def check_api_calls(
    api_calls: Sequence[ToolCall], known: Mapping[str, ToolSchema]
) -> tuple[list[ToolCall], list[ParseFailure]]:
    """Calls a server already parsed: kept unless they name an unknown tool."""
    calls: list[ToolCall] = []
    errors: list[ParseFailure] = []
    for call in api_calls:
        if known and call.name not in known:
            errors.append(failure(ErrorKind.parse_unknown_tool, f"no tool is named {call.name!r}", call.name))
        elif not isinstance(call.arguments, dict):
            errors.append(failure(ErrorKind.parse_bad_arguments, f"arguments of {call.name!r} are not an object"))
        else:
            calls.append(call)
    return calls, errors


def finish(
    content: str | None, calls: Iterable[ToolCall], errors: Iterable[ParseFailure], *, whole: str
) -> ParsedResponse:
    """The ParsedResponse; no call and no error means ``parse:no_call`` (the text stays in content)."""
    call_list = tuple(calls)
    error_list = list(errors)
    if not call_list and not error_list:
        error_list.append(failure(ErrorKind.parse_no_call, "the answer holds no tool call", whole))
    text = content if content is not None and content.strip() else None
    return ParsedResponse(content=text, tool_calls=call_list, errors=tuple(error_list))


OneCall = Callable[[str, int, dict[str, ToolSchema]], tuple[ToolCall | ParseFailure, int]]
"""Reads the call starting at ``start`` of the text; returns it (or its failure) and where it ended."""


def parse_output(
    text: str,
    api_tool_calls: Sequence[ToolCall],
    tools: Sequence[ToolSchema],
    *,
    call_start: str,
    trailers: Sequence[str],
    one_call: OneCall,
) -> ParsedResponse:
    """A family's answer read into calls, the same way for every family: calls a server already parsed
    are taken as they are; else the stop trailers are dropped and the text is read as a plain answer
    given as a JSON string, as JSON calls (json_schema), or as native call blocks opened by
    ``call_start`` with the text around them kept. Never raises."""
    known = {t.name: t for t in tools}
    if api_tool_calls:
        calls, errors = check_api_calls(api_tool_calls, known)
        return finish(text, calls, errors, whole=text)
    for trailer in trailers:
        if text.endswith(trailer):
            text = text[: -len(trailer)]
    answer = json_text_answer(text)
    if answer is not None:
        return finish(answer, (), (), whole=text)
    from_json = read_json_calls(text, known, native_marker=call_start)
    if from_json is not None:
        return finish(None, *from_json, whole=text)
    found: list[ToolCall] = []
    problems: list[ParseFailure] = []
    outside: list[str] = []
    pos = 0
    while (start := text.find(call_start, pos)) >= 0:
        outside.append(text[pos:start])
        got, pos = one_call(text, start, known)
        if isinstance(got, ParseFailure):
            problems.append(got)
        else:
            found.append(got)
    outside.append(text[pos:])
    return finish("".join(outside), found, problems, whole=text)


__all__ = ["OneCall", "call_from_json", "failure", "parse_output"]
