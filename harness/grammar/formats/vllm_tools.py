"""What vLLM 0.32 builds itself for a request with tools: the ``required`` and ``strict`` strategies.

vLLM constrains tool calls server-side (read in its ``parser/abstract_parser.py`` and
``tool_parsers/``): for ``tool_choice: "required"`` or a named function, for tools marked
``"strict": true``, and for every request with tools when the server runs at ``--tool-strict-level
function|parameter``. Which grammar depends on the server's tool parser:

- a parser with a ``structural_tag_model`` (``hermes``, the parser the Qwen family uses) gets that
  model's structural tag (``structural_tag_registry.get_model_structural_tag``): one tag per tool,
  ``<tool_call>\\n{"name": "NAME", "arguments": `` then the arguments then ``}\\n</tool_call>`` (and
  the same without the newlines). A tool's arguments follow its schema only when the tool is strict
  (or the server level is ``parameter``); otherwise they are any JSON value. ``auto`` lets text
  through until ``<tool_call>``; ``required`` asks for at least one call; ``parallel_tool_calls:
  false`` stops after the first. With a structural tag the parser reports
  ``supports_required_and_named = False``, so no JSON array is built;
- a parser without one (``functiongemma`` in 0.32) gets no structural tag: ``required`` falls back to
  a JSON array of ``{"name", "parameters"}`` objects (``anyOf`` over the tools, ``minItems`` 1,
  ``maxItems`` 1 when ``parallel_tool_calls`` is false), a named function to its parameters' schema,
  and ``auto`` with strict tools to nothing at all.

:func:`server_constraint` predicts that for the harness's requests with the same rules, built with
the same field order and defaults xgrammar's structural-tag classes dump, so the artifact is byte for
byte the JSON text vLLM puts in ``structured_outputs.structural_tag`` (``tests/real_vllm`` compares it with vLLM's own code);
:func:`vllm_own_constraint` builds it with vLLM's code where vLLM is installed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.agents import ConstraintArtifact, ConstraintError, ToolSchema
from harness.vllm_schemas import MAX_JSON_NESTING, XGRAMMAR_REFUSAL, exceeds_nesting, xgrammar_unsupported
from harness.vocabulary import Strategy

VLLM_TOOL_PARSER: dict[str, str] = {"function_gemma": "functiongemma", "qwen": "hermes"}
"""The ``--tool-call-parser`` the harness starts vLLM with, per family."""
STRUCTURAL_TAG_MODEL: dict[str, str | None] = {"functiongemma": None, "hermes": "hermes"}
"""Each parser's ``structural_tag_model`` in vLLM 0.32 (None: the parser has no structural tag)."""
STRICT_LEVELS: tuple[str, ...] = ("auto", "function", "parameter")
"""vLLM's ``--tool-strict-level`` values, weakest first."""
HERMES_TAGS = ("<tool_call>", "</tool_call>")

Built = Literal["structural_tag", "json_array", "json_object", "none"]
ToolChoiceValue = str | dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ServerConstraint:
    """What vLLM builds for one request: the kind, the structural tag's model key, the artifact."""

    built: Built
    model_key: str | None
    artifact: ConstraintArtifact | None
    why: str
    """One line: why vLLM builds this (or nothing)."""

    @property
    def label(self) -> str:
        """``structural_tag:hermes``, ``json_array``, ``json_object`` or ``none``: what records keep."""
        return f"{self.built}:{self.model_key}" if self.model_key else self.built


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """The fields of a chat request vLLM derives its tool constraint from."""

    tool_choice: ToolChoiceValue
    """None: vLLM's default with tools (``auto``)."""
    strict_tools: bool
    """Every tool is sent with ``"strict": true``."""
    parallel_tool_calls: bool | None
    """None: not sent (vLLM's default, true)."""
    strict_names: frozenset[str] = frozenset()
    """Tools sent with ``"strict": true`` one by one (a client's request; the strategies set all)."""

    def is_strict(self, tool: ToolSchema) -> bool:
        return self.strict_tools or tool.name in self.strict_names


