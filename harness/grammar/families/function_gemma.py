"""FunctionGemma (google/functiongemma-270m-it): prompt, constraints, output and parser side by side.

Call syntax: ``<start_function_call>call:NAME{k:<escape>v<escape>,n:15,flag:true}<end_function_call>``;
strings inside ``<escape>``, numbers/booleans/null bare, arrays ``[...]``, objects ``{k:...}``, no
whitespace. Parallel calls are consecutive blocks.

Decisions (the other areas rely on them):

- ``<bos>``: the prompt text starts with ``<bos>``, as the chat template's ``bos_token`` does; the
  family tokenizer adds no BOS, so encoding the prompt text yields id 2 exactly once.
- Argument order: canonical (``harness.grammar.formats.canonical_keys``: case-insensitive sort), which is the order
  the chat template (``dictsort``) writes calls in. Grammar, structural tag and renderer share it.
- Strings hold any text except ``<escape>`` (a string containing it cannot be written; rendering
  such a call raises ``ConstraintError``). Control-token texts such as ``<end_function_call>`` may
  appear inside strings: the parser tracks the ``<escape>`` delimiters.
- Developer turn: the first system/developer message's text, then the declarations.
  ``format_messages`` makes sure that text holds the activation sentence FunctionGemma needs ("You
  are a model that can do function calling with the following functions"), for the server's chat
  template and for ``render_prompt`` alike.
- Tool results are rendered inline in the model turn (``<start_function_response>response:NAME{...}
  <end_function_response>``; a JSON-object output as its fields, other output as
  ``{value:<escape>text<escape>}``) and the model continues that turn: after tool results the prompt
  ends with ``<end_function_response>``, not with a new ``<start_of_turn>model\\n`` (as Google's
  published renderings show). Otherwise it ends with ``<start_of_turn>model\\n``.
- Declarations reproduce Google's published renderings (``properties:{...} },`` and ``} }`` with a
  space); nested-object details follow the Gemma chat-template family and are not byte-verified.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from harness.agents import Message, ModelAdapter, ParsedResponse, ParseFailure, ToolCall, ToolSchema
from harness.grammar.families._parse import failure, parse_output
from harness.grammar.families.function_gemma_declarations import declaration
from harness.grammar.formats import (
    ESCAPE,
    FG_SYNTAX,
    FG_SYNTAX_PORTABLE,
    CallFormat,
    build_payload,
    canonical_schema,
    check_fg_name,
    ebnf_literal,
    fg_text,
    render_output,
)
from harness.vocabulary import ErrorKind, Family

FAMILY = Family.function_gemma
BOS = "<bos>"
CALL_START, CALL_END = "<start_function_call>", "<end_function_call>"
RESP_START, RESP_END = "<start_function_response>", "<end_function_response>"
DECL_START, DECL_END = "<start_function_declaration>", "<end_function_declaration>"
TURN_START, TURN_END = "<start_of_turn>", "<end_of_turn>"
ACTIVATION = "You are a model that can do function calling with the following functions"
STOP = (RESP_START,)
"""Stop sequences: without it a small model invents the tool's answer."""
_TRAILERS = (RESP_START, TURN_END, "<eos>")

# --- prompt ------------------------------------------------------------------------------------


