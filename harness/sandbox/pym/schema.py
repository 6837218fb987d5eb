"""Input type annotations -> JSON Schema.

Two fragments per input: the one the model sees (seed 001 section 4.1: str -> string, int -> integer,
float -> number, bool -> boolean, list -> array, dict -> object, Any -> string, Optional[X] -> X and
not required, Literal -> enum) and a stricter one used to validate values (an Optional also accepts
null, Any accepts anything).
"""

from __future__ import annotations

import ast
from typing import Any

_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_LISTS = {"list", "List", "Sequence", "tuple", "Tuple"}
_DICTS = {"dict", "Dict", "Mapping"}


class AnnotationError(ValueError):
    """An annotation the schema mapping does not support."""


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # typing.Optional, t.List
        return node.attr
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return None


def _is_none(node: ast.expr) -> bool:
    return _name(node) == "None"


def _literal_schema(node: ast.expr) -> dict[str, Any]:
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    values: list[Any] = []
    for elt in elts:
        if not isinstance(elt, ast.Constant) or not isinstance(elt.value, str | int | float | bool):
            raise AnnotationError("Literal[...] takes constant strings, numbers or booleans")
        values.append(elt.value)
    kinds = {type(v) for v in values}
    schema: dict[str, Any] = {}
    if kinds == {str}:
        schema["type"] = "string"
    elif kinds == {bool}:
        schema["type"] = "boolean"
    elif kinds <= {int}:
        schema["type"] = "integer"
    elif kinds <= {int, float}:
        schema["type"] = "number"
    schema["enum"] = values
    return schema


def annotation_schema(node: ast.expr) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """``(model_schema, validation_schema, optional)`` for one annotation; raises AnnotationError."""
    # X | None / None | X
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [p for p in (node.left, node.right) if not _is_none(p)]
        if len(parts) != 1:
            raise AnnotationError("only `X | None` unions are supported")
        model, strict, _ = annotation_schema(parts[0])
        return model, {"anyOf": [strict, {"type": "null"}]}, True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            inner = ast.parse(node.value, mode="eval").body
        except SyntaxError as e:
            raise AnnotationError(f"unparsable string annotation {node.value!r}") from e
        return annotation_schema(inner)
    name = _name(node)
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        arg = node.slice
        if outer == "Optional":
            model, strict, _ = annotation_schema(arg)
            return model, {"anyOf": [strict, {"type": "null"}]}, True
        if outer == "Union":
            elts = arg.elts if isinstance(arg, ast.Tuple) else [arg]
            rest = [e for e in elts if not _is_none(e)]
            if len(rest) != 1 or len(rest) == len(elts):
                raise AnnotationError("only Union[X, None] is supported")
            model, strict, _ = annotation_schema(rest[0])
            return model, {"anyOf": [strict, {"type": "null"}]}, True
        if outer == "Literal":
            schema = _literal_schema(arg)
            return schema, dict(schema), False
        if outer in _LISTS:
            item = arg.elts[0] if isinstance(arg, ast.Tuple) and arg.elts else arg
            model_item, strict_item, _ = annotation_schema(item)
            return {"type": "array", "items": model_item}, {"type": "array", "items": strict_item}, False
        if outer in _DICTS:
            return {"type": "object"}, {"type": "object"}, False
        raise AnnotationError(f"unsupported generic {outer!r}")
    if name in _SCALARS:
        return {"type": _SCALARS[name]}, {"type": _SCALARS[name]}, False
    if name in _LISTS:
        return {"type": "array"}, {"type": "array"}, False
    if name in _DICTS:
        return {"type": "object"}, {"type": "object"}, False
    if name == "Any":
        return {"type": "string"}, {}, False
    raise AnnotationError(f"unsupported type {ast.unparse(node)!r}")