def strategy_request(strategy: Strategy, *, allow_parallel_calls: bool) -> ToolRequest:
    """The request fields of a server-built strategy: ``required`` sends ``tool_choice: "required"``,
    ``strict`` marks every tool strict and leaves ``tool_choice`` at ``auto``; both send
    ``parallel_tool_calls: false`` unless the constraint allows several calls."""
    parallel = None if allow_parallel_calls else False
    if strategy == Strategy.required:
        return ToolRequest("required", False, parallel)
    if strategy == Strategy.strict:
        return ToolRequest(None, True, parallel)
    raise ConstraintError(f"strategy {strategy!r} is not built by vLLM")


def _choice(request: ToolRequest) -> tuple[str, str | None]:
    """(simplified choice ``none``/``auto``/``required``/``forced``, the forced function's name)."""
    raw = request.tool_choice
    if raw is None or raw == "auto":
        return "auto", None
    if raw in ("none", "required"):
        return str(raw), None
    if isinstance(raw, dict) and isinstance(raw.get("function"), dict):
        return "forced", str(raw["function"].get("name"))
    raise ConstraintError(f"tool_choice {raw!r} is not one vLLM's chat completions take")


def server_constraint(
    family: str, tools: Sequence[ToolSchema], request: ToolRequest, *, strict_level: str = "auto"
) -> ServerConstraint:
    """What vLLM 0.32 started by the harness for ``family`` builds for a request with ``tools`` and
    ``request``'s fields (``strict_level``: the server's ``--tool-strict-level``)."""
    parser = VLLM_TOOL_PARSER[family]
    model_key = STRUCTURAL_TAG_MODEL[parser]
    choice, name = _choice(request)
    if not tools or choice == "none":
        return ServerConstraint("none", None, None, "no tools, or tool_choice none: vLLM builds nothing")
    level = STRICT_LEVELS.index(strict_level)
    single = request.parallel_tool_calls is False
    if single:  # limiting the call count needs the call envelope in the grammar
        level = max(level, STRICT_LEVELS.index("function"))
    if model_key is not None:
        if choice == "auto" and level == 0 and not any(request.is_strict(t) for t in tools):
            return ServerConstraint("none", None, None, f"{parser}: tool_choice auto and no strict tool")
        chosen = [t for t in tools if t.name == name] if choice == "forced" else list(tools)
        pinned = level >= STRICT_LEVELS.index("parameter")
        tag = hermes_structural_tag(chosen, choice, strict={t.name for t in chosen if pinned or request.is_strict(t)},
                                    single=single)
        return ServerConstraint("structural_tag", model_key, ConstraintArtifact("structural_tag", tag),
                                f"{parser} has the structural tag {model_key!r}")
    if choice == "required":
        schema = json_array_schema(tools, parallel=not single)
        return ServerConstraint("json_array", None, ConstraintArtifact("json", json.dumps(schema)),
                                f"{parser} has no structural tag: tool_choice required falls back to a JSON array")
    if choice == "forced":
        tool = next((t for t in tools if t.name == name), None)
        if tool is None:
            raise ConstraintError(f"tool_choice names the function {name!r}, which is not among the tools")
        return ServerConstraint("json_object", None, ConstraintArtifact("json", json.dumps(_params(tool))),
                                f"{parser} has no structural tag: a named function is its parameters' schema")
    return ServerConstraint("none", None, None,
                            f"{parser} has no structural tag: strict tools under tool_choice auto are not constrained")


