"""What both families share around calls: JSON call schemas, reading JSON calls, payloads.

- ``call_schema``: the json_schema strategy's schema, ``{"name": NAME, "arguments": {...}}`` (anyOf
  over the tools, each name a const, arguments closed), an array of those when parallel calls are
  allowed. Arguments list their properties in canonical order (see ``_ebnf``), which is the order
  xgrammar enforces for a JSON schema and the order the renderers write.
- ``read_json_calls`` reads that output (and any ``{"name", "arguments"}`` JSON) into calls or typed
  errors; ``check_api_calls`` vets calls a server already parsed; ``finish`` assembles the
  ``ParsedResponse`` (text outside the calls is kept; an answer with no call is ``parse:no_call``).
- ``make_payload``: the request payload with vLLM's ``StructuredOutputsParams`` field names.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from harness.agents.adapter import ParsedResponse
from harness.agents.constraint import ConstraintArtifact, ConstraintError, DecodingConstraint, RequestPayload
from harness.agents.families._types import fits_type
from harness.agents.families._values import canonical_keys, json_text
from harness.agents.types import ParseFailure, ToolCall, ToolSchema
from harness.vocabulary import ErrorKind, Strategy

MAX_ERROR_TEXT = 400
"""Longest excerpt of the offending output kept in a ParseFailure."""


def index_tools(tools: Sequence[ToolSchema]) -> dict[str, ToolSchema]:
    """Tools by name; a duplicate name is a configuration error."""
    out: dict[str, ToolSchema] = {}
    for tool in tools:
        if tool.name in out:
            raise ConstraintError(f"two tools are named {tool.name!r}")
        out[tool.name] = tool
    return out


def failure(kind: str, message: str, text: str = "") -> ParseFailure:
    return ParseFailure(kind=kind, message=message, text=text[:MAX_ERROR_TEXT])


def ordered_schema(schema: Any) -> Any:
    """A copy of ``schema`` with every ``properties`` mapping in canonical order (nothing else changed)."""
    if isinstance(schema, Mapping):
        return {
            k: (
                {p: ordered_schema(v[p]) for p in canonical_keys(v)}
                if k == "properties" and isinstance(v, Mapping)
                else ordered_schema(v)
            )
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [ordered_schema(v) for v in schema]
    return schema


def canonical_schema(tool: ToolSchema) -> ToolSchema:
    """``tool`` with its parameters' properties in canonical order: the order every grammar forces, so
    the tools a server renders into the prompt list arguments in the order the model must write them."""
    return dataclasses.replace(tool, parameters=ordered_schema(tool.parameters))


# --- strict JSON schemas (json_schema strategy, JSON structural tags) ----------------------------


def strict_schema(schema: Any, *, closed: bool = True) -> Any:
    """A copy of ``schema`` whose objects list properties in canonical order and, where they declare
    properties (or required names, which declare properties of any value; or at the top, ``closed``),
    forbid others: what the EBNF grammars enforce."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, val in schema.items():
        if key == "properties" and isinstance(val, Mapping):
            out[key] = {k: strict_schema(val[k], closed=False) for k in canonical_keys(val)}
        elif key in ("items", "additionalProperties") and isinstance(val, Mapping):
            out[key] = strict_schema(val, closed=False)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(val, list):
            out[key] = [strict_schema(v, closed=False) for v in val]
        else:
            out[key] = val
    if out.get("nullable") is True and "type" in out and "enum" not in out and "const" not in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = types if "null" in types else [*types, "null"]  # OpenAPI's nullable, as JSON Schema
    if isinstance(out.get("enum"), list) and "type" in out:
        # values outside the type: xgrammar's converter lets them through (BFCL has strings on booleans)
        out["enum"] = [v for v in out["enum"] if fits_type(v, out)]
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and ("properties" in out or closed or out.get("required")):
        required = [r for r in out.get("required") or () if isinstance(r, str)]
        if isinstance(out.get("properties"), dict):  # an optional argument no value fits cannot appear
            out["properties"] = {k: v for k, v in out["properties"].items()
                                 if k in required or not (isinstance(v, dict) and v.get("enum") == [])}
        out["properties"] = {**{r: {} for r in required if r not in (out.get("properties") or {})},
                             **(out.get("properties") or {})}
        out["additionalProperties"] = False
    if closed:
        out.setdefault("type", "object")
    return out


ANY_JSON_DEF = "harness_any_json"
ANY_JSON_SCHEMA: dict[str, Any] = {"anyOf": [
    {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
    {"type": "array", "items": {"$ref": f"#/$defs/{ANY_JSON_DEF}"}},
    {"type": "object", "additionalProperties": {"$ref": f"#/$defs/{ANY_JSON_DEF}"}},
]}
"""Any JSON value, spelt as a schema. xgrammar 0.2.8 compiles an open value (``{}``, an object with no
``properties``, an array with no ``items``) with built-in rules that write ``", "`` between items even
when compiled with ``separators=(",", ":")``, so a compact call holding such an object with two
members was rejected (found by ``harness fuzz`` on BFCL's tools); this definition compiles through
its ordinary object and array rules, which honour the separators."""


def with_any_json(schema: Any) -> Any:
    """``schema`` (a strict schema, or a whole call schema) with every open value pointing at
    ``ANY_JSON_SCHEMA`` in ``$defs`` (added at the top when used); for xgrammar's JSON-schema compiler."""
    used = False

    def walk(node: Any) -> Any:
        nonlocal used
        if node is True or node == {}:
            used = True
            return {"$ref": f"#/$defs/{ANY_JSON_DEF}"}
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, Mapping):
            return node
        out = {k: (v if k in ("enum", "const", "default", "examples", "required") else
                   {p: walk(q) for p, q in v.items()} if k in ("properties", "$defs") and isinstance(v, Mapping)
                   else walk(v)) for k, v in node.items()}
        kind = out.get("type")
        types: list[Any] = kind if isinstance(kind, list) else [kind]
        if "object" in types and not out.get("properties") and out.get("additionalProperties", True) is True:
            out["additionalProperties"] = walk(True)
        if "array" in types and "items" not in out and "prefixItems" not in out:
            out["items"] = walk(True)
        return out

    converted = walk(schema)
    if used and isinstance(converted, dict):
        converted = {**converted, "$defs": {**converted.get("$defs", {}), ANY_JSON_DEF: ANY_JSON_SCHEMA}}
    return converted