def format_messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The messages with the activation sentence in the first (system/developer) message."""
    msgs = list(messages)
    if msgs and msgs[0].role in ("system", "developer"):
        text = (msgs[0].content or "").strip()
        if ACTIVATION not in text:
            msgs[0] = Message(role=msgs[0].role, content=f"{text}\n{ACTIVATION}" if text else ACTIVATION)
        return tuple(msgs)
    return (Message(role="developer", content=ACTIVATION), *msgs)


def _call_text(call: ToolCall, *, strict: bool = True) -> str:
    if strict:
        check_fg_name(call.name, "tool")
    return f"{CALL_START}call:{call.name}{fg_text(call.arguments, strict=strict)}{CALL_END}"


def _response_text(name: str, content: str | None) -> str:
    text = content or ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    body = None
    if isinstance(data, dict):
        try:
            body = fg_text(data)
        except ValueError:
            body = None
    if body is None:
        body = "{value:" + fg_text(text, strict=False) + "}"
    return f"{RESP_START}response:{name}{body}{RESP_END}"


def render_prompt(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
    """The prompt as FunctionGemma's chat template renders it, with the generation prompt."""
    msgs = list(format_messages(messages))
    out = [BOS]
    first = msgs.pop(0)
    out.append(f"{TURN_START}developer\n{(first.content or '').strip()}")
    out += [f"{DECL_START}{declaration(t)}{DECL_END}" for t in tools]
    out.append(f"{TURN_END}\n")
    state = None  # None | "calls" (calls without results) | "results" (model turn left open)
    i = 0
    while i < len(msgs):
        msg = msgs[i]
        i += 1
        if msg.role == "tool":  # a result with no call before it: rendered where it stands
            out.append(_response_text(msg.name or "unknown", msg.content))
            state = "results"
            continue
        if msg.role != "assistant":
            role = "developer" if msg.role == "system" else msg.role
            if state == "results":
                out.append(f"{TURN_END}\n")
            out.append(f"{TURN_START}{role}\n{(msg.content or '').strip()}{TURN_END}\n")
            state = None
            continue
        if state != "results":
            out.append(f"{TURN_START}model\n")
        content = (msg.content or "").strip()
        out.append(content)
        out += [_call_text(c, strict=False) for c in msg.tool_calls]
        names = {c.id: c.name for c in msg.tool_calls}
        answered = False
        while i < len(msgs) and msgs[i].role == "tool" and msg.tool_calls:
            res = msgs[i]
            out.append(_response_text(names.get(res.tool_call_id or "", res.name or "unknown"), res.content))
            answered = True
            i += 1
        if msg.tool_calls and not answered:
            out.append(RESP_START)
            state = "calls"
        elif answered and not content:
            state = "results"
        else:
            out.append(f"{TURN_END}\n")
            state = None
    if state is None:
        out.append(f"{TURN_START}model\n")
    return "".join(out)


# --- call format ------------------------------------------------------------------------------

FORMAT = CallFormat(
    family=FAMILY,
    trigger=CALL_START,
    begin=f"{CALL_START}call:",
    end=CALL_END,
    separator="",
    syntax=FG_SYNTAX,
    head=lambda name: f"{name}{{",
    arguments=lambda members: f"{members} {ebnf_literal('}')}",
    call_text=_call_text,
    stop=STOP,
    extra_body={"skip_special_tokens": False},
    check_name=check_fg_name,
    portable_syntax=FG_SYNTAX_PORTABLE,
    required_json_array=True,
)
"""The grammar builder's record of FunctionGemma's calls: ``<start_function_call>call:NAME{...}
<end_function_call>``, arguments in ``FG_SYNTAX``, consecutive when parallel. The request keeps the
special tokens (``skip_special_tokens: False``: the call tags are special tokens) and stops at
``<start_function_response>``. ``portable_syntax``: string bodies as plain EBNF rules instead of
xgrammar's ``TagDispatch`` (same language; for other engines; ~300 ms instead of ~10 ms to compile for
Gemma's vocabulary). Under ``required`` vLLM's functiongemma parser has no structural tag: it builds
a JSON array of calls."""


# --- parser -------------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_DELIMS = ",}]"


class _Bad(Exception):
    def __init__(self, message: str, *, at_end: bool = False) -> None:
        super().__init__(message)
        self.at_end = at_end


def _expect_more(text: str, pos: int, what: str) -> None:
    if pos >= len(text):
        raise _Bad(f"the text ends inside the call, where {what} was expected", at_end=True)


def _value(text: str, pos: int) -> tuple[Any, int]:
    _expect_more(text, pos, "a value")
    if text.startswith(ESCAPE, pos):
        end = text.find(ESCAPE, pos + len(ESCAPE))
        if end < 0:
            raise _Bad("a string is not closed by <escape>", at_end=True)
        return text[pos + len(ESCAPE) : end], end + len(ESCAPE)
    ch = text[pos]
    if ch == "{":
        return _object(text, pos)
    if ch == "[":
        items: list[Any] = []
        pos += 1
        _expect_more(text, pos, "an array item or ]")
        if text[pos] == "]":
            return items, pos + 1
        while True:
            item, pos = _value(text, pos)
            items.append(item)
            _expect_more(text, pos, ", or ]")
            if text[pos] == "]":
                return items, pos + 1
            if text[pos] != ",":
                raise _Bad(f"expected , or ] in an array at {text[pos : pos + 20]!r}")
            pos += 1
    for word, val in (("true", True), ("false", False), ("null", None)):
        if text.startswith(word, pos):
            end = pos + len(word)
            if end < len(text) and text[end] not in _DELIMS:
                break
            return val, end
    m = _NUMBER.match(text, pos)
    if m and (m.end() >= len(text) or text[m.end()] in _DELIMS):
        num = m.group(0)
        return (float(num) if m.group(1) or m.group(2) else int(num)), m.end()
    raise _Bad(f"not a value (strings go inside <escape>): {text[pos : pos + 30]!r}")