def check_buildable(family: str, tools: Sequence[ToolSchema], built: ServerConstraint) -> None:
    """Refuse, naming the tool, a tool whose arguments' schema vLLM's constraint pins but vLLM refuses
    (a JSON constraint with a feature vLLM's xgrammar check flags: ``harness.vllm_schemas``) or
    xgrammar cannot compile: the server would answer 400 to every request with it, which is the
    constraint's refusal (``constraint:refused``), not the model's failure. Without xgrammar only
    vLLM's own check runs. Qwen's structural tag is not checked by vLLM: only compiled."""
    if built.artifact is None:
        return
    if built.artifact.kind == "json":  # vLLM checks a JSON schema before compiling it (harness.vllm_schemas)
        for tool in tools:
            if (refusal := xgrammar_unsupported(_params(tool))) is not None:
                raise ConstraintError(f"tool {tool.name!r}: {refusal}: vLLM's own constraint for {family} "
                                      f"({built.label}) is refused: vLLM (backend xgrammar) answers 400: {XGRAMMAR_REFUSAL}")
        if exceeds_nesting(json.loads(built.artifact.value)):
            raise ConstraintError(f"vLLM's own constraint for {family} ({built.label}) nests more than "
                                  f"{MAX_JSON_NESTING} levels: vLLM answers 400")
    pinned = built.built != "structural_tag" or '"json_schema": true' not in built.artifact.value
    for tool in tools if pinned else ():
        problem = _schema_problem(json.dumps(_params(tool), sort_keys=True))
        if problem is not None:
            raise ConstraintError(f"tool {tool.name!r}: vLLM's own constraint for {family} ({built.label}) cannot "
                                  f"compile its parameters: {problem}")


@functools.lru_cache(maxsize=1024)
def _schema_problem(schema: str) -> str | None:
    try:
        import xgrammar as xgr
    except ImportError:
        return None
    try:
        xgr.Grammar.from_json_schema(schema)
    except Exception as exc:  # xgrammar's conversion errors carry no common type
        return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return None


def _params(tool: ToolSchema) -> dict[str, Any]:
    return tool.parameters or {"type": "object", "properties": {}}


def json_array_schema(tools: Sequence[ToolSchema], *, parallel: bool) -> dict[str, Any]:
    """vLLM's JSON schema for ``tool_choice: "required"`` without a structural tag
    (``tool_parsers/utils.py``: ``_get_json_schema_from_tools``): each tool's ``$defs`` moved up to the
    array's (the tools' ``#/$defs/...`` pointers then resolve there); ConstraintError where two tools
    define one name differently, which vLLM refuses (400)."""
    defs: dict[str, Any] = {}
    params = []
    for tool in tools:
        own = dict(_params(tool))
        moved = own.pop("$defs", {})
        if not isinstance(moved, dict):
            raise ConstraintError(f"tool {tool.name!r}: `$defs` in its parameters must be an object (vLLM answers 400)")
        for name, sub in moved.items():
            if name in defs and defs[name] != sub:
                raise ConstraintError(f"tool {tool.name!r}: the definition {name!r} has another schema in another "
                                      "tool: vLLM's required array (one $defs for all tools) answers 400")
            defs[name] = sub
        params.append(own)
    schema: dict[str, Any] = {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "anyOf": [
                {"properties": {"name": {"type": "string", "enum": [t.name]}, "parameters": p},
                 "required": ["name", "parameters"]}
                for t, p in zip(tools, params, strict=True)
            ],
        },
    }
    if not parallel:
        schema["maxItems"] = 1
    if defs:
        schema["$defs"] = defs
    return schema


def hermes_structural_tag(tools: Sequence[ToolSchema], choice: str, *, strict: set[str], single: bool) -> str:
    """vLLM's ``hermes`` structural tag as the JSON text it sends to xgrammar
    (``_hermes_style_structural_tag``, then ``limit_to_single_tool_call`` when ``single``); the tools
    named in ``strict`` get their parameters' schema, the others any JSON value. Written as
    ``json.dumps(StructuralTag(...).model_dump())`` of xgrammar 0.2.8 writes it (every field with its
    default), so the text equals vLLM's and no xgrammar import is needed to build it."""
    start, end = HERMES_TAGS
    shapes = ((start + '\n{"name": "', "}\n" + end), (start + '{"name": "', "}" + end))
    tags = [
        {"type": "tag", "begin": begin + tool.name + '", "arguments": ',
         "content": {"type": "json_schema", "json_schema": tool.parameters if tool.name in strict else True,
                     "style": "json", "any_order": False, "max_whitespace_cnt": None, "excludes": []},
         "end": close}
        for tool in tools for begin, close in shapes
    ]
    fmt: dict[str, Any]
    if choice == "auto" and not tags:
        fmt = {"type": "any_text", "excludes": [], "max_tokens": None, "max_chars": None}
    elif choice == "auto":
        fmt = {"type": "triggered_tags", "triggers": [start], "tags": tags, "at_least_one": False,
               "stop_after_first": single, "excludes": []}
    else:
        fmt = {"type": "tags_with_separator", "tags": tags, "separator": "", "at_least_one": True,
               "stop_after_first": single or choice == "forced"}
    return json.dumps({"type": "structural_tag", "format": fmt})


