"""Argument validation with jsonschema, with messages that name the input."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError


def compile_validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A reusable validator (compile once per tool, validate every call)."""
    return Draft202012Validator(schema)


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


def first_problem(validator: Draft202012Validator, value: Any) -> tuple[str, str | None] | None:
    """The first problem of ``value`` as ``(message, input_name)``, or None when it is valid."""
    error = next(iter(sorted(validator.iter_errors(value), key=_order)), None)
    return None if error is None else describe(error)


def _order(error: ValidationError) -> tuple[int, str]:
    # report an unknown or missing argument before a wrong-typed one, deterministically
    rank = {"additionalProperties": 0, "required": 1}.get(str(error.validator), 2)
    return rank, str(list(error.path))


def first_error(schema: dict[str, Any], value: Any) -> str | None:
    """Why a single value does not match ``schema`` (``"must be of type integer, got str 'x'"``), or None."""
    return first_error_of(Draft202012Validator(schema), value)


def first_error_of(validator: Draft202012Validator, value: Any) -> str | None:
    """As ``first_error``, with a compiled validator."""
    error = next(iter(validator.iter_errors(value)), None)
    return None if error is None else _value_message(error)
