"""BFCL's function docs as the tools a model is sent: BFCL's own conversion for OpenAI-style APIs.

BFCL's single-turn entries describe each function with its own type names (``dict``, ``float``,
``tuple``, ``any``, ...). Before it sends them to a model that takes tools in the request, BFCL
converts them (``bfcl_eval/model_handler/utils.py``: ``convert_to_tool`` with
``GORILLA_TO_OPENAPI``, OpenAI-compatible model styles):

- ``.`` in a function name becomes ``_`` (OpenAI's name pattern ``^[a-zA-Z0-9_-]{1,64}$``); its
  checker maps the expected name the same way before comparing;
- ``parameters.type`` becomes ``object``;
- every property's type is mapped by the table (``dict`` -> object, ``float`` -> number, ``tuple``
  -> array, ``any`` -> string, ...); a missing or unknown type becomes ``string``; a ``float`` also
  gets ``format: float`` and " This is a float type value." after its description;
- inside arrays and objects the mapping goes on as BFCL's does: an array's ``items`` type (and an
  array of arrays' inner ``items`` type), an object's or an array of objects' ``properties``.

This module does the same with the harness's copy of the table (``harness.agents.types``; a test
holds it equal to BFCL's) and no import of BFCL's module, whose imports pull model SDKs and
tree-sitter. A test converts every function doc of BFCL's single-turn categories with BFCL's own
function and with this one and finds them equal.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from harness.agents.types import GORILLA_TYPES, ToolSchema

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object")
"""Type names JSON Schema and BFCL's table share (mapped to themselves; ``null`` is not in BFCL's table)."""
FLOAT_NOTE = " This is a float type value."
"""What BFCL appends to the description of a ``float`` property."""


def _mapped(kind: Any) -> str:
    """BFCL's ``GORILLA_TO_OPENAPI[kind]``; None where BFCL's table has no entry."""
    if kind in JSON_TYPES:
        return str(kind)
    return GORILLA_TYPES.get(kind) if isinstance(kind, str) else None  # type: ignore[return-value]


def _item_type(kind: Any, where: str) -> str:
    """An ``items`` type: BFCL indexes its table there (no fallback to string)."""
    mapped = _mapped(kind)
    if mapped is None:
        raise ValueError(f"{where}: BFCL cannot convert the items type {kind!r}")
    return mapped


def _cast_properties(properties: dict[str, Any], where: str) -> dict[str, Any]:
    """BFCL's ``_cast_to_openai_type``, on a copy it may change in place."""
    for key, value in properties.items():
        here = f"{where}.{key}"
        if "type" not in value:
            value["type"] = "string"
        else:
            kind = value["type"]
            if kind == "float":
                value["format"] = "float"
                value["description"] = value["description"] + FLOAT_NOTE  # BFCL's KeyError without one
            value["type"] = _mapped(kind) or "string"
        if value["type"] not in ("array", "object"):
            continue
        if "properties" in value:
            value["properties"] = _cast_properties(value["properties"], f"{here}.properties")
        elif "items" in value:
            items = value["items"]
            items["type"] = _item_type(items["type"], f"{here}.items")
            if items["type"] == "array" and "items" in items:
                items["items"]["type"] = _item_type(items["items"]["type"], f"{here}.items.items")
            elif items["type"] == "object" and "properties" in items:
                items["properties"] = _cast_properties(items["properties"], f"{here}.items.properties")
    return properties


def openai_name(name: str) -> str:
    """The function name BFCL sends to OpenAI-style APIs: ``.`` replaced by ``_``."""
    return name.replace(".", "_")


def convert_function_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    """One BFCL function doc as BFCL sends it to an OpenAI-compatible API (the ``function`` object of a
    ``{"type": "function", "function": ...}`` tool); the input is not changed. ValueError (naming the
    function and the field) where BFCL's own conversion fails."""
    item = copy.deepcopy(dict(doc))
    name = item.get("name")
    if not isinstance(name, str) or not isinstance(item.get("parameters"), dict):
        raise ValueError(f"not a BFCL function doc (name and parameters): {str(doc)[:120]}")
    where = f"function {name!r}: parameters.properties"
    try:
        item["name"] = openai_name(name)
        item["parameters"]["type"] = "object"
        item["parameters"]["properties"] = _cast_properties(item["parameters"]["properties"], where)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: BFCL's conversion fails here ({type(exc).__name__}: {exc})") from None
    return item


def convert_to_tool(docs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """BFCL's ``convert_to_tool(docs, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)``: OpenAI
    tools, ``{"type": "function", "function": ...}`` each."""
    return [{"type": "function", "function": convert_function_doc(doc)} for doc in docs]


def tool_schemas(docs: Iterable[Mapping[str, Any]]) -> list[ToolSchema]:
    """The converted docs as the harness's tool schemas (what grammars, prompts and validity use)."""
    return [ToolSchema.from_openai(tool) for tool in convert_to_tool(docs)]


__all__ = ["FLOAT_NOTE", "JSON_TYPES", "convert_function_doc", "convert_to_tool", "openai_name", "tool_schemas"]
