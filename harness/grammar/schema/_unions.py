"""When a ``oneOf`` is the union of its branches, and when ``propertyNames`` says nothing.

A grammar spells a union, not "exactly one of": a ``oneOf`` builds only when no value can match two of
its branches, for then "exactly one" and "at least one" are the same set. That is proven two ways:

- by type: each branch's JSON types (by ``type``, ``enum`` or ``const``; ``integer`` counts as a
  ``number``) share none with another branch's;
- by a tag: every branch is an object that requires one property whose ``const`` or ``enum`` values
  share none with another branch's (pydantic's discriminated unions, ``Field(discriminator=...)``, and
  zod's ``z.discriminatedUnion`` write this). A branch that is a ``$ref`` is read at its target, as
  the EBNF builder reads it; a tag spelt as a ``$ref`` (an ``Enum``) too. The ``discriminator``
  keyword itself is an OpenAPI annotation no validator reads: it names the property, and the branches
  must still prove it.

Anything else (branches a value could match together, tags that are not scalars) is not proven, and the
keyword table refuses the ``oneOf`` by name.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from harness.agents import ConstraintError
from harness.grammar.schema._refs import resolve
from harness.grammar.schema._types import declared_types

_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default", "deprecated", "readOnly",
                          "writeOnly"})
_NO_TAG = object()


def _value_types(values: Any) -> set[str]:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null", list: "array",
             dict: "object"}
    return {names.get(type(v), "?") for v in values}


def _branch_types(branch: Any) -> set[str] | None:
    if not isinstance(branch, Mapping):
        return None
    if "const" in branch:
        return _value_types([branch["const"]])
    if isinstance(branch.get("enum"), list):
        return _value_types(branch["enum"])
    kinds = declared_types(branch)
    return kinds | {"number"} if kinds and "integer" in kinds else kinds


def _disjoint_types(branches: list[Any]) -> bool:
    seen: set[str] = set()
    for branch in branches:
        kinds = _branch_types(branch)
        if kinds is None or kinds & seen:
            return False
        seen |= kinds
    return True


def _target(schema: Any, root: Any) -> Any:
    """``schema``, or what its ``$ref`` chain names in ``root`` (None: a pointer that does not resolve,
    or a cycle)."""
    seen: set[str] = set()
    while isinstance(schema, Mapping) and "$ref" in schema:
        pointer = schema["$ref"]
        if not isinstance(pointer, str) or pointer in seen or root is None:
            return None
        seen.add(pointer)
        try:
            schema = resolve(root, pointer)
        except ConstraintError:
            return None
    return schema


def _tag(value: Any) -> Hashable:
    """A scalar JSON value as JSON compares it (``1`` equals ``1.0``, ``true`` is no number); a
    container is no tag (``_NO_TAG``: its equality is not worth proving here)."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null",)
    return _NO_TAG


def _tags(schema: Any, root: Any) -> set[Hashable] | None:
    """The values a tag property allows (its ``const`` or ``enum``); None when it is not such a tag."""
    schema = _target(schema, root)
    if not isinstance(schema, Mapping):
        return None
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if not isinstance(values, list) or not values:
        return None
    tags = {_tag(v) for v in values}
    return None if _NO_TAG in tags else tags


def discriminator(branches: Any, root: Any = None) -> str | None:
    """The property that tells ``branches`` apart (see the module doc), None when none does."""
    objects = [_target(b, root) for b in branches] if isinstance(branches, list) else []
    if len(objects) < 2 or not all(isinstance(o, Mapping) and declared_types(o) == {"object"} for o in objects):
        return None
    required = [{r for r in o.get("required") or () if isinstance(r, str)} for o in objects]
    for name in sorted(set.intersection(*required)):
        seen: set[Hashable] = set()
        for branch in objects:
            props = branch.get("properties")
            tags = _tags(props.get(name), root) if isinstance(props, Mapping) else None
            if tags is None or tags & seen:
                break
            seen |= tags
        else:
            return name
    return None


def disjoint(branches: Any, root: Any = None) -> bool:
    """Whether no value can match two of ``branches`` (by type, or by a tag property; ``$ref`` pointers
    read in ``root``, the tool's parameters)."""
    listed = branches if isinstance(branches, list) else []
    return _disjoint_types(listed) or discriminator(listed, root) is not None


def noop_property_names(schema: Any) -> bool:
    """Whether a ``propertyNames`` schema holds for every object key (JSON keys are strings): ``true``,
    ``{}``, or a ``type`` that allows strings with nothing else but annotations."""
    if schema is True:
        return True
    if not isinstance(schema, Mapping) or set(schema) - _ANNOTATIONS - {"type"}:
        return False
    kinds = declared_types(schema)
    return "type" not in schema or (kinds is not None and "string" in kinds)


__all__ = ["discriminator", "disjoint", "noop_property_names"]
