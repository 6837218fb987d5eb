"""One grammar builder for every call format: a family is a ``CallFormat`` record (how its calls are
delimited and how their arguments are spelt), and the functions here build every strategy's
constraint, request payload and gold output from it.

A call is ``begin`` + the tool's ``head`` + its arguments + ``end``; parallel calls are such calls
joined by ``separator``. The grammars keep the text every call shares (``begin``) outside the tools'
alternatives, and the tools' heads are a trie (``EbnfBuilder.choice``): xgrammar compiles a grammar
position by position, and a prefix repeated in each of 100 tools' alternatives cost about a third of
the compile (``harness bench grammar``'s growth figures). The structural tag is one tag, ``begin`` ...
``end``, whose content grammar holds every tool, rather than one tag per tool (xgrammar's built-in
``qwen_3`` style): the same language, but xgrammar compiles each tag's content as a grammar of its own,
with its own copy of the string rules and their token masks, which cost ~4x the compile at 100 tools
and grew to 6.2 s and an 84 MiB compiled grammar at 1,000 of the benchmark corpus's tools (docs/compile-cost.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.agents import (
    ConstraintArtifact,
    ConstraintError,
    DecodingConstraint,
    RequestPayload,
    ToolCall,
    ToolSchema,
)
from harness.grammar.formats._calls import (
    TEXT_ANSWER_EBNF,
    call_schema,
    canonical_schema,
    index_tools,
    json_calls_text,
    with_any_json,
)
from harness.grammar.formats._ebnf import EbnfBuilder
from harness.grammar.formats._syntax import Syntax, ebnf_literal, rule_name
from harness.grammar.formats.vllm_tools import check_buildable, server_constraint, strategy_request
from harness.grammar.schema import tool_problem
from harness.vocabulary import Strategy


@dataclass(frozen=True, slots=True)
class CallFormat:
    """How one model family writes tool calls, and what its requests add: everything the builder needs."""

    family: str
    trigger: str
    """The text that opens a call: the structural tag's trigger, and where the parser looks for calls."""
    begin: str
    """Every call's text up to its tool's name (the structural tag's ``begin``)."""
    end: str
    """Every call's closing text (the structural tag's ``end``)."""
    separator: str
    """Between parallel calls."""
    syntax: Syntax
    """How argument values are spelt."""
    head: Callable[[str], str]
    """A tool's name as a call writes it, from ``begin`` up to the arguments' first member."""
    arguments: Callable[[str], str]
    """The EBNF body of a tool's arguments from the expression of their members ("" when none may appear)."""
    call_text: Callable[[ToolCall], str]
    """One call as the model writes it (the gold answer of the grammar strategies)."""
    stop: tuple[str, ...] = ()
    """The request's stop sequences."""
    excludes: tuple[str, ...] = ()
    """Texts the structural tag forbids outside the calls."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """What every request of the family adds to its body (beside ``structured_outputs``)."""
    check_name: Callable[[str, str], None] | None = None
    """Raises ``ConstraintError`` for a tool name the format cannot write (``(name, what)``)."""
    portable_syntax: Syntax | None = None
    """``syntax`` spelt in plain EBNF, for engines without xgrammar's own rules (``build_ebnf(portable=True)``)."""
    required_json_array: bool = False
    """Under ``required`` the server builds a JSON array of ``{"name", "parameters"}`` objects, not the
    native format (vLLM's fallback where the family's tool parser has no structural tag)."""


def _check_tools(fmt: CallFormat, tools: Sequence[ToolSchema]) -> None:
    index_tools(tools)
    if fmt.check_name is not None:
        for tool in tools:
            fmt.check_name(tool.name, "tool")
    if not tools:
        raise ConstraintError("a constraint needs at least one tool")


def _calls_rule(fmt: CallFormat, builder: EbnfBuilder, tools: Sequence[ToolSchema]) -> str:
    """The rule of what follows ``begin`` up to ``end``: one tool's head and its arguments."""
    entries = []
    for i, tool in enumerate(tools):
        hint = rule_name(f"t{i}", tool.name)
        members = builder.arguments(tool.parameters, hint)
        entries.append((fmt.head(tool.name), builder.add(f"{hint}-args", fmt.arguments(members))))
    return builder.choice(entries, "tool-call")


def tag_content_grammar(fmt: CallFormat, tools: Sequence[ToolSchema], *, close_objects: bool = True) -> str:
    """EBNF of what follows ``begin`` up to ``end`` (the structural tag's content): the ebnf strategy's
    own rules for the same tools, so the two strategies enforce the same keywords."""
    builder = EbnfBuilder(fmt.syntax, close_objects=close_objects)
    return builder.render(_calls_rule(fmt, builder, tools))


