"""Tool schemas of a Python class's public methods, read from their signatures and docstrings.

Runs in the worker (``harness.tools.python.worker``): reading a user's class means importing the user's
module, which the harness never does in its own process. Stdlib only.

A method's docstring gives the description (its text up to a line ``Args:``) and, under ``Args:``,
one line per parameter, ``name (type): text`` or ``name: text``. Annotations give JSON types: ``str``
string, ``int`` integer, ``float`` number, ``bool`` boolean, ``list[X]``/``tuple`` array, ``dict``
object, ``Literal[...]`` an enum, ``X | None`` X; none or another type: no ``type`` (any value). A
parameter with a default is optional.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                           list: "array", tuple: "array", dict: "object"}
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def json_type(annotation: Any) -> dict[str, Any]:
    """A JSON schema for a type annotation (see the module doc)."""
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return json_type(kept[0]) if len(kept) == 1 else {}
    if origin in (list, tuple):
        schema: dict[str, Any] = {"type": "array"}
        if origin is list and args:
            items = json_type(args[0])
            if items:
                schema["items"] = items
        return schema
    if origin is dict:
        return {"type": "object"}
    return {}


def _docstring(text: str | None) -> tuple[str, dict[str, str]]:
    lines = inspect.cleandoc(text or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    for line in lines:
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            match = _ARG_LINE.match(line)
            if match:
                params[match.group(1)] = match.group(2).strip()
            elif line and not line[0].isspace():
                in_args = False
        if not in_args and line.strip() not in ("Returns:",):
            description.append(line)
    return " ".join(" ".join(description).split()), params


def method_schemas(cls: type) -> list[dict[str, Any]]:
    """OpenAI-style function entries (``{"name", "description", "parameters"}``) of ``cls``'s public
    methods, in name order."""
    found = []
    for name, function in inspect.getmembers(cls, predicate=inspect.isfunction):
        if name.startswith("_"):
            continue
        try:
            hints = typing.get_type_hints(function)
        except Exception:  # unresolvable annotations: no types
            hints = {}
        description, documented = _docstring(function.__doc__)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in list(inspect.signature(function).parameters.values())[1:]:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = json_type(hints.get(param.name, inspect.Parameter.empty))
            if param.name in documented:
                schema["description"] = documented[param.name]
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
            properties[param.name] = schema
        found.append({"name": name, "description": description or name,
                      "parameters": {"type": "object", "properties": properties, "required": required}})
    return found


__all__ = ["json_type", "method_schemas"]
