"""FunctionGemma's tool declarations in the prompt (``declaration:NAME{description:...,parameters:{...} }``),
as Google's published renderings write them: keys in the canonical order, strings between
``<escape>`` delimiters, types upper-case, ``properties:{...} },`` and ``} }`` with a space. Nested
objects follow the Gemma chat-template family and are not byte-verified.
"""

from __future__ import annotations

from typing import Any

from harness.agents import ToolSchema
from harness.grammar.formats import ESCAPE, canonical_keys, fg_text


def _esc(text: Any) -> str:
    return f"{ESCAPE}{text}{ESCAPE}"


def _type_name(schema: dict[str, Any]) -> str:
    t = schema.get("type", "")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "")
    return str(t).upper()


def _required(names: Any) -> str:
    return "required:[" + ",".join(_esc(r) for r in names) + "]"


def _items(items: dict[str, Any]) -> str:
    parts = []
    for key in canonical_keys(items):
        val = items[key]
        if val is None:
            continue
        if key == "properties" and isinstance(val, dict):
            parts.append("properties:{" + _properties(val) + "}")
        elif key == "required":
            parts.append(_required(val))
        elif key == "type":
            parts.append("type:" + _esc(_type_name(items)))
        else:
            parts.append(f"{key}:{fg_text(val, escape_keys=True, strict=False)}")
    return ",".join(parts)


def _properties(props: dict[str, Any]) -> str:
    parts = []
    for key in canonical_keys(props):
        prop = props[key] if isinstance(props[key], dict) else {}
        inner = []
        if prop.get("description"):
            inner.append("description:" + _esc(prop["description"]))
        type_name = _type_name(prop)
        if type_name == "STRING" and prop.get("enum"):
            inner.append("enum:" + fg_text(list(prop["enum"]), escape_keys=True, strict=False))
        elif type_name == "ARRAY" and isinstance(prop.get("items"), dict) and prop["items"]:
            inner.append("items:{" + _items(prop["items"]) + "}")
        if prop.get("nullable") or (isinstance(prop.get("type"), list) and "null" in prop["type"]):
            inner.append("nullable:true")
        if type_name == "OBJECT":
            if isinstance(prop.get("properties"), dict):
                inner.append("properties:{" + _properties(prop["properties"]) + "}")
            if prop.get("required"):
                inner.append(_required(prop["required"]))
        inner.append("type:" + _esc(type_name))
        parts.append(f"{key}:{{" + ",".join(inner) + "}")
    return ",".join(parts)


def declaration(tool: ToolSchema) -> str:
    """``declaration:NAME{description:...,parameters:{...} }`` as the chat template writes it."""
    out = f"declaration:{tool.name}{{description:{_esc(tool.description)}"
    params = tool.parameters
    if params:
        out += ",parameters:{"
        if params.get("properties"):
            out += "properties:{" + _properties(params["properties"]) + " },"
        if params.get("required"):
            out += _required(params["required"]) + ","
        out += "type:" + _esc(str(params.get("type", "object")).upper()) + "}"
    return out + " }"


__all__ = ["declaration"]
