"""Qwen3: prompt, constraints, output and parser side by side.

Call syntax (hermes style): ``<tool_call>\\n{"name": "NAME", "arguments": {...}}\\n</tool_call>``;
parallel calls are such blocks separated by ``"\\n"``. Arguments are JSON as Python's ``json.dumps``
writes it (``", "`` and ``": "``, non-ASCII kept).

Decisions (the other areas rely on them):

- Non-thinking mode: the prompt ends with ``<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n``, as
  Qwen3's template renders with ``enable_thinking=False``; every payload sends
  ``chat_template_kwargs={"enable_thinking": False}`` so a vLLM server renders the same prompt. The
  grammars therefore start at the first ``<tool_call>`` (no reasoning prefix).
- Argument order: canonical (``harness.grammar.formats.canonical_keys``), shared with FunctionGemma. The tools this
  adapter declares (``format_tools`` and the ``<tools>`` block) list properties in that order, and
  the grammar, the structural tag's and json_schema's schemas and the renderer all use it.
- JSON whitespace is bounded: at most ``MAX_JSON_WS`` characters wherever JSON allows whitespace
  (EBNF and structural tag); the ``<tool_call>\\n{"name": ..., "arguments": `` frame is fixed.
- The parser reads each ``<tool_call>`` block's JSON with a JSON decoder rather than vLLM's
  non-greedy regex, so a string holding ``</tool_call>`` stays a string.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from harness.agents import Message, ModelAdapter, ParsedResponse, ParseFailure, ToolCall, ToolSchema
from harness.grammar.families._parse import call_from_json, failure, parse_output
from harness.grammar.formats import (
    JSON_SYNTAX,
    CallFormat,
    build_payload,
    canonical_schema,
    json_text,
    ordered_schema,
    render_output,
)
from harness.vocabulary import ErrorKind, Family

FAMILY = Family.qwen
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
CALL_START, CALL_END = "<tool_call>", "</tool_call>"
EMPTY_THINK = "<think>\n\n</think>\n\n"
EXTRA_BODY = {"chat_template_kwargs": {"enable_thinking": False}}
TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
_THINK = re.compile(r"\s*<think>.*?</think>\s*", re.DOTALL)
"""A reasoning block at the start of an answer (matched there only: ``<think>`` written inside a
call's string is text, found by ``harness fuzz``)."""
_TRAILERS = (IM_END, "<|endoftext|>")

# --- prompt ------------------------------------------------------------------------------------


def format_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """OpenAI ``tools`` entries with properties in canonical order (the order the grammars enforce)."""
    return [ordered_schema(t.to_openai()) for t in tools]


def _tojson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def call_head(name: str) -> str:
    """The fixed text before a call's arguments object."""
    return f'{CALL_START}\n{{"name": {_tojson(name)}, "arguments": '


CALL_TAIL = "}\n" + CALL_END
CALL_PREFIX = f'{CALL_START}\n{{"name": '
"""What every call's head starts with (``call_head``)."""


def _is_tool_response(text: str) -> bool:
    return text.startswith("<tool_response>") and text.endswith("</tool_response>")


def render_prompt(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> str:
    """The prompt as Qwen3's chat template renders it (non-thinking mode), generation prompt included."""
    msgs = list(messages)
    out: list[str] = []
    first_is_system = bool(msgs) and msgs[0].role in ("system", "developer")
    if tools:
        out.append(f"{IM_START}system\n")
        if first_is_system:
            out.append((msgs[0].content or "") + "\n\n")
        out.append(TOOLS_HEAD)
        out += ["\n" + _tojson(t) for t in format_tools(tools)]
        out.append(f"{TOOLS_TAIL}{IM_END}\n")
    elif first_is_system:
        out.append(f"{IM_START}system\n{msgs[0].content or ''}{IM_END}\n")
    last_query = len(msgs) - 1
    for idx in range(len(msgs) - 1, -1, -1):
        if msgs[idx].role == "user" and not _is_tool_response(msgs[idx].content or ""):
            last_query = idx
            break
    for idx, msg in enumerate(msgs):
        content = msg.content or ""
        if msg.role == "user" or (msg.role in ("system", "developer") and idx > 0):
            role = "system" if msg.role == "developer" else msg.role
            out.append(f"{IM_START}{role}\n{content}{IM_END}\n")
        elif msg.role == "assistant":
            reasoning = ""
            if "</think>" in content:
                reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
                content = content.split("</think>")[-1].lstrip("\n")
            if idx > last_query and (idx == len(msgs) - 1 or reasoning):
                think = f"<think>\n{reasoning.strip(chr(10))}\n</think>\n\n"
                out.append(f"{IM_START}assistant\n{think}{content.lstrip(chr(10))}")
            else:
                out.append(f"{IM_START}assistant\n{content}")
            for j, call in enumerate(msg.tool_calls):
                if j > 0 or content:
                    out.append("\n")
                out.append(call_head(call.name) + _tojson(call.arguments) + CALL_TAIL)
            out.append(f"{IM_END}\n")
        elif msg.role == "tool":
            if idx == 0 or msgs[idx - 1].role != "tool":
                out.append(f"{IM_START}user")
            out.append(f"\n<tool_response>\n{content}\n</tool_response>")
            if idx == len(msgs) - 1 or msgs[idx + 1].role != "tool":
                out.append(f"{IM_END}\n")
    out.append(f"{IM_START}assistant\n{EMPTY_THINK}")
    return "".join(out)


# --- call format ------------------------------------------------------------------------------

FORMAT = CallFormat(
    family=FAMILY,
    trigger=CALL_START,
    begin=CALL_PREFIX,
    end=CALL_TAIL,
    separator="\n",
    syntax=JSON_SYNTAX,
    head=lambda name: call_head(name)[len(CALL_PREFIX):],
    arguments=lambda members: f'"{{" ws {members} ws "}}"' if members else '"{" ws "}"',
    call_text=lambda call: call_head(call.name) + json_text(call.arguments) + CALL_TAIL,
    excludes=("<think>", "</think>"),
    extra_body=EXTRA_BODY,
)
"""The grammar builder's record of Qwen's calls: ``<tool_call>\n{"name": NAME, "arguments": {...}}
\n</tool_call>``, arguments in ``JSON_SYNTAX`` (whitespace bounded), "\n" between parallel calls; the
structural tag forbids a reasoning block around the calls, and every request asks for non-thinking
mode (``EXTRA_BODY``)."""


# --- parser -------------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()


def _one_call(text: str, start: int, known: dict[str, ToolSchema]) -> tuple[ToolCall | ParseFailure, int]:
    """The ``<tool_call>`` block at ``start`` and where it ends."""
    body_at = start + len(CALL_START)
    close = text.find(CALL_END, body_at)
    region_end = close + len(CALL_END) if close >= 0 else len(text)
    region = text[start:region_end]
    pos = body_at
    while pos < len(text) and text[pos].isspace():
        pos += 1
    try:
        obj, end = _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError) as exc:
        if close < 0:
            return failure(
                ErrorKind.parse_unterminated_call, f"no {CALL_END} and no complete JSON: {exc}", region
            ), region_end
        return failure(ErrorKind.parse_bad_json, f"the call is not valid JSON: {exc}", region), region_end
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    if not text.startswith(CALL_END, after):
        if after >= len(text):
            return failure(
                ErrorKind.parse_unterminated_call, f"the call is not closed by {CALL_END}", region
            ), region_end
        if close < 0:
            return failure(ErrorKind.parse_unterminated_call, f"no {CALL_END} after the call", region), region_end
        return failure(
            ErrorKind.parse_bad_json, f"unexpected text after the call's JSON: {text[after : after + 30]!r}", region
        ), region_end
    return call_from_json(obj, known, text[start : after + len(CALL_END)]), after + len(CALL_END)


def parse_response(
    content: str | None, api_tool_calls: Sequence[ToolCall], tools: Sequence[ToolSchema]
) -> ParsedResponse:
    """Calls from hermes-style ``<tool_call>`` blocks or from JSON (json_schema). Never raises.

    A closed ``<think>...</think>`` block at the start is reasoning: it is neither content nor searched
    for calls.
    """
    text = content or ""
    if not api_tool_calls and (think := _THINK.match(text)) is not None:
        text = text[think.end():]
    return parse_output(text, api_tool_calls, tools, call_start=CALL_START, trailers=_TRAILERS, one_call=_one_call)


ADAPTER = ModelAdapter(
    family=FAMILY,
    parse_response=parse_response,
    build_payload=functools.partial(build_payload, FORMAT),
    render_prompt=render_prompt,
    render_output=functools.partial(render_output, FORMAT),
    format_tools=format_tools,
    request_tool=canonical_schema,
    native_call_start=CALL_START,
)
