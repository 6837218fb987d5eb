"""Argument validation with jsonschema, with messages that name the input: the one check of a tool
call's arguments, used by the sandbox before a call runs, by scoring (``validity``) and by suite
validation (``harness validate``), so the three never disagree (``argument_check``, ``argument_errors``).

jsonschema is the authority: every refusal and every message is its own. In front of it, a quick
accept for the schemas the ``.pym`` annotations produce (types, enums, ``X | None``, flat objects of
those): a value it accepts is valid, anything else goes to jsonschema. It is stricter than jsonschema
(``1.0`` is no integer to it, an enum matches by type as well as by value), never looser: a test
checks this on generated values. It exists because jsonschema's check was the largest host cost of
a sandboxed call (~15 us of ~0.1 ms, and a call validates the arguments and each hidden input).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

Accept = Callable[[Any], bool]

_TYPES: dict[str, Accept] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float) and v == v and v not in (float("inf"), float("-inf")),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}
UNCHECKABLE = ("the schema cannot check any value: its `$ref`s refer to each other without end "
               "(past Python's recursion limit)")
_PLAIN_KEYWORDS = frozenset({"type", "enum", "description", "default"})


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """A compiled schema: jsonschema's validator, and the quick accept when the schema has one."""

    validator: Draft202012Validator
    accept: Accept | None = None

    def is_valid(self, value: Any) -> bool:
        if self.accept is not None and self.accept(value):
            return True
        try:
            return bool(self.validator.is_valid(value))
        except RecursionError:  # a ``$ref`` cycle that never reaches a value: nothing passes it
            return False


def compile_validator(schema: dict[str, Any]) -> SchemaCheck:
    """A reusable check (compile once per tool, validate every call)."""
    return SchemaCheck(Draft202012Validator(schema), quick_accept(schema))


def closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with an object closed to properties it does not declare (the sandbox refuses an
    undeclared argument, so no check may accept one)."""
    out = dict(schema)
    if out.get("type", "object") == "object":
        out.setdefault("additionalProperties", False)
    return out


def argument_check(parameters: Mapping[str, Any]) -> SchemaCheck:
    """The check of a tool's arguments against its ``parameters`` schema (closed, see ``closed``);
    compile once per tool."""
    return compile_validator(closed(parameters))


def argument_errors(check: SchemaCheck, arguments: Any) -> list[ValidationError]:
    """Every problem of ``arguments``, unknown arguments first, then missing ones, then wrong values
    (in argument order); [] when they are valid."""
    if check.accept is not None and check.accept(arguments):
        return []
    try:
        return sorted(check.validator.iter_errors(arguments), key=_order)
    except RecursionError:  # jsonschema follows a ``$ref`` cycle without end: the schema's fault, named
        return [ValidationError(UNCHECKABLE, validator="$ref", validator_value=None, instance=arguments)]


def quick_accept(schema: Any) -> Accept | None:
    """A predicate that accepts only values ``schema`` accepts, or None for a schema it does not cover."""
    if not isinstance(schema, dict):
        return None
    if set(schema) <= {"anyOf"} and isinstance(schema.get("anyOf"), list):
        parts = [quick_accept(part) for part in schema["anyOf"]]
        if not parts or any(p is None for p in parts):
            return None
        checks = [p for p in parts if p is not None]
        return lambda v: any(check(v) for check in checks)
    if schema.get("type") == "object" and set(schema) - _PLAIN_KEYWORDS:
        return _object_accept(schema)
    if not set(schema) <= _PLAIN_KEYWORDS or not isinstance(schema.get("type"), str | None):
        return None
    kind = _TYPES.get(schema["type"]) if "type" in schema else (lambda v: True)
    if kind is None:
        return None
    if "enum" in schema:
        allowed = list(schema["enum"])
        return lambda v: kind(v) and any(type(v) is type(a) and v == a for a in allowed)
    return kind


def _object_accept(schema: dict[str, Any]) -> Accept | None:
    if not set(schema) <= _PLAIN_KEYWORDS | {"properties", "required", "additionalProperties"}:
        return None
    if "enum" in schema or schema.get("additionalProperties", True) not in (True, False):
        return None
    properties = schema.get("properties", {})
    checks = {name: quick_accept(sub) for name, sub in properties.items()}
    if any(check is None for check in checks.values()):
        return None
    required = list(schema.get("required", []))
    closed = schema.get("additionalProperties") is False

    def accept(value: Any) -> bool:
        if type(value) is not dict or any(name not in value for name in required):
            return False
        for name, item in value.items():
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(item):
                return False
        return True

    return accept


def describe(error: ValidationError) -> tuple[str, str | None]:
    """``(message, input_name)`` for the first problem of an arguments object."""
    if error.validator == "required" and not error.path:
        missing = error.message.split("'")[1] if "'" in error.message else None
        return f"missing required argument {missing!r}", missing
    if error.validator == "additionalProperties" and not error.path:
        instance: Any = error.instance
        schema: Any = error.schema
        extra = sorted(set(instance) - set(schema.get("properties", {})))
        name = extra[0] if extra else None
        return f"unknown argument {name!r}", name
    if error.path:
        name = str(error.path[0])
        return f"argument {name!r}: {_value_message(error)}", name
    return error.message, None


def _value_message(error: ValidationError) -> str:
    expected: Any = error.validator_value
    if error.validator == "enum":
        allowed = ", ".join(repr(v) for v in expected)
        return f"must be one of {allowed}, got {error.instance!r}"
    if error.validator == "type":
        return (
            f"must be of type {error.validator_value}, got {type(error.instance).__name__} {error.instance!r}"
        )
    if error.validator == "anyOf":
        types = [s.get("type") for s in expected if isinstance(s, dict) and s.get("type")]
        return f"must be of type {' or '.join(map(str, types))}, got {type(error.instance).__name__} {error.instance!r}"
    return error.message


def first_problem(check: SchemaCheck, value: Any) -> tuple[str, str | None] | None:
    """The first problem of ``value`` as ``(message, input_name)``, or None when it is valid."""
    errors = argument_errors(check, value)
    return describe(errors[0]) if errors else None


def _order(error: ValidationError) -> tuple[int, str]:
    # report an unknown or missing argument before a wrong-typed one, deterministically
    rank = {"additionalProperties": 0, "required": 1}.get(str(error.validator), 2)
    return rank, str(list(error.path))


def first_error(schema: dict[str, Any], value: Any) -> str | None:
    """Why a single value does not match ``schema`` (``"must be of type integer, got str 'x'"``), or None."""
    return first_error_of(compile_validator(schema), value)


def first_error_of(check: SchemaCheck, value: Any) -> str | None:
    """As ``first_error``, with a compiled check."""
    if check.accept is not None and check.accept(value):
        return None
    error = next(iter(check.validator.iter_errors(value)), None)
    return None if error is None else _value_message(error)


__all__ = [
    "SchemaCheck",
    "argument_check",
    "argument_errors",
    "closed",
    "compile_validator",
    "describe",
    "first_error",
    "first_error_of",
    "first_problem",
    "quick_accept",
]
