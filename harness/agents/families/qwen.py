"""Qwen3: prompt, constraints, output and parser side by side.

Call syntax (hermes style): ``<tool_call>\\n{"name": "NAME", "arguments": {...}}\\n</tool_call>``;
parallel calls are such blocks separated by ``"\\n"``. Arguments are JSON as Python's ``json.dumps``
writes it (``", "`` and ``": "``, non-ASCII kept).

Decisions (the other areas rely on them):

- Non-thinking mode: the prompt ends with ``<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n``, as
  Qwen3's template renders with ``enable_thinking=False``; every payload sends
  ``chat_template_kwargs={"enable_thinking": False}`` so a vLLM server renders the same prompt. The
  grammars therefore start at the first ``<tool_call>`` (no reasoning prefix).
- Argument order: canonical (``_values.canonical_keys``), shared with FunctionGemma. The tools this
  adapter declares (``format_tools`` and the ``<tools>`` block) list properties in that order, and
  the grammar, the structural tag's and json_schema's schemas and the renderer all use it.
- JSON whitespace is bounded: at most ``MAX_JSON_WS`` characters wherever JSON allows whitespace
  (EBNF and structural tag); the ``<tool_call>\\n{"name": ..., "arguments": `` frame is fixed.
- The parser reads each ``<tool_call>`` block's JSON with a JSON decoder rather than vLLM's
  non-greedy regex, so a string holding ``</tool_call>`` stays a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from harness.agents.adapter import ModelAdapter, ParsedResponse
from harness.agents.constraint import (
    ConstraintArtifact,
    ConstraintError,
    DecodingConstraint,
    RequestPayload,
)
from harness.agents.families._calls import (
    TEXT_ANSWER_EBNF,
    build_artifact_with,
    call_from_json,
    failure,
    index_tools,
    json_calls_text,
    make_payload,
    ordered_schema,
    parse_output,
    server_payload,
)
from harness.agents.families._ebnf import EbnfBuilder
from harness.agents.families._syntax import JSON_SYNTAX, ebnf_literal, rule_name
from harness.agents.families._values import json_text
from harness.agents.types import Message, ParseFailure, ToolCall, ToolSchema
from harness.vocabulary import ErrorKind, Family, Strategy

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


# --- constraints --------------------------------------------------------------------------------


def _check_tools(tools: Sequence[ToolSchema]) -> None:
    index_tools(tools)
    if not tools:
        raise ConstraintError("a constraint needs at least one tool")


def _tool_call_rule(builder: EbnfBuilder, tools: Sequence[ToolSchema]) -> str:
    """The rule of what follows ``<tool_call>\\n{"name": `` up to ``}\\n</tool_call>``: one tool's name
    and its arguments object. The text every call shares stays outside the alternatives: xgrammar
    compiles a grammar position by position, and a prefix repeated in each tool's alternative is paid
    once per tool; the names are a trie (``EbnfBuilder.choice``)."""
    entries = []
    for i, tool in enumerate(tools):
        hint = rule_name(f"t{i}", tool.name)
        members = builder.arguments(tool.parameters, hint)
        args = f'"{{" ws {members} ws "}}"' if members else '"{" ws "}"'
        entries.append((call_head(tool.name)[len(CALL_PREFIX) :], builder.add(f"{hint}-args", args)))
    return builder.choice(entries, "tool-call")


def tag_content_grammar(tools: Sequence[ToolSchema], close_objects: bool = True) -> str:
    """EBNF of what follows ``<tool_call>\\n{"name": `` up to ``}\\n</tool_call>`` (the structural
    tag's content): the ebnf strategy's own rules for the same tools."""
    builder = EbnfBuilder(JSON_SYNTAX, close_objects=close_objects)
    return builder.render(_tool_call_rule(builder, tools))


def build_ebnf(
    tools: Sequence[ToolSchema], *, parallel: bool, text_answer: bool = False, close_objects: bool = True
) -> str:
    """The whole answer: one ``<tool_call>`` block (several, "\\n"-separated, when parallel)."""
    _check_tools(tools)
    builder = EbnfBuilder(JSON_SYNTAX, close_objects=close_objects)
    tool_call = _tool_call_rule(builder, tools)
    call = builder.add("call", f"{ebnf_literal(CALL_PREFIX)} {tool_call} {ebnf_literal(CALL_TAIL)}")
    calls = f'{call} ("\\n" {call})*' if parallel else call
    if text_answer:
        return builder.render(f"{builder.add('text-answer', TEXT_ANSWER_EBNF)} | {calls}")
    return builder.render(calls)


def build_structural_tag(
    tools: Sequence[ToolSchema], *, parallel: bool, text_answer: bool = False, close_objects: bool = True
) -> str:
    """xgrammar 0.2.8 structural tag (JSON text) triggered by ``<tool_call>``: one tag,
    ``<tool_call>\\n{"name": `` ... ``}\\n</tool_call>``, whose content grammar holds every tool (name,
    then its arguments) in the ebnf strategy's value rules, so the two strategies enforce the same
    keywords and write the same language inside a call.

    Not xgrammar's built-in ``qwen_3`` tags (one tag per tool, each tool's arguments a ``json_schema``
    content): xgrammar compiles each content as a grammar of its own, with its own copy of the JSON
    string rules and their token masks, and that form grew to 6.2 s and an 84 MiB compiled grammar at
    1,000 BFCL tools on a 2-core machine, ~3x ebnf (docs/compile-cost.md)."""
    _check_tools(tools)
    content = {"type": "grammar", "grammar": tag_content_grammar(tools, close_objects)}
    tag = {"type": "tag", "begin": CALL_PREFIX, "content": content,
           "end": CALL_TAIL}
    fmt = {
        "type": "triggered_tags",
        "triggers": [CALL_START],
        "tags": [tag],
        "at_least_one": not text_answer,
        "stop_after_first": not parallel,
        "excludes": ["<think>", "</think>"],
    }
    return json.dumps({"type": "structural_tag", "format": fmt}, ensure_ascii=False)


def build_artifact(tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> ConstraintArtifact | None:
    return build_artifact_with(tools, constraint, ebnf=build_ebnf, structural_tag=build_structural_tag, family=FAMILY)


def build_payload(tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> RequestPayload:
    """vLLM ``structured_outputs`` for the strategy, plus non-thinking mode for the chat template."""
    if constraint.strategy.server_built:
        return server_payload(FAMILY, tools, constraint, EXTRA_BODY)
    return make_payload(build_artifact(tools, constraint), EXTRA_BODY)


# --- output -------------------------------------------------------------------------------------


def render_output(calls: Sequence[ToolCall], constraint: DecodingConstraint) -> str:
    """The exact text the model emits for ``calls`` under the strategy (gold replay)."""
    if constraint.strategy == Strategy.json_schema:
        return json_calls_text(calls, parallel=constraint.allow_parallel_calls)
    return "\n".join(call_head(c.name) + json_text(c.arguments) + CALL_TAIL for c in calls)


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
    build_payload=build_payload,
    render_prompt=render_prompt,
    render_output=render_output,
    format_tools=format_tools,
    native_call_start=CALL_START,
)