def openai_tools(tools: Sequence[ToolSchema], *, strict: bool, strict_names: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The request's ``tools`` entries, each with ``"strict": true`` when ``strict`` (or named)."""
    out = []
    for tool in tools:
        entry = tool.to_openai()
        if strict or tool.name in strict_names:
            entry["function"]["strict"] = True
        out.append(entry)
    return out


def vllm_own_constraint(
    family: str, tools: Sequence[ToolSchema], request: ToolRequest, *, strict_level: str = "auto"
) -> ServerConstraint:
    """The same prediction built by vLLM's own code (its chat request model, its parser's structural
    tag registry and JSON-array fallback). Raises ImportError naming what is missing where vLLM is not
    installed."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers.structural_tag_registry import (
        get_model_structural_tag,
        get_structural_tag_tools,
        limit_to_single_tool_call,
        resolve_tool_strictness,
    )
    from vllm.tool_parsers.tool_strict_level import ToolStrictLevel
    from vllm.tool_parsers.utils import get_json_schema_from_tools

    parser = VLLM_TOOL_PARSER[family]
    model_key = STRUCTURAL_TAG_MODEL[parser]
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "x"}],
                            "tools": openai_tools(tools, strict=request.strict_tools,
                                                  strict_names=request.strict_names)}
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    if request.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    chat = ChatCompletionRequest.model_validate(body)
    level = ToolStrictLevel.from_name(strict_level)
    single = chat.parallel_tool_calls is False
    if single:
        level = max(level, ToolStrictLevel.FUNCTION)
    if model_key is not None:
        resolved = resolve_tool_strictness(get_structural_tag_tools(model_key, chat.tools or [], chat.tool_choice),
                                           chat.tool_choice, level)
        tag = None if resolved is None else get_model_structural_tag(
            model=model_key, tools=chat.tools, tool_choice=chat.tool_choice, reasoning=False, strict_level=level)
        if tag is None:
            return ServerConstraint("none", None, None, f"{parser}: vLLM builds no structural tag")
        if single:
            limit_to_single_tool_call(tag)
        return ServerConstraint("structural_tag", model_key,
                                ConstraintArtifact("structural_tag", json.dumps(tag.model_dump())),
                                f"{parser} has the structural tag {model_key!r}")
    schema = get_json_schema_from_tools(chat.tool_choice, chat.tools, chat.parallel_tool_calls)  # type: ignore[arg-type]
    if schema is None:
        return ServerConstraint("none", None, None, f"{parser}: vLLM builds no constraint")
    text = schema if isinstance(schema, str) else json.dumps(schema)
    built: Built = "json_array" if chat.tool_choice == "required" else "json_object"
    return ServerConstraint(built, None, ConstraintArtifact("json", text), f"{parser}: vLLM's JSON fallback")


__all__ = [
    "STRICT_LEVELS",
    "STRUCTURAL_TAG_MODEL",
    "VLLM_TOOL_PARSER",
    "ServerConstraint",
    "ToolRequest",
    "check_buildable",
    "hermes_structural_tag",
    "json_array_schema",
    "openai_tools",
    "server_constraint",
    "strategy_request",
    "vllm_own_constraint",
]