def build_ebnf(
    fmt: CallFormat, tools: Sequence[ToolSchema], *, parallel: bool, portable: bool = False,
    text_answer: bool = False, close_objects: bool = True,
) -> str:
    """The whole answer: one call (several, ``separator`` between them, when parallel), each tool with
    its own arguments; with ``text_answer``, a plain answer is the other alternative. ``portable``:
    the format's ``portable_syntax`` (same language, for other engines)."""
    _check_tools(fmt, tools)
    syntax = fmt.portable_syntax if portable and fmt.portable_syntax is not None else fmt.syntax
    builder = EbnfBuilder(syntax, close_objects=close_objects)
    tool_call = _calls_rule(fmt, builder, tools)
    call = builder.add("call", f"{ebnf_literal(fmt.begin)} {tool_call} {ebnf_literal(fmt.end)}")
    if not parallel:
        calls = call
    elif fmt.separator:
        calls = f"{call} ({ebnf_literal(fmt.separator)} {call})*"
    else:
        calls = f"{call}+"
    if text_answer:
        return builder.render(f"{builder.add('text-answer', TEXT_ANSWER_EBNF)} | {calls}")
    return builder.render(calls)


def build_structural_tag(
    fmt: CallFormat, tools: Sequence[ToolSchema], *, parallel: bool, text_answer: bool = False,
    close_objects: bool = True,
) -> str:
    """xgrammar 0.2.8 structural tag (JSON text) triggered by ``trigger``: one tag, ``begin`` ...
    ``end``, whose content grammar holds every tool (``tag_content_grammar``)."""
    _check_tools(fmt, tools)
    content = {"type": "grammar", "grammar": tag_content_grammar(fmt, tools, close_objects=close_objects)}
    tag = {"type": "tag", "begin": fmt.begin, "content": content, "end": fmt.end}
    tags: dict[str, Any] = {
        "type": "triggered_tags",
        "triggers": [fmt.trigger],
        "tags": [tag],
        "at_least_one": not text_answer,
        "stop_after_first": not parallel,
    }
    if fmt.excludes:
        tags["excludes"] = list(fmt.excludes)
    return json.dumps({"type": "structural_tag", "format": tags}, ensure_ascii=False)


def build_artifact(fmt: CallFormat, tools: Sequence[ToolSchema], constraint: DecodingConstraint,
                   ) -> ConstraintArtifact | None:
    """The strategy's artifact (json_schema is the same for every format); None for ``none``. A refusal
    is per tool: a tool whose schema uses a keyword the strategy's builder would not enforce
    (``keywords.tool_problem``), or that fails to build alone, is left out and named in the artifact's
    ``refused``; the rest are constrained. ConstraintError when every tool is refused. With no tool and
    a plain answer allowed, the language is that answer alone (a single-turn entry may offer no function)."""
    if not tools and constraint.allow_text_answer and constraint.strategy.constrained:
        return _text_only(constraint.strategy)
    if constraint.strategy == Strategy.none:
        return None
    problems = {t.name: p for t in tools if (p := tool_problem(t, fmt.family, constraint.strategy,
                                                                         check_after=constraint.check_after,
                                                                         backend=constraint.grammar_backend)) is not None}
    kept = [t for t in tools if t.name not in problems]

    def build(chosen: Sequence[ToolSchema]) -> ConstraintArtifact:
        if not chosen:
            raise ConstraintError("; ".join(problems.values()) or "a constraint needs at least one tool")
        try:
            return _artifact(fmt, chosen, constraint)
        except RecursionError:
            raise ConstraintError("a schema nested too deeply to build (past Python's recursion limit)") from None

    try:
        artifact = build(kept)
    except ConstraintError:
        if len(kept) < 2:
            raise
        for tool in kept:  # which ones: each alone
            try:
                build([tool])
            except ConstraintError as exc:
                problems[tool.name] = f"tool {tool.name!r}: {exc}"
        artifact = build([t for t in kept if t.name not in problems])
    return dataclasses.replace(artifact, refused=tuple(problems.items())) if problems else artifact