TEXT_ANSWER_EBNF = "[^<]+"
"""A plain-text answer (``allow_text_answer``): any non-empty text without ``<``, so it can never spell
a call tag that the grammar did not check."""


def call_schema(tools: Iterable[Any], *, parallel: bool, text_answer: bool = False) -> dict[str, Any]:
    """The JSON schema of ``{"name": NAME, "arguments": {...}}`` over ``tools`` (a list when parallel);
    with ``text_answer``, a JSON string (a plain-text answer) is the other alternative."""
    calls = _calls_schema(tools, parallel=parallel)
    if not text_answer:
        return calls
    return {"anyOf": [calls, {"type": "string"}]}


def satisfiable_schema(tool: Any) -> Any:
    """``tool``'s strict schema; ConstraintError naming the place when a required value has no possible
    value (an enum of which no value has the declared type: BFCL has arrays whose enum holds strings)."""
    schema = strict_schema(tool.parameters)

    def empty(node: Any, where: str) -> str | None:
        if not isinstance(node, Mapping):
            return None
        if node.get("enum") == []:
            return where
        for key in node.get("required") or ():
            found = empty((node.get("properties") or {}).get(key), f"{where}.{key}")
            if found:
                return found
        return empty(node.get("items"), f"{where}[]") if node.get("minItems", 0) else None

    found = empty(schema, "parameters")
    if found is not None:
        raise ConstraintError(f"tool {tool.name!r}: {found}: no value satisfies the schema (enum values outside its type)")
    return schema


def _calls_schema(tools: Iterable[Any], *, parallel: bool) -> dict[str, Any]:
    one = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "const": t.name},
                    "arguments": satisfiable_schema(t),
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for t in tools
        ]
    }
    if not one["anyOf"]:
        raise ConstraintError("a constraint needs at least one tool")
    return {"type": "array", "items": one, "minItems": 1} if parallel else one


def json_calls_text(calls: Sequence[ToolCall], *, parallel: bool, arguments_key: str = "arguments") -> str:
    """The json_schema strategy's output: ``{"name":...,"arguments":{...}}`` (a list when parallel
    calls are allowed), ``name`` first, arguments in canonical order, compact: the only spelling vLLM's
    json_schema language allows with ``disable_any_whitespace`` (see ``harness.grammar.compile``).
    Several calls without parallel calls render as a list, which the constraint then rejects.
    vLLM's own JSON array for ``tool_choice: "required"`` names the arguments ``parameters`` and is
    always a list (``arguments_key="parameters"``, ``parallel=True``)."""
    objs = [
        f'{{"name":{json.dumps(c.name, ensure_ascii=False)},"{arguments_key}":{json_text(c.arguments, compact=True)}}}'
        for c in calls
    ]
    if not objs:
        return ""
    return objs[0] if len(objs) == 1 and not parallel else "[" + ",".join(objs) + "]"


# --- reading calls --------------------------------------------------------------------------------


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


GrammarBuilder = Callable[..., str]


def build_artifact_with(
    tools: Sequence[ToolSchema],
    constraint: DecodingConstraint,
    *,
    ebnf: GrammarBuilder,
    structural_tag: GrammarBuilder,
    family: str,
) -> ConstraintArtifact | None:
    """The strategy's artifact from a family's two grammar builders (json_schema is the same for all
    families); None for ``none``. A schema keyword the strategy's builder would not enforce is refused
    first (``keywords.check_keywords``). With no tool and a plain answer allowed, the language is that
    answer alone (a BFCL entry may offer no function at all)."""
    from harness.agents.families.keywords import check_keywords

    if not tools and constraint.allow_text_answer and constraint.strategy.constrained:
        return _text_only(constraint.strategy)
    if constraint.strategy != "none":
        check_keywords(tools, family, constraint.strategy)
    parallel, text = constraint.allow_parallel_calls, constraint.allow_text_answer
    if constraint.strategy == Strategy.ebnf:
        return ConstraintArtifact("grammar", ebnf(tools, parallel=parallel, text_answer=text))
    if constraint.strategy == Strategy.structural_tag:
        return ConstraintArtifact("structural_tag", structural_tag(tools, parallel=parallel, text_answer=text))
    if constraint.strategy == Strategy.json_schema:
        index_tools(tools)
        return ConstraintArtifact(
            "json", json.dumps(with_any_json(call_schema(tools, parallel=parallel, text_answer=text)), ensure_ascii=False)
        )
    return None


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


def server_payload(
    family: str, tools: Sequence[ToolSchema], constraint: DecodingConstraint, extra: Mapping[str, Any],
    stop: tuple[str, ...] = (),
) -> RequestPayload:
    """The request of a strategy vLLM builds itself (``required``, ``strict``): no ``structured_outputs``,
    the strategy's ``tool_choice``/``strict``/``parallel_tool_calls``; ``artifact`` is the grammar vLLM
    builds from the tools (``harness.agents.vllm_tools``), for the oracle, the fuzz and the benches."""
    from harness.agents.vllm_tools import check_buildable, server_constraint, strategy_request

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