def _object(text: str, pos: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    pos += 1
    _expect_more(text, pos, "a key or }")
    if text[pos] == "}":
        return out, pos + 1
    while True:
        if text.startswith(ESCAPE, pos):
            key, pos = _value(text, pos)
        else:
            colon = text.find(":", pos)
            if colon < 0:
                raise _Bad("a key is not followed by ':'", at_end=True)
            key = text[pos:colon]
            if not key or re.search(r"[\s{}\[\],<>]", key):
                raise _Bad(f"not an argument name: {key[:40]!r}")
            pos = colon
        _expect_more(text, pos, "':'")
        if text[pos] != ":":
            raise _Bad(f"expected ':' after {key!r}")
        val, pos = _value(text, pos + 1)
        if key in out:
            raise _Bad(f"argument {key!r} is given twice")
        out[key] = val
        _expect_more(text, pos, ", or }")
        if text[pos] == "}":
            return out, pos + 1
        if text[pos] != ",":
            raise _Bad(f"expected , or }} after the value of {key!r}")
        pos += 1


def _one_call(text: str, start: int, known: dict[str, ToolSchema]) -> tuple[ToolCall | ParseFailure, int]:
    """The call starting at ``start`` (at ``<start_function_call>``) and where it ends."""
    pos = start + len(CALL_START)
    bad: _Bad | None = None
    try:
        if not text.startswith("call:", pos):
            _expect_more(text, pos + len("call:") - 1, "'call:'")
            raise _Bad("expected 'call:' after <start_function_call>")
        brace = text.find("{", pos)
        end_tag = text.find(CALL_END, pos)
        name = text[pos + 5 : brace] if brace >= 0 else ""
        if brace < 0 or 0 <= end_tag < brace or not name or re.search(r"[\s<>:,\[\]}]", name):
            at_end = brace < 0 and end_tag < 0
            raise _Bad(f"expected call:NAME{{...}}, got {text[pos : pos + 40]!r}", at_end=at_end)
        args, pos = _object(text, brace)
        if not text.startswith(CALL_END, pos):
            _expect_more(text, pos, CALL_END)
            raise _Bad(f"expected {CALL_END} after the arguments of {name!r}")
        pos += len(CALL_END)
    except RecursionError:
        bad = _Bad("arguments nested too deeply")
    except _Bad as caught:
        bad = caught
    if bad is not None:
        nxt = text.find(CALL_START, start + 1)
        end = text.find(CALL_END, start)
        stop = min(nxt if nxt >= 0 else len(text), end + len(CALL_END) if end >= 0 else len(text))
        kind = ErrorKind.parse_unterminated_call if bad.at_end else ErrorKind.parse_bad_arguments
        return failure(kind, str(bad), text[start:stop]), stop
    if known and name not in known:
        return failure(ErrorKind.parse_unknown_tool, f"no tool is named {name!r}", text[start:pos]), pos
    return ToolCall.create(name, args), pos


def parse_response(
    content: str | None, api_tool_calls: Sequence[ToolCall], tools: Sequence[ToolSchema]
) -> ParsedResponse:
    """Calls from FunctionGemma's native output, or from JSON (json_schema strategy). Never raises."""
    return parse_output(
        content or "", api_tool_calls, tools, call_start=CALL_START, trailers=_TRAILERS, one_call=_one_call
    )


ADAPTER = ModelAdapter(
    family=FAMILY,
    parse_response=parse_response,
    build_payload=functools.partial(build_payload, FORMAT),
    render_prompt=render_prompt,
    render_output=functools.partial(render_output, FORMAT),
    format_messages=format_messages,
    request_tool=canonical_schema,
    native_call_start=CALL_START,
)
