"""What every call format shares around calls: the tools' canonical order, and the json_schema
strategy's JSON calls.

- ``call_schema``: the json_schema strategy's schema, ``{"name": NAME, "arguments": {...}}`` (anyOf
  over the tools, each name a const, arguments closed), an array of those when parallel calls are
  allowed. Arguments list their properties in canonical order (see ``_ebnf``), which is the order
  xgrammar enforces for a JSON schema and the order the renderers write.
- ``json_calls_text``: that output for given calls (the gold answer under json_schema).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.agents import ConstraintError, ToolCall, ToolSchema
from harness.grammar.formats._strict import embedded_schema
from harness.grammar.formats._values import canonical_keys, json_text


def index_tools(tools: Sequence[ToolSchema]) -> dict[str, ToolSchema]:
    """Tools by name; a duplicate name is a configuration error."""
    out: dict[str, ToolSchema] = {}
    for tool in tools:
        if tool.name in out:
            raise ConstraintError(f"two tools are named {tool.name!r}")
        out[tool.name] = tool
    return out


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


# --- the json_schema strategy's call schema (each tool's strict schema: ``_strict``) ----------------

ANY_JSON_DEF = "harness_any_json"
ANY_JSON_SCHEMA: dict[str, Any] = {"anyOf": [
    {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
    {"type": "array", "items": {"$ref": f"#/$defs/{ANY_JSON_DEF}"}},
    {"type": "object", "additionalProperties": {"$ref": f"#/$defs/{ANY_JSON_DEF}"}},
]}
"""Any JSON value, spelt as a schema. xgrammar 0.2.8 compiles an open value (``{}``, an object with no
``properties``, an array with no ``items``) with built-in rules that write ``", "`` between items even
when compiled with ``separators=(",", ":")``, so a compact call holding such an object with two
members was rejected (found by ``harness fuzz`` on the benchmark corpus); this definition compiles through
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


def call_schema(tools: Iterable[Any], *, parallel: bool, text_answer: bool = False,
                close_objects: bool = True) -> dict[str, Any]:
    """The JSON schema of ``{"name": NAME, "arguments": {...}}`` over ``tools`` (a list when parallel);
    with ``text_answer``, a JSON string (a plain-text answer) is the other alternative. Each tool's
    definitions are hoisted to this schema's ``$defs`` (``embedded_schema``), named ``t<i>_<n>``."""
    defs: dict[str, Any] = {}
    arguments = []
    for i, tool in enumerate(tools):
        params, tool_defs = embedded_schema(tool, f"t{i}_", close_objects)
        arguments.append((tool, params))
        defs.update(tool_defs)
    calls = _calls_schema(arguments, parallel=parallel)
    out = {"anyOf": [calls, {"type": "string"}]} if text_answer else calls
    return {**out, "$defs": defs} if defs else out


def _calls_schema(arguments: list[tuple[Any, Any]], *, parallel: bool) -> dict[str, Any]:
    one = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "const": t.name},
                    "arguments": params,
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for t, params in arguments
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


__all__ = [
    "TEXT_ANSWER_EBNF",
    "call_schema",
    "canonical_schema",
    "index_tools",
    "json_calls_text",
    "ordered_schema",
    "with_any_json",
]