def _artifact(fmt: CallFormat, tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> ConstraintArtifact:
    parallel, text, close = constraint.allow_parallel_calls, constraint.allow_text_answer, constraint.close_objects
    if constraint.strategy == Strategy.ebnf:
        return ConstraintArtifact("grammar", build_ebnf(fmt, tools, parallel=parallel, text_answer=text,
                                                        close_objects=close))
    if constraint.strategy == Strategy.structural_tag:
        return ConstraintArtifact("structural_tag", build_structural_tag(
            fmt, tools, parallel=parallel, text_answer=text, close_objects=close))
    index_tools(tools)
    schema = call_schema(tools, parallel=parallel, text_answer=text, close_objects=close)
    return ConstraintArtifact("json", json.dumps(with_any_json(schema), ensure_ascii=False))


def _text_only(strategy: Strategy) -> ConstraintArtifact:
    """A plain answer and nothing else, in the strategy's artifact."""
    if strategy == Strategy.json_schema:
        return ConstraintArtifact("json", json.dumps({"type": "string"}))
    grammar = f"root ::= {TEXT_ANSWER_EBNF}"
    if strategy == Strategy.ebnf:
        return ConstraintArtifact("grammar", grammar)
    return ConstraintArtifact("structural_tag", json.dumps(
        {"type": "structural_tag", "format": {"type": "grammar", "grammar": grammar}}))


# --- payload ----------------------------------------------------------------------------------------


def build_payload(fmt: CallFormat, tools: Sequence[ToolSchema], constraint: DecodingConstraint) -> RequestPayload:
    """The request payload of the strategy: vLLM's ``structured_outputs`` with the artifact (or, for a
    strategy vLLM builds itself, its request fields), plus the format's extra body and stop."""
    if constraint.strategy.server_built:
        return server_payload(fmt.family, tools, constraint, fmt.extra_body, fmt.stop)
    return make_payload(build_artifact(fmt, tools, constraint), fmt.extra_body, fmt.stop)


def server_payload(
    family: str, tools: Sequence[ToolSchema], constraint: DecodingConstraint, extra: Mapping[str, Any],
    stop: tuple[str, ...] = (),
) -> RequestPayload:
    """The request of a strategy vLLM builds itself (``required``, ``strict``): no ``structured_outputs``,
    the strategy's ``tool_choice``/``strict``/``parallel_tool_calls``; ``artifact`` is the grammar vLLM
    builds from the tools (``harness.grammar.formats.vllm_tools``), for the oracle, the fuzz and the benches."""
    request = strategy_request(constraint.strategy, allow_parallel_calls=constraint.allow_parallel_calls)
    canonical = [canonical_schema(t) for t in tools]
    built = server_constraint(family, canonical, request)
    check_buildable(family, canonical, built)
    return RequestPayload(
        extra_body=dict(extra), stop=stop, artifact=built.artifact, tool_choice=request.tool_choice,  # type: ignore[arg-type]
        strict_tools=request.strict_tools, parallel_tool_calls=request.parallel_tool_calls, server_built=built.label,
    )


def make_payload(
    artifact: ConstraintArtifact | None, extra: Mapping[str, Any], stop: tuple[str, ...] = ()
) -> RequestPayload:
    """``extra_body = {"structured_outputs": {<field>: <artifact text>}, **extra}``: the field is
    ``grammar``, ``json`` or ``structural_tag`` as vLLM's ``StructuredOutputsParams`` names them; each
    value is the artifact's text (``json`` may be str or dict there; the text keeps one compile-cache
    key from the adapter to any server).

    A constrained request also says ``tool_choice: "none"``: with tools in the request and no
    ``tool_choice``, vLLM applies ``auto``, runs its tool parser and returns only the calls it parsed
    (its functiongemma parser drops unescaped numbers and booleans); with ``"none"`` the raw text comes
    back and the family's own parser reads it. The tools are still rendered into the prompt.

    No ``disable_any_whitespace`` is sent: vLLM reads it only from the server's configuration (the
    harness starts its servers with it; see ``harness.engines.vllm``)."""
    body: dict[str, Any] = dict(extra)
    if artifact is not None:
        body["structured_outputs"] = {artifact.kind: artifact.value}
    return RequestPayload(
        extra_body=body, stop=stop, artifact=artifact, tool_choice="none" if artifact is not None else None
    )


# --- output -------------------------------------------------------------------------------------


def render_output(fmt: CallFormat, calls: Sequence[ToolCall], constraint: DecodingConstraint) -> str:
    """The exact text the model emits for ``calls`` under the strategy (gold replay)."""
    if constraint.strategy == Strategy.json_schema:
        return json_calls_text(calls, parallel=constraint.allow_parallel_calls)
    if constraint.strategy == Strategy.required and fmt.required_json_array:
        return json_calls_text(calls, parallel=True, arguments_key="parameters")
    return fmt.separator.join(fmt.call_text(c) for c in calls)


__all__ = [
    "CallFormat",
    "build_artifact",
    "build_ebnf",
    "build_payload",
    "build_structural_tag",
    "make_payload",
    "render_output",
    "server_payload",
    "tag_content_grammar",
]
