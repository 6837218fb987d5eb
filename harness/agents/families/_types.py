"""JSON types of values against a schema's ``type``: what the EBNF builder keeps of an enum or a const.

BFCL's documents hold enums whose values are not of the declared type (strings on a ``boolean``, on an
``array``): no value satisfies such a schema, and the builder must not let the enum's values through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.agents.constraint import ConstraintError


class NoValue(ConstraintError):
    """A schema no value satisfies (an optional argument with it is left out of the grammar)."""


_JSON_TYPES: dict[type, tuple[str, ...]] = {
    bool: ("boolean",), int: ("integer", "number"), float: ("number",), str: ("string",), type(None): ("null",),
    list: ("array",), dict: ("object",),
}


def fits_type(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``value`` has one of ``schema``'s types (``nullable`` adds null; no type: any)."""
    kind = schema.get("type")
    if kind is None:
        return True
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if schema.get("nullable"):
        kinds.add("null")
    names = _JSON_TYPES.get(type(value), ())
    if isinstance(value, float) and value.is_integer():
        names = ("integer", "number")
    return bool(kinds & set(names))


__all__ = ["NoValue", "fits_type"]
