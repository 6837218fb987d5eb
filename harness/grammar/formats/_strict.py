"""Strict JSON schemas: a tool's parameters as the grammars enforce them (canonical key order, objects
closed where the ``close_objects`` setting closes them), for the json_schema strategy, Qwen's per-tool
structural tags and ``harness fuzz``'s judge; with definitions made embeddable (``_refs``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.agents import ConstraintError
from harness.grammar.formats._values import canonical_keys
from harness.grammar.schema import embeddable, fits_type


def strict_schema(schema: Any, *, closed: bool = True, close_objects: bool = True) -> Any:
    """A copy of ``schema`` whose objects list properties in canonical order and are closed where the
    EBNF grammars close them: ``additionalProperties: false``, or (``close_objects``, the default) the
    arguments themselves (``closed``) and objects listing properties or required names without saying
    ``additionalProperties``. Definitions (``$defs``) are made strict too."""
    if not isinstance(schema, Mapping):
        return schema

    def sub(val: Any) -> Any:
        return strict_schema(val, closed=False, close_objects=close_objects)

    out: dict[str, Any] = {}
    for key, val in schema.items():
        if key == "properties" and isinstance(val, Mapping):
            out[key] = {k: sub(val[k]) for k in canonical_keys(val)}
        elif key in ("$defs", "definitions") and isinstance(val, Mapping):
            out[key] = {k: sub(v) for k, v in val.items()}
        elif key in ("items", "additionalProperties") and isinstance(val, Mapping):
            out[key] = sub(val)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(val, list):
            out[key] = [sub(v) for v in val]
        else:
            out[key] = val
    if out.get("nullable") is True and "type" in out and "enum" not in out and "const" not in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = types if "null" in types else [*types, "null"]  # OpenAPI's nullable, as JSON Schema
    if isinstance(out.get("enum"), list) and "type" in out:
        # values outside the type: xgrammar's converter lets them through (the benchmark corpus has strings on booleans)
        out["enum"] = [v for v in out["enum"] if fits_type(v, out)]
    is_object = out.get("type") == "object" or "properties" in out
    extra = out.get("additionalProperties")
    listed = bool(out.get("properties")) or bool(out.get("required"))
    if is_object and (extra is False or (extra is None and close_objects and (closed or listed))):
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


def standalone_schema(tool: Any, close_objects: bool = True) -> Any:
    """``tool``'s strict schema on its own (a structural tag's content): its pointers rewritten to
    strict definitions kept at its root (``_refs.embeddable``)."""
    params, defs = embedded_schema(tool, "d", close_objects)
    return {**params, "$defs": defs} if defs else params


def embedded_schema(tool: Any, prefix: str, close_objects: bool = True) -> tuple[Any, dict[str, Any]]:
    """``tool``'s strict schema to nest inside another, and the definitions its rewritten pointers
    name (``#/$defs/<prefix>N``), which the caller puts at the outer schema's root."""
    params, defs = embeddable(tool.parameters, prefix, lambda s: strict_schema(s, closed=False, close_objects=close_objects))
    params = strict_schema(params, close_objects=close_objects)
    _check_satisfiable(tool, params)
    return params, defs


def satisfiable_schema(tool: Any, close_objects: bool = True) -> Any:
    """``tool``'s strict schema, its definitions at its root (``standalone_schema``)."""
    return standalone_schema(tool, close_objects)


def _check_satisfiable(tool: Any, schema: Any) -> None:
    """ConstraintError naming the place when a required value has no possible value (an enum of
    which no value has the declared type: the benchmark corpus has arrays whose enum holds strings)."""

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


__all__ = ["embedded_schema", "satisfiable_schema", "standalone_schema", "strict_schema"]
